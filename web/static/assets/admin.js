// The admin's page: the admin token (admins never log in by code: their
// tokens come from `seckill tokens --admin`), a shop, publishing a voucher,
// and a shop's vouchers with their live dashboards.
import { api, ApiError, claims, tokens } from './api.js';
import { h, setText, field, money, localTime, message } from './dom.js';

export function admin(root) {
  const tokenCard = h('section', { class: 'card', id: 'admin-token-card' });
  const work = h('div', { id: 'admin-work' });

  function renderToken() {
    const token = tokens.admin();
    const c = token ? claims(token) : null;
    if (token) {
      tokenCard.replaceChildren(h('h2', {}, 'Admin'),
        h('p', {}, 'Using the token of user ', h('strong', { id: 'admin-uid' }, c ? String(c.uid) : '?'),
          c && c.role !== 'admin' ? h('span', { class: 'message refused' }, ' (role ' + c.role + ': admin routes will answer FORBIDDEN)') : '',
          c && c.exp ? h('span', { class: 'muted' }, ' · expires ' + new Date(c.exp * 1000).toLocaleString()) : '',
          ' ', h('button', { id: 'admin-forget', type: 'button', onclick: () => { tokens.setAdmin(''); renderToken(); } }, 'Forget')));
      renderWork();
      return;
    }
    const form = h('form', { id: 'admin-token-form' },
      h('p', {}, 'Paste an admin token. Admins never log in by code; make one with ',
        h('code', {}, 'go run . tokens --count 1 --admin | cut -d, -f2'), ' (it needs only the database, and works while the server runs).'),
      h('input', { id: 'admin-token', name: 'token', type: 'password', autocomplete: 'off', required: true, placeholder: 'eyJ…' }),
      ' ', h('button', { id: 'admin-save', type: 'submit' }, 'Use token'));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      tokens.setAdmin(field(form, 'token').replace(/^bearer\s+/i, ''));
      renderToken();
    });
    tokenCard.replaceChildren(h('h2', {}, 'Admin'), form);
    work.replaceChildren();
  }

  function renderWork() {
    work.replaceChildren(salesCard(), shopCard(), publishCard(), listCard());
    loadSales();
  }

  // ---- the sales going on now, over every instance (GET /admin/live): a
  // load test's voucher shows here within a second of its first request.
  const salesBody = h('div', { id: 'live-sales' }, h('p', { class: 'muted' }, 'Looking…'));
  function salesCard() {
    return h('section', { class: 'card' }, h('h2', {}, 'Sales live now'), salesBody);
  }
  async function loadSales() {
    const token = tokens.admin();
    if (!token || document.hidden) return;
    try {
      const s = (await api('GET', '/admin/live', { token })).data;
      const n = s.instances.length;
      salesBody.replaceChildren(
        h('p', { class: 'muted' }, `${n} instance${n === 1 ? '' : 's'} publishing live counters`,
          n ? ' (' + [...new Set(s.instances.map((i) => i.lockMode + '/' + i.orderMode))].join(', ') + ')' : ''),
        s.vouchers.length
          ? h('ul', {}, s.vouchers.map((id) => h('li', {}, `Voucher ${id}: `,
            h('a', { href: '#/admin/live/' + id, 'data-live': id }, 'live dashboard'))))
          : h('p', { class: 'muted' }, 'No voucher had a purchase in the last 10 seconds.'));
    } catch (e) {
      salesBody.replaceChildren(h('p', { class: 'message error' }, e.code + ': ' + e.message));
    }
  }
  const salesTimer = setInterval(loadSales, 2000);

  // ---- a shop (a voucher must name one)
  function shopCard() {
    const out = h('p', { class: 'message', hidden: true });
    const form = h('form', { id: 'create-shop', class: 'grid' },
      h('label', {}, 'Name', h('input', { name: 'name', required: true, value: 'Demo shop' })),
      h('label', {}, 'Address', h('input', { name: 'address', required: true, value: 'Demo street 1' })),
      h('button', { type: 'submit' }, 'Create shop'), out);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      try {
        const env = await api('POST', '/shop', {
          token: tokens.admin(),
          body: { name: field(form, 'name'), address: field(form, 'address'), typeId: 1, x: 120.149993, y: 30.334229 },
        });
        message(out, 'ok', `Shop ${env.data} created.`);
        out.dataset.shop = env.data;
        for (const el of document.querySelectorAll('input[name=shopId]')) el.value = env.data;
      } catch (e) {
        show(out, e);
      }
    });
    return h('section', { class: 'card' }, h('h2', {}, 'New shop'), form);
  }

  // ---- publish a seckill voucher
  function publishCard() {
    const out = h('p', { id: 'publish-result', class: 'message', hidden: true });
    const now = new Date();
    const form = h('form', { id: 'publish', class: 'grid' },
      h('label', {}, 'Shop id', h('input', { name: 'shopId', type: 'number', min: 1, required: true, value: localStorage.getItem('seckill.shop') || '1' })),
      h('label', {}, 'Title', h('input', { name: 'title', required: true, value: '100 off' })),
      h('label', {}, 'Subtitle', h('input', { name: 'subTitle', value: 'weekdays' })),
      h('label', {}, 'Rules', h('input', { name: 'rules', value: 'one per user' })),
      h('label', {}, 'Pay (fen)', h('input', { name: 'payValue', type: 'number', min: 0, required: true, value: '8000' })),
      h('label', {}, 'Worth (fen)', h('input', { name: 'actualValue', type: 'number', min: 0, required: true, value: '10000' })),
      h('label', {}, 'Stock', h('input', { name: 'stock', type: 'number', min: 1, required: true, value: '100' })),
      h('label', {}, 'Begins', h('input', { name: 'beginTime', type: 'datetime-local', step: 1, required: true, value: localInput(now) })),
      h('label', {}, 'Ends', h('input', { name: 'endTime', type: 'datetime-local', step: 1, required: true, value: localInput(new Date(now.getTime() + 3600e3)) })),
      h('button', { type: 'submit' }, 'Publish'), out);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const num = (n) => Number(field(form, n));
      // The browser's local time, sent with its offset (RFC 3339 in UTC):
      // the server's zone does not matter.
      const iso = (n) => {
        const t = new Date(field(form, n));
        return isNaN(t) ? field(form, n) : t.toISOString();
      };
      try {
        const env = await api('POST', '/voucher/seckill', {
          token: tokens.admin(),
          body: {
            shopId: num('shopId'), title: field(form, 'title'), subTitle: field(form, 'subTitle'), rules: field(form, 'rules'),
            payValue: num('payValue'), actualValue: num('actualValue'), type: 1, stock: num('stock'),
            beginTime: iso('beginTime'), endTime: iso('endTime'),
          },
        });
        out.replaceChildren();
        message(out, 'ok', `Voucher ${env.data} published. `);
        out.append(h('a', { href: '#/admin/live/' + env.data, 'data-live': env.data }, 'Open its live dashboard'));
        out.dataset.voucher = env.data;
        listShop(num('shopId'));
      } catch (e) {
        show(out, e);
      }
    });
    return h('section', { class: 'card' }, h('h2', {}, 'Publish a seckill voucher'), form);
  }

  // ---- a shop's vouchers, with their dashboards
  const listBody = h('tbody', { id: 'admin-vouchers' });
  const listStatus = h('p', { class: 'muted' });
  function listCard() {
    const form = h('form', { class: 'inline' },
      h('label', {}, 'Shop ', h('input', { name: 'shopId', type: 'number', min: 1, required: true, value: localStorage.getItem('seckill.shop') || '1' })),
      h('button', { type: 'submit' }, 'List'));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      listShop(Number(field(form, 'shopId')));
    });
    const open = h('form', { class: 'inline', id: 'open-live' },
      h('label', {}, 'Voucher id ', h('input', { name: 'voucher', type: 'number', min: 1, required: true })),
      h('button', { type: 'submit' }, 'Open dashboard'));
    open.addEventListener('submit', (ev) => {
      ev.preventDefault();
      location.hash = '#/admin/live/' + field(open, 'voucher');
    });
    listShop(Number(localStorage.getItem('seckill.shop') || 1));
    return h('section', { class: 'card' }, h('h2', {}, 'Vouchers and their live dashboards'), form, open, listStatus,
      h('table', {}, h('thead', {}, h('tr', {}, ['Id', 'Title', 'Price', 'Stock', 'Window', ''].map((t) => h('th', {}, t)))), listBody));
  }

  async function listShop(shopId) {
    if (!Number.isInteger(shopId) || shopId < 1) return;
    localStorage.setItem('seckill.shop', String(shopId));
    try {
      const env = await api('GET', '/voucher/list/' + shopId);
      const rows = (env.data || []).map((v) => h('tr', {},
        h('td', {}, String(v.id)), h('td', {}, v.title), h('td', {}, money(v.payValue)),
        h('td', {}, `${v.stock} / ${v.initialStock}`),
        h('td', { class: 'small' }, localTime(v.beginTime), ' – ', localTime(v.endTime)),
        h('td', {}, h('a', { href: '#/admin/live/' + v.id, 'data-live': v.id }, 'Live dashboard'))));
      listBody.replaceChildren(...rows);
      setText(listStatus, rows.length ? `Shop ${shopId}` : `Shop ${shopId} has no voucher yet.`);
    } catch (e) {
      setText(listStatus, e.message);
    }
  }

  root.append(tokenCard, work);
  renderToken();
  return { unmount: () => clearInterval(salesTimer) };
}

// localInput formats a Date for a datetime-local input, in local time.
function localInput(d) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

function show(el, e) {
  if (e instanceof ApiError) {
    message(el, e.status >= 500 || e.status === 0 ? 'error' : 'refused', e.message, e.code);
  } else {
    message(el, 'error', String(e));
  }
}
