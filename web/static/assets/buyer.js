// The buyer's page: log in by code, a shop's vouchers with a countdown to
// their window, live stock and a buy button, and the buyer's orders (an
// async-mode order shows pending until a consumer writes it, then created).
import { api, ApiError, serverNow, tokens } from './api.js';
import { h, setText, field, money, duration, localTime, message } from './dom.js';

const STOCK_POLL_MS = 2000;
const ORDER_POLL_MS = 1000;

export function buyer(root) {
  const timers = [];
  const every = (ms, f) => timers.push(setInterval(f, ms));
  let vouchers = new Map(); // id -> voucher of the list
  let me = null;

  const status = h('p', { id: 'buyer-status', class: 'muted' });
  const result = h('p', { id: 'buy-result', class: 'message', hidden: true });

  // ---- log in by code
  const loginCard = h('section', { class: 'card', id: 'login-card' });
  function renderLogin() {
    const devCode = h('span', { id: 'dev-code', class: 'muted' });
    const out = h('p', { class: 'message', hidden: true });
    const form = h('form', { id: 'login-form', autocomplete: 'off' },
      h('label', {}, 'Phone ', h('input', { id: 'phone', name: 'phone', inputmode: 'numeric', placeholder: '13812345678', required: true })),
      h('button', { id: 'send-code', type: 'button', onclick: sendCode }, 'Send code'),
      h('label', {}, 'Code ', h('input', { id: 'code', name: 'code', inputmode: 'numeric', size: 8, required: true })),
      h('button', { id: 'login', type: 'submit' }, 'Log in'),
      devCode, out);
    async function sendCode() {
      try {
        const env = await api('POST', '/user/code?phone=' + encodeURIComponent(field(form, 'phone')));
        if (env.data) {
          // Development only: the server returns the code.
          form.elements.namedItem('code').value = env.data;
          setText(devCode, 'development: the code is ' + env.data);
        } else {
          setText(devCode, 'code sent (see the server log)');
        }
        out.hidden = true;
      } catch (e) {
        show(out, e);
      }
    }
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      try {
        const env = await api('POST', '/user/login', { body: { phone: field(form, 'phone'), code: field(form, 'code') } });
        tokens.setUser(env.data);
        await loadMe();
      } catch (e) {
        show(out, e);
      }
    });
    loginCard.replaceChildren(h('h2', {}, 'Log in'), form);
  }

  async function loadMe() {
    const token = tokens.user();
    if (!token) {
      me = null;
      renderLogin();
      renderAll();
      renderOrders(null);
      return;
    }
    try {
      me = (await api('GET', '/user/me', { token })).data;
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) {
        tokens.setUser('');
        me = null;
        renderLogin();
        renderAll();
        renderOrders(null);
        return;
      }
      setText(status, e.message);
      return;
    }
    loginCard.replaceChildren(
      h('p', {}, 'Logged in as ', h('strong', { id: 'me' }, me.nickName), ` (user ${me.id}) `,
        h('button', { id: 'logout', type: 'button', onclick: () => { tokens.setUser(''); loadMe(); } }, 'Log out')));
    renderAll();
    loadOrders();
  }

  // ---- the shop and its vouchers
  let shopId = Number(localStorage.getItem('seckill.shop') || 1) || 1;
  const shopName = h('span', { id: 'shop-name' });
  const list = h('div', { id: 'vouchers', class: 'vouchers' });
  const shopForm = h('form', { id: 'shop-form', class: 'inline' },
    h('label', {}, 'Shop ', h('input', { id: 'shop-id', name: 'shop', type: 'number', min: 1, value: String(shopId), required: true })),
    h('button', { type: 'submit' }, 'Open'));
  shopForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const n = Number(field(shopForm, 'shop'));
    if (!Number.isInteger(n) || n < 1) return;
    shopId = n;
    localStorage.setItem('seckill.shop', String(n));
    vouchers = new Map();
    list.replaceChildren();
    loadShop();
    loadVouchers();
  });

  async function loadShop() {
    try {
      const shop = (await api('GET', '/shop/' + shopId)).data;
      setText(shopName, shop.name + (shop.address ? ' · ' + shop.address : ''));
    } catch {
      setText(shopName, 'shop ' + shopId);
    }
  }

  async function loadVouchers() {
    if (document.hidden) return;
    try {
      const env = await api('GET', '/voucher/list/' + shopId);
      const next = new Map();
      for (const v of env.data || []) next.set(String(v.id), v);
      vouchers = next;
      setText(status, next.size ? '' : 'No voucher in this shop yet: an admin publishes one (Admin).');
      renderAll();
    } catch (e) {
      setText(status, 'vouchers: ' + e.message);
    }
  }

  function card(v) {
    const el = h('article', { class: 'voucher', 'data-voucher': v.id },
      h('h3', {}, v.title),
      v.subTitle ? h('p', { class: 'muted' }, v.subTitle) : '',
      h('p', {}, 'Pay ', h('strong', {}, money(v.payValue)), ', worth ', money(v.actualValue)),
      v.rules ? h('p', { class: 'muted small' }, v.rules) : '',
      h('div', { class: 'bar' }, h('div', { class: 'fill' })),
      h('p', {}, h('span', { class: 'stock' }), ' ', h('span', { class: 'countdown' })),
      h('button', { class: 'buy', type: 'button', onclick: () => buy(v.id) }, 'Buy'));
    return el;
  }

  function renderAll() {
    for (const el of list.querySelectorAll('[data-voucher]')) {
      if (!vouchers.has(el.dataset.voucher)) el.remove();
    }
    for (const [id, v] of vouchers) {
      let el = list.querySelector(`[data-voucher="${id}"]`);
      if (!el) {
        el = card(v);
        list.append(el);
      }
      el.querySelector('.fill').style.width = (v.initialStock ? (100 * v.stock) / v.initialStock : 0) + '%';
      setText(el.querySelector('.stock'), `Stock ${v.stock} / ${v.initialStock}`);
    }
    tick();
  }

  // tick updates countdowns and buttons against the server's clock.
  function tick() {
    const now = serverNow();
    for (const [id, v] of vouchers) {
      const el = list.querySelector(`[data-voucher="${id}"]`);
      if (!el) continue;
      const begin = Date.parse(v.beginTime);
      const end = Date.parse(v.endTime);
      const cd = el.querySelector('.countdown');
      const btn = el.querySelector('.buy');
      let open = false;
      if (now < begin) {
        setText(cd, 'starts in ' + duration(begin - now));
        el.dataset.phase = 'before';
      } else if (now < end) {
        setText(cd, 'ends in ' + duration(end - now));
        el.dataset.phase = 'open';
        open = true;
      } else {
        setText(cd, 'ended ' + localTime(v.endTime));
        el.dataset.phase = 'ended';
      }
      btn.disabled = !me || !open || v.stock <= 0;
      setText(btn, !me ? 'Log in to buy' : v.stock <= 0 && open ? 'Sold out' : 'Buy');
    }
  }

  // ---- buy
  async function buy(voucherId) {
    const token = tokens.user();
    try {
      const env = await api('POST', '/voucher-order/seckill/' + voucherId, { token });
      track(env.data);
      message(result, 'ok', `Order ${env.data} placed.`);
      result.dataset.order = env.data;
      loadOrders();
    } catch (e) {
      show(result, e);
      if (e instanceof ApiError && e.status === 401) {
        tokens.setUser('');
        loadMe();
      }
    }
    loadVouchers();
  }

  // ---- my orders: the database's list, plus the orders this tab bought
  // that are not in it yet (async mode: pending until written).
  const ordersBody = h('tbody', { id: 'orders' });
  const ordersTable = h('table', { class: 'orders' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Order'), h('th', {}, 'Voucher'), h('th', {}, 'Status'), h('th', {}, 'Created'))),
    ordersBody);
  const trackedKey = () => 'seckill.orders.' + (me ? me.id : 0);
  const tracked = () => JSON.parse(sessionStorage.getItem(trackedKey()) || '[]');
  function track(id) {
    const ids = tracked();
    if (!ids.includes(id)) ids.push(id);
    sessionStorage.setItem(trackedKey(), JSON.stringify(ids.slice(-50)));
  }
  let loadingOrders = false;
  async function loadOrders() {
    const token = tokens.user();
    if (!me || !token || loadingOrders) return;
    loadingOrders = true;
    try {
      const env = await api('GET', '/user/orders', { token });
      const orders = env.data || [];
      const known = new Set(orders.map((o) => o.id));
      const extra = [];
      const keep = [];
      for (const id of tracked()) {
        if (known.has(id)) continue;
        try {
          const o = (await api('GET', '/voucher-order/' + id, { token })).data;
          extra.push(o);
          if (o.status === 'pending') keep.push(id);
        } catch {
          // gone (failed orders are kept by the server for a day)
        }
      }
      sessionStorage.setItem(trackedKey(), JSON.stringify(keep));
      renderOrders([...extra, ...orders]);
    } catch (e) {
      setText(status, 'orders: ' + e.message);
    } finally {
      loadingOrders = false;
    }
  }
  function renderOrders(orders) {
    if (!orders) {
      ordersBody.replaceChildren(h('tr', {}, h('td', { colspan: 4, class: 'muted' }, 'Log in to see your orders.')));
      return;
    }
    ordersBody.replaceChildren(...orders.map((o) => {
      const v = vouchers.get(String(o.voucherId));
      return h('tr', { 'data-order': o.id, 'data-status': o.status },
        h('td', {}, h('code', {}, o.id)),
        h('td', {}, v ? v.title : '#' + o.voucherId),
        h('td', {}, h('span', { class: 'status ' + o.status }, o.status)),
        h('td', {}, localTime(o.createTime)));
    }));
    if (!orders.length) ordersBody.append(h('tr', {}, h('td', { colspan: 4, class: 'muted' }, 'No order yet.')));
  }

  root.append(
    loginCard,
    h('section', { class: 'card' }, h('h2', {}, 'Vouchers ', h('small', {}, shopName)), shopForm, status, result, list),
    h('section', { class: 'card' }, h('h2', {}, 'My orders'), ordersTable));

  renderLogin();
  loadMe();
  loadShop();
  loadVouchers();
  every(250, tick);
  every(STOCK_POLL_MS, loadVouchers);
  every(ORDER_POLL_MS, () => {
    if (tracked().length) loadOrders();
  });
  return { unmount: () => timers.forEach(clearInterval) };
}

function show(el, e) {
  if (e instanceof ApiError) {
    message(el, e.status >= 500 || e.status === 0 ? 'error' : 'refused', e.message, e.code);
  } else {
    message(el, 'error', String(e));
  }
}
