// The buyer's page. The buyer logs in by code and picks a shop. Its
// vouchers show a countdown to their window, live stock and a buy button
// that knows what the buyer already owns. The buyer's orders follow. An
// async-mode order shows pending until a consumer writes it, then created.
// An unpaid order shows the time left to pay, with Pay and Cancel. With a
// real pay provider, Pay shows the trade's QR code and the order turns
// paid by itself once the provider's notification arrives (the click does
// not pay). A cancelled or expired order puts its unit back on sale, as
// the card's stock shows. A paid, unused order offers Refund, asked once
// more before it is sent; the order then shows refunding, and refunded by
// itself when the provider confirmed the money back.
import { api, ApiError, explain, serverNow, tokens } from './api.js';
import { h, setText, field, money, duration, localTime, message, shortId, scroll, labelled } from './dom.js';
import { queuePanel } from './room.js';
import { loginForm, showError } from './login.js';
import { statusWords, orderAfterPay, codeKeeper, paidWith, PROVIDER_NAMES, REFUND_REFUSALS } from './redemption.js';

const STOCK_POLL_MS = 2000;
const ORDER_POLL_MS = 1000;
// WATCH_POLL_MS is how often the order of #/order/<id> is read again while
// it is paid and the page is in view: the buyer at the counter sees it
// turn used.
const WATCH_POLL_MS = 5000;
// REFUND_POLL_MS is how often the orders are read while one is refunding
// and the page is in view: the row turns refunded by itself.
const REFUND_POLL_MS = 2000;
// CONFIRM_ARM_MS is how long "Yes, refund" stays disabled after Refund
// was pressed: a double tap on a phone cannot confirm its own question.
const CONFIRM_ARM_MS = 700;
export function buyer(root) {
  const timers = [];
  const every = (ms, f) => timers.push(setInterval(f, ms));
  let vouchers = new Map(); // id -> voucher of the list
  let me = null;
  let owned = new Map(); // voucher id -> the buyer's order of it
  const titles = new Map(); // voucher id -> title, for orders of other shops
  const prices = new Map(); // voucher id -> pay value in fen, for the Pay button
  // The pay providers the server offers (GET /pay/providers), and the
  // trades whose QR code is shown: order id -> the pay call's answer.
  let payWith = { providers: [], simulated: true };
  const paying = new Map();
  // Refunds being asked: order id -> {asked (when Refund was pressed),
  // busy (the request runs)}.
  const refunds = new Map();
  const rowSigs = new WeakMap(); // a row of the table -> rowSig of what it shows

  const status = h('p', { id: 'buyer-status', class: 'muted' });
  const result = h('p', { id: 'buy-result', class: 'message', hidden: true });

  // ---- log in by code
  const loginCard = h('section', { class: 'card', id: 'login-card' });
  let loginNote = ''; // why the buyer sees the login form again
  function renderLogin() {
    const form = loginForm({ timers, onLogin: () => { loginNote = ''; return loadMe(); } });
    loginCard.replaceChildren(h('h2', {}, 'Log in'),
      loginNote ? h('p', { id: 'login-note', class: 'message refused' }, loginNote) : '', form);
  }

  // loggedOut shows the login form again, saying why.
  function loggedOut(note) {
    tokens.setUser('');
    me = null;
    owned = new Map();
    loginNote = note;
    renderLogin();
    renderAll();
    renderOrders(null);
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
        loggedOut('Your login has ended (expired or signed out elsewhere): log in again.');
        return;
      }
      setText(status, explain(e));
      return;
    }
    loginCard.replaceChildren(
      h('p', {}, 'Logged in as ', h('strong', { id: 'me' }, me.nickName), ` (user ${me.id}) `,
        h('button', { id: 'logout', type: 'button', onclick: () => { tokens.setUser(''); loginNote = ''; loadMe(); } }, 'Log out')));
    renderAll();
    loadOrders();
  }

  // ---- the shop: search by name, pick one
  let shopId = Number(localStorage.getItem('seckill.shop') || 1) || 1;
  const shopName = h('span', { id: 'shop-name' });
  const list = h('div', { id: 'vouchers', class: 'vouchers' });
  const shopList = h('ul', { id: 'shop-list', class: 'shops' });
  const shopForm = h('form', { id: 'shop-form', class: 'inline', role: 'search' },
    // The example is part of the demo shop's name (秒杀示范店, seeded in
    // development): any part of a name finds its shop.
    h('label', {}, 'Find a shop ', h('input', { id: 'shop-search', name: 'name', type: 'search', placeholder: 'part of a name, e.g. 示范', size: 22 })),
    h('button', { type: 'submit' }, 'Search'));
  shopForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    searchShops(field(shopForm, 'name'));
  });
  let searches = 0; // an older search's answer never replaces a newer one's
  async function searchShops(name) {
    const n = ++searches;
    try {
      const env = await api('GET', '/shop/list?name=' + encodeURIComponent(name));
      if (n !== searches) return;
      const shops = env.data || [];
      shopList.replaceChildren(...shops.map((s) => h('li', {},
        h('button', { type: 'button', class: 'link' + (s.id === shopId ? ' current' : ''), 'data-shop': s.id, onclick: () => pickShop(s.id) },
          s.name), ' ', h('span', { class: 'muted small' }, s.address))));
      if (!shops.length) {
        shopList.replaceChildren(h('li', { class: 'muted', id: 'shop-none' }, name ? `No shop has “${name}” in its name.` : 'No shop yet: an admin creates one (Admin).'));
        // The vouchers shown were of the shop picked before: not an
        // answer to this search.
        if (name) clearShop(`Search again, or clear the search to see every shop.`);
      }
    } catch (e) {
      if (n !== searches) return;
      shopList.replaceChildren(h('li', { class: 'message error' }, explain(e)));
    }
  }
  // clearShop shows no shop's vouchers until one is picked.
  function clearShop(note) {
    shopId = 0;
    vouchers = new Map();
    list.replaceChildren();
    setText(shopName, '');
    setText(status, note);
    for (const b of shopList.querySelectorAll('[data-shop]')) b.classList.remove('current');
  }
  function pickShop(n) {
    shopId = n;
    localStorage.setItem('seckill.shop', String(n));
    vouchers = new Map();
    list.replaceChildren();
    for (const b of shopList.querySelectorAll('[data-shop]')) b.classList.toggle('current', Number(b.dataset.shop) === n);
    loadShop();
    loadVouchers();
  }

  let shopMissing = false;
  async function loadShop() {
    if (!shopId) return;
    const asked = shopId;
    try {
      const shop = (await api('GET', '/shop/' + asked)).data;
      if (asked !== shopId) return;
      shopMissing = false;
      setText(shopName, shop.name + (shop.address ? ' · ' + shop.address : ''));
    } catch (e) {
      if (asked !== shopId) return;
      shopMissing = e instanceof ApiError && e.code === 'SHOP_NOT_FOUND';
      setText(shopName, shopMissing ? '' : 'shop ' + shopId);
    }
  }

  async function loadVouchers() {
    if (document.hidden || !shopId) return;
    const asked = shopId;
    try {
      const env = await api('GET', '/voucher/list/' + asked);
      if (asked !== shopId) return; // another shop was picked meanwhile
      const next = new Map();
      for (const v of env.data || []) {
        // A closed voucher stays only on the card of its buyer.
        if (v.status === 2 && !owned.has(String(v.id))) continue;
        next.set(String(v.id), v);
        titles.set(String(v.id), v.title);
        prices.set(String(v.id), v.payValue);
      }
      vouchers = next;
      setText(status, next.size ? '' : 'No voucher in this shop yet: an admin publishes one (Admin).');
      renderAll();
    } catch (e) {
      if (asked !== shopId) return;
      if (e instanceof ApiError && e.code === 'SHOP_NOT_FOUND') {
        vouchers = new Map();
        renderAll();
        setText(status, `Shop ${shopId} does not exist: pick one from the list above.`);
        return;
      }
      setText(status, 'Vouchers: ' + explain(e));
    }
  }

  function card(v) {
    return h('article', { class: 'voucher', 'data-voucher': v.id },
      h('h3', {}, v.title),
      v.subTitle ? h('p', { class: 'muted' }, v.subTitle) : '',
      h('p', {}, 'Pay ', h('strong', {}, money(v.payValue)), ', worth ', money(v.actualValue)),
      v.rules ? h('p', { class: 'muted small' }, v.rules) : '',
      h('div', { class: 'bar' }, h('div', { class: 'fill' })),
      // Two facts, two lines: what is left, and when the sale starts or ends.
      h('p', { class: 'stock-line' }, h('span', { class: 'stock' })),
      h('p', { class: 'when' }, h('span', { class: 'countdown' })),
      h('button', { class: 'buy', type: 'button', onclick: () => buy(v.id), hidden: !!v.waitingRoom }, 'Buy'),
      h('p', { class: 'mine small', hidden: true }),
      h('p', { class: 'why small muted', hidden: true }),
      h('p', { class: 'card-msg message', hidden: true }));
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
      // A voucher with a waiting room is bought through its queue panel.
      const roomEl = el.querySelector('.room');
      if (v.waitingRoom && me && !roomEl) el.querySelector('.buy').after(queuePanel(v.id, tokens.user(), (admission) => buy(v.id, admission)).el);
      if (roomEl && !me) roomEl.remove();
      el.querySelector('.fill').style.width = (v.initialStock ? (100 * v.stock) / v.initialStock : 0) + '%';
      setText(el.querySelector('.stock'), `Stock ${v.stock} / ${v.initialStock}`);
      const mine = el.querySelector('.mine');
      const o = owned.get(id);
      if (o) {
        mine.replaceChildren('Your order ', h('a', { href: orderHref(o.id), 'data-order-link': o.id }, shortId(o.id)), ' · ', statusWords(o));
        mine.hidden = false;
      } else {
        mine.hidden = true;
      }
      // One order per person, cancelled and expired ones included: say so.
      const why = el.querySelector('.why');
      setText(why, o && ENDED.has(o.status) ? `You cannot buy this voucher again: each person gets one order of it, and your ${o.status} order counts.` : '');
      why.hidden = !(o && ENDED.has(o.status));
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
      if (v.status === 2) {
        setText(cd, 'Closed by the shop');
        el.dataset.phase = 'ended';
      } else if (now < begin) {
        setText(cd, 'Sale starts in ' + duration(begin - now));
        el.dataset.phase = 'before';
      } else if (now < end) {
        setText(cd, 'Sale ends in ' + duration(end - now));
        el.dataset.phase = 'open';
        open = true;
      } else {
        setText(cd, 'Sale ended ' + localTime(v.endTime));
        el.dataset.phase = 'ended';
      }
      const bought = owned.has(id);
      // One order per buyer: a cancelled or expired one keeps the slot.
      const gone = bought && ENDED.has(owned.get(id).status);
      btn.disabled = !me || bought || !open || v.stock <= 0;
      btn.classList.toggle('bought', bought && !gone);
      setText(btn, !me ? 'Log in to buy' : gone ? 'Your order ' + owned.get(id).status : bought ? 'Bought ✓' : v.stock <= 0 && open ? 'Sold out'
        : el.dataset.phase === 'before' ? 'Not on sale yet' : el.dataset.phase === 'ended' ? 'Sale ended' : 'Buy');
    }
    // The time left to pay each unpaid order.
    for (const left of ordersBody.querySelectorAll('[data-deadline]')) {
      const ms = Date.parse(left.dataset.deadline) - now;
      setText(left, ms > 0 ? duration(ms) + ' left to pay' : 'pay time over');
      if (ms <= 0) overdue = true;
    }
  }

  // ---- buy
  async function buy(voucherId, admission) {
    const token = tokens.user();
    const id = String(voucherId);
    const el = list.querySelector(`[data-voucher="${id}"]`);
    const cardMsg = el && el.querySelector('.card-msg');
    const title = (vouchers.get(id) || {}).title || 'voucher ' + id;
    try {
      const headers = admission ? { 'Admission-Token': admission } : {};
      const env = await api('POST', '/voucher-order/seckill/' + voucherId, { token, headers });
      track(env.data);
      owned.set(id, { id: env.data, voucherId: Number(voucherId), status: 'pending' });
      message(result, 'ok', `Order placed: you bought “${title}” (order ${env.data}). `);
      result.append(h('a', { href: orderHref(env.data), 'data-order-link': env.data }, 'See the order'));
      result.dataset.order = env.data;
      if (cardMsg) cardMsg.hidden = true;
      renderAll();
      loadOrders();
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) {
        loggedOut('Your login has ended (expired or signed out elsewhere): log in again to buy.');
        return;
      }
      if (cardMsg) showError(cardMsg, e);
      showError(result, e, `“${title}”: `);
      if (e instanceof ApiError && e.code === 'DUPLICATE_ORDER') loadOrders();
    }
    loadVouchers();
  }

  // ---- my orders: the database's list, plus the orders this tab bought
  // that are not in it yet (async mode: pending until written).
  const ordersBody = h('tbody', { id: 'orders' });
  const ordersTable = h('table', { class: 'orders cards' },
    h('thead', {}, h('tr', {}, ORDER_COLUMNS.map((t) => h('th', {}, t)))),
    ordersBody);
  const trackedKey = () => 'seckill.orders.' + (me ? me.id : 0);
  const tracked = () => JSON.parse(sessionStorage.getItem(trackedKey()) || '[]');
  function track(id) {
    const ids = tracked();
    if (!ids.includes(id)) ids.push(id);
    sessionStorage.setItem(trackedKey(), JSON.stringify(ids.slice(-50)));
  }
  let loadingOrders = false;
  let shown = []; // the orders in the table
  let overdue = false; // an unpaid order's time to pay is over: reload
  const rowMsgs = new Map(); // order id -> the answer of its last Pay or Cancel
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
      const all = [...extra, ...orders];
      await withCodes(all, token);
      paidByProvider(all);
      owned = new Map();
      for (const o of all) if (o.status !== 'failed') owned.set(String(o.voucherId), o);
      await loadTitles(all);
      overdue = false;
      for (const o of all) {
        const m = rowMsgs.get(o.id);
        if (m && m.while && m.while !== o.status) rowMsgs.delete(o.id);
        if (o.status !== 'paid' && !(refunds.get(o.id) || {}).busy) refunds.delete(o.id);
      }
      renderOrders(all);
      renderAll();
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) {
        loggedOut('Your login has ended (expired or signed out elsewhere): log in again.');
        return;
      }
      setText(status, 'Orders: ' + explain(e));
    } finally {
      loadingOrders = false;
    }
  }
  // withCodes gives each paid order its redemption code (redemption.js).
  const withCodes = codeKeeper();
  // loadTitles reads the title of vouchers of other shops, once each.
  async function loadTitles(orders) {
    for (const o of orders) {
      const id = String(o.voucherId);
      if (titles.has(id)) continue;
      try {
        const v = (await api('GET', '/voucher/seckill/' + id)).data;
        titles.set(id, v.title);
        prices.set(id, v.payValue);
      } catch {
        titles.set(id, 'voucher ' + id);
      }
    }
  }
  // rowSig is what an order's row shows, as one string.
  function rowSig(o) {
    const v = String(o.voucherId);
    return JSON.stringify([o, titles.get(v), prices.get(v), rowMsgs.get(o.id) || null, paying.get(o.id) || null,
      refunds.get(o.id) || null, payWith]);
  }
  function orderRow(o) {
    return labelled(h('tr', { 'data-order': o.id, 'data-status': o.status, id: 'order-' + o.id },
      h('td', {}, shortId(o.id)),
      h('td', {}, titles.get(String(o.voucherId)) || 'voucher ' + o.voucherId),
      h('td', { class: 'order-state' }, h('span', { class: 'status ' + o.status }, statusWords(o)), orderActions(o)),
      h('td', { class: 'small' }, localTime(o.createTime))), ORDER_COLUMNS);
  }
  // renderOrders shows the orders. A row is rebuilt only when what it
  // shows changed, and rows in place stay in place: a rebuild under the
  // buyer's finger would swallow the click (the list is read every second
  // while an order is pending, unpaid past its time or refunding).
  function renderOrders(orders) {
    if (!orders) {
      shown = [];
      ordersBody.replaceChildren(h('tr', {}, h('td', { colspan: 4, class: 'muted' }, 'Log in to see your orders.')));
      return;
    }
    shown = orders;
    const old = new Map([...ordersBody.querySelectorAll('tr[data-order]')].map((r) => [r.dataset.order, r]));
    const rows = orders.map((o) => {
      const sig = rowSig(o);
      const r = old.get(o.id);
      if (r && rowSigs.get(r) === sig) return r;
      const tr = orderRow(o);
      rowSigs.set(tr, sig);
      return tr;
    });
    const now = [...ordersBody.children];
    if (rows.length && now.length === rows.length && now.every((r, i) => r.dataset.order === rows[i].dataset.order)) {
      now.forEach((r, i) => { if (r !== rows[i]) r.replaceWith(rows[i]); });
    } else {
      ordersBody.replaceChildren(...rows);
    }
    // The "Order placed" banner goes with its order: once it is cancelled
    // or expired, it no longer says the buyer bought it.
    const placed = orders.find((o) => o.id === result.dataset.order);
    if (placed && ENDED.has(placed.status)) {
      result.hidden = true;
      delete result.dataset.order;
    }
    if (!orders.length) ordersBody.replaceChildren(h('tr', {}, h('td', { colspan: 4, class: 'muted' }, 'No order yet.')));
    ordersLoaded = true;
    markFocus();
    tick();
  }

  // ---- #/order/<id>: the page stays; the order's row is scrolled to and
  // highlighted. Back (#/) takes the highlight off and returns to where the
  // buyer was.
  let focused = null; // the order id of #/order/<id>, or null
  let scrolledTo = null; // the order the page last scrolled to
  let ordersLoaded = false;
  let returnY = null; // where the buyer was when the order was shown
  const focusNote = h('p', { id: 'order-focus-note', class: 'message refused', hidden: true });
  function markFocus() {
    let row = null;
    for (const r of ordersBody.querySelectorAll('[data-order]')) {
      const on = r.dataset.order === focused;
      r.classList.toggle('focus', on);
      if (on) row = r;
    }
    if (!focused) {
      focusNote.hidden = true;
      return;
    }
    if (row && scrolledTo !== focused) {
      scrolledTo = focused;
      row.scrollIntoView({ block: 'center' });
    }
    const missing = !row && ordersLoaded && me;
    focusNote.hidden = !missing;
    if (missing) setText(focusNote, `Order ${focused} is not among your orders.`);
  }
  function showRoute(m) {
    const id = m && m[0].startsWith('#/order/') ? m[1] : null;
    if (id === focused) return;
    if (id && !focused) returnY = window.scrollY;
    focused = id;
    scrolledTo = null;
    markFocus();
    if (!id && returnY !== null) {
      window.scrollTo(0, returnY);
      returnY = null;
    }
  }
  // orderActions is what an order's status cell shows under the status:
  // the time left to pay and Pay and Cancel while unpaid, the code and
  // Refund while paid, and the answer of the buyer's last click.
  function orderActions(o) {
    const parts = [orderAfterPay(o)];
    if (o.status === 'paid') parts.push(refundBox(o));
    if (o.status === 'created') {
      if (o.payDeadline) parts.push(h('div', { class: 'pay-left small muted', 'data-deadline': o.payDeadline }));
      const buttons = payWith.providers.map((p) =>
        h('button', { type: 'button', class: 'pay pay-' + p, onclick: (ev) => startPay(o, p, ev.currentTarget) }, `Pay${payValue(o)} with ${PROVIDER_NAMES[p] || p}`));
      if (payWith.simulated) {
        buttons.push(h('button', { type: 'button', class: 'pay', onclick: (ev) => change(o, 'pay', ev.currentTarget) },
          'Pay' + payValue(o) + (payWith.providers.length ? ' (simulated)' : '')));
      }
      buttons.push(h('button', { type: 'button', class: 'cancel secondary', onclick: (ev) => change(o, 'cancel', ev.currentTarget) }, 'Cancel'));
      parts.push(h('div', { class: 'row-actions' }, ...buttons));
      const c = paying.get(o.id);
      if (c) parts.push(qrPanel(c));
    }
    const m = rowMsgs.get(o.id);
    if (m) {
      const p = h('p', {});
      message(p, m.kind, m.text, m.code); // sets the class: kept in a div
      parts.push(h('div', { class: 'row-msg small' }, p));
    }
    return parts;
  }
  // refundBox is Refund under a paid, unused order. Pressed, it asks
  // once more in words, with "Keep the voucher" where Refund was (a double
  // tap keeps it) and "Yes, refund" beside it, armed a moment later.
  function refundBox(o) {
    const r = refunds.get(o.id);
    const amount = o.payAmount !== undefined ? ' ' + money(o.payAmount) : payValue(o);
    if (!r) {
      return h('div', { class: 'refund-box' },
        h('button', { type: 'button', class: 'refund secondary', onclick: () => askRefund(o) }, 'Refund' + amount));
    }
    const yes = h('button', { type: 'button', class: 'refund-yes danger', disabled: r.busy || Date.now() - r.asked < CONFIRM_ARM_MS,
      onclick: () => refund(o) }, r.busy ? 'Asking for the refund…' : 'Yes, refund' + amount);
    if (!r.busy && Date.now() - r.asked < CONFIRM_ARM_MS) {
      setTimeout(() => { if (yes.isConnected && !refunds.get(o.id)?.busy) yes.disabled = false; }, CONFIRM_ARM_MS - (Date.now() - r.asked));
    }
    return h('div', { class: 'refund-box refund-confirm', role: 'group', 'aria-label': 'Confirm the refund' },
      h('p', { class: 'small' }, `Get${amount} back${paidWith(o)}? The voucher can then no longer be used at the shop.`),
      h('div', { class: 'row-actions' },
        h('button', { type: 'button', class: 'refund-keep secondary', disabled: r.busy, onclick: () => keepVoucher(o) }, 'Keep the voucher'),
        yes));
  }
  // askRefund and keepVoucher move the focus with the question, so a
  // keyboard's second Enter keeps the voucher too.
  function askRefund(o) {
    refunds.set(o.id, { asked: Date.now(), busy: false });
    rowMsgs.delete(o.id);
    renderOrders(shown);
    ordersBody.querySelector(`[data-order="${o.id}"] .refund-keep`)?.focus({ preventScroll: true });
  }
  function keepVoucher(o) {
    refunds.delete(o.id);
    renderOrders(shown);
    ordersBody.querySelector(`[data-order="${o.id}"] button.refund`)?.focus({ preventScroll: true });
  }
  // refund asks for the order's money back (POST
  // /voucher-order/:orderId/refund): the row shows the order the server
  // answers, refunding (read again until refunded) or refunded at once.
  async function refund(o) {
    const r = refunds.get(o.id);
    if (!r || r.busy || Date.now() - r.asked < CONFIRM_ARM_MS) return;
    refunds.set(o.id, { ...r, busy: true });
    renderOrders(shown);
    const token = tokens.user();
    try {
      const next = (await api('POST', `/voucher-order/${o.id}/refund`, { token, headers: { 'Idempotency-Key': 'refund-' + o.id + '-' + r.asked } })).data;
      refunds.delete(o.id);
      rowMsgs.set(o.id, next.status === 'refunded'
        ? { kind: 'ok', text: `Refunded${next.payAmount !== undefined ? ' ' + money(next.payAmount) : ''}: the money is back with you.` }
        : { kind: 'ok', text: 'Refund asked: the money is on its way back to you.', while: 'refunding' });
      replaceOrder(next);
    } catch (e) {
      refunds.delete(o.id);
      if (e instanceof ApiError && e.status === 401) {
        loggedOut('Your login has ended (expired or signed out elsewhere): log in again.');
        return;
      }
      rowMsgs.set(o.id, e instanceof ApiError
        ? { kind: e.status >= 500 || e.status === 0 ? 'error' : 'refused', text: REFUND_REFUSALS[e.code] || explain(e), code: e.code }
        : { kind: 'error', text: String(e) });
      renderOrders(shown);
    }
    // The status the server now holds, and the unit a refund put back.
    await loadOrders();
    loadVouchers();
  }
  // qrPanel shows a trade's QR code to scan in the provider's app and its
  // page-pay link (the row above shows the time left); the order's row
  // turns paid by itself.
  function qrPanel(c) {
    const name = PROVIDER_NAMES[c.provider] || c.provider;
    return h('div', { class: 'qr-panel', 'data-trade': c.outTradeNo },
      c.qrImage ? h('img', { class: 'qr', src: c.qrImage, width: 180, height: 180, alt: `QR code to pay with ${name}` }) : null,
      h('p', { class: 'small' }, `Scan with ${name} to pay. This page turns paid by itself when ${name} tells us the money arrived.`),
      h('p', { class: 'small' }, h('a', { href: c.qrCode, target: '_blank', rel: 'noopener' }, 'Open the payment page'),
        c.payUrl ? [' · ', h('a', { href: c.payUrl, target: '_blank', rel: 'noopener' }, `Pay on ${name}'s website`)] : null));
  }
  // startPay opens (or shows again) the order's trade at a provider.
  async function startPay(o, provider, btn) {
    const token = tokens.user();
    for (const b of btn.parentElement.querySelectorAll('button')) b.disabled = true;
    try {
      const c = (await api('POST', `/voucher-order/${o.id}/pay`, { token, body: { provider } })).data;
      paying.set(o.id, c);
      rowMsgs.set(o.id, { kind: 'ok', text: `Waiting for ${PROVIDER_NAMES[provider] || provider}: scan the code.` });
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) {
        loggedOut('Your login has ended (expired or signed out elsewhere): log in again.');
        return;
      }
      rowMsgs.set(o.id, e instanceof ApiError
        ? { kind: e.status >= 500 || e.status === 0 ? 'error' : 'refused', text: explain(e), code: e.code }
        : { kind: 'error', text: String(e) });
    }
    renderOrders(shown);
  }
  // paidByProvider notes the orders whose trade the provider paid since
  // the last read: the notification, not the click, paid them.
  function paidByProvider(list) {
    for (const o of list) {
      if (!paying.has(o.id) || o.status === 'created') continue;
      paying.delete(o.id);
      rowMsgs.set(o.id, o.status === 'paid'
        ? { kind: 'ok', text: `Paid ${money(o.payAmount)} with ${PROVIDER_NAMES[o.payType] || o.payType}.` }
        : { kind: 'refused', text: `The order is ${o.status}.` });
    }
  }
  function payValue(o) {
    const fen = prices.get(String(o.voucherId));
    return fen === undefined ? '' : ' ' + money(fen);
  }
  // change pays or cancels an order; the row then shows what the server
  // answered: the order's new status, or the refusal in words.
  async function change(o, action, btn) {
    const token = tokens.user();
    for (const b of btn.parentElement.querySelectorAll('button')) b.disabled = true;
    try {
      const next = (await api('POST', `/voucher-order/${o.id}/${action}`, { token })).data;
      rowMsgs.set(o.id, action === 'pay'
        ? { kind: 'ok', text: `Paid ${money(next.payAmount)}.` }
        : { kind: 'ok', text: 'Cancelled: its unit is back on sale.' });
      replaceOrder(next);
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) {
        loggedOut('Your login has ended (expired or signed out elsewhere): log in again.');
        return;
      }
      rowMsgs.set(o.id, e instanceof ApiError
        ? { kind: e.status >= 500 || e.status === 0 ? 'error' : 'refused', text: explain(e), code: e.code }
        : { kind: 'error', text: String(e) });
      renderOrders(shown);
    }
    // The status the server now holds, and the stock a cancel gave back.
    await loadOrders();
    loadVouchers();
  }
  function replaceOrder(next) {
    shown = shown.map((o) => (o.id === next.id ? next : o));
    const id = String(next.voucherId);
    if (owned.has(id)) owned.set(id, next);
    renderOrders(shown);
    renderAll();
  }

  root.append(
    loginCard,
    h('section', { class: 'card' }, h('h2', {}, 'Vouchers ', h('small', {}, shopName)), shopForm, shopList, status, result, list),
    h('section', { class: 'card', id: 'orders-card' }, h('h2', {}, 'My orders'), focusNote, scroll(ordersTable)));

  renderLogin();
  loadMe();
  loadShop();
  loadVouchers();
  searchShops('');
  every(250, tick);
  every(STOCK_POLL_MS, loadVouchers);
  let watched = 0; // when the order of #/order/<id> was last read, paid
  let refundRead = 0; // when the orders were last read for a refunding one
  every(ORDER_POLL_MS, () => {
    if (tracked().length || overdue || paying.size) return loadOrders();
    if (shown.some((x) => x.status === 'refunding') && !document.hidden && Date.now() - refundRead >= REFUND_POLL_MS) {
      refundRead = Date.now();
      return loadOrders();
    }
    const o = focused && shown.find((x) => x.id === focused);
    if (o && o.status === 'paid' && !document.hidden && Date.now() - watched >= WATCH_POLL_MS) {
      watched = Date.now();
      loadOrders();
    }
  });
  api('GET', '/pay/providers').then((r) => { payWith = r.data; renderOrders(shown); }).catch(() => {});
  return { show: showRoute, unmount: () => timers.forEach(clearInterval) };
}

// orderHref is the link that shows an order on the buyer's page.
function orderHref(id) {
  return '#/order/' + id;
}

// ORDER_COLUMNS label the columns of the buyer's orders.
const ORDER_COLUMNS = ['Order', 'Voucher', 'Status', 'Created'];

// ENDED are the statuses of an order whose unit went back on sale.
const ENDED = new Set(['cancelled', 'expired', 'refunded']);
