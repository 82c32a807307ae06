// The admin's page. Admins never log in by code: their tokens come from
// `seckill tokens --admin`, checked when pasted. The page picks a shop,
// publishes a voucher (prices in yuan), edits one before its sale and closes
// one. It lists a shop's vouchers with their live dashboards.
import { api, ApiError, explain, claims, tokens } from './api.js';
import { h, setText, field, money, message, yuan, fen, scroll, windowText, labelled } from './dom.js';

export function admin(root) {
  const tokenCard = h('section', { class: 'card', id: 'admin-token-card' });
  const work = h('div', { id: 'admin-work' });

  function renderToken() {
    const token = tokens.admin();
    const c = token ? claims(token) : null;
    if (token) {
      tokenCard.replaceChildren(h('h2', {}, 'Admin'),
        h('p', {}, 'Using the admin token of user ', h('strong', { id: 'admin-uid' }, c ? String(c.uid) : '?'),
          c && c.exp ? h('span', { class: 'muted' }, ' · expires ' + new Date(c.exp * 1000).toLocaleString()) : '',
          ' ', h('button', { id: 'admin-forget', type: 'button', onclick: () => { tokens.setAdmin(''); renderToken(); } }, 'Forget')));
      renderWork();
      return;
    }
    const out = h('p', { id: 'admin-token-result', class: 'message', hidden: true });
    const form = h('form', { id: 'admin-token-form' },
      h('p', {}, 'Paste an admin token. Admins never log in by code; make one with ',
        h('code', {}, 'go run . tokens --count 1 --admin | cut -d, -f2'), ' (it needs only the database, and works while the server runs).'),
      h('input', { id: 'admin-token', name: 'token', type: 'password', autocomplete: 'off', required: true, placeholder: 'eyJ…' }),
      ' ', h('button', { id: 'admin-save', type: 'submit' }, 'Use token'), out);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const token = field(form, 'token').replace(/^bearer\s+/i, '');
      // Checked on an admin route before it is kept: a mistyped,
      // expired, revoked or buyer's token is refused here.
      try {
        await api('GET', '/admin/live', { token });
      } catch (e) {
        const why = !(e instanceof ApiError) ? String(e)
          : e.code === 'UNAUTHORIZED' ? 'This is not a valid token (mistyped, expired or revoked).'
            : e.code === 'FORBIDDEN' ? "This is a buyer's token, not an admin's."
              : explain(e);
        message(out, 'refused', why, e.code);
        return;
      }
      tokens.setAdmin(token);
      renderToken();
    });
    tokenCard.replaceChildren(h('h2', {}, 'Admin'), form);
    work.replaceChildren();
  }

  // expired sends the admin back to the token form, saying why.
  function expired(e) {
    if (!(e instanceof ApiError) || (e.code !== 'UNAUTHORIZED' && e.code !== 'FORBIDDEN')) return false;
    tokens.setAdmin('');
    renderToken();
    const out = document.getElementById('admin-token-result');
    if (out) message(out, 'refused', 'The admin token stopped working (expired or revoked): paste a new one.', e.code);
    return true;
  }

  function renderWork() {
    work.replaceChildren(salesCard(), listCard(), publishCard(), shopCard());
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
      if (expired(e)) return;
      salesBody.replaceChildren(h('p', { class: 'message error' }, explain(e)));
    }
  }
  const salesTimer = setInterval(loadSales, 2000);

  // ---- a shop (a voucher must name one)
  function shopCard() {
    const out = h('p', { class: 'message', hidden: true });
    const form = h('form', { id: 'create-shop', class: 'grid' },
      h('label', {}, 'Name', h('input', { name: 'name', required: true, value: 'Demo shop' })),
      h('label', {}, 'Address', h('input', { name: 'address', required: true, value: 'Demo street 1' })),
      // In an actions box like Publish: a grid cell would stretch it.
      h('div', { class: 'actions' }, h('button', { id: 'create-shop-submit', type: 'submit' }, 'Create shop')), out);
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
        if (!expired(e)) show(out, e);
      }
    });
    return h('section', { class: 'card' }, h('h2', {}, 'New shop'), form);
  }

  // ---- publish a seckill voucher, or edit one before its sale
  let editing = null; // the voucher being edited, or null
  const publishOut = h('p', { id: 'publish-result', class: 'message', hidden: true });
  const publishTitle = h('h2', { id: 'publish-title' }, 'Publish a seckill voucher');
  let publishForm = null;
  function publishCard() {
    const now = new Date();
    const form = h('form', { id: 'publish', class: 'grid' },
      h('label', {}, 'Shop id', h('input', { name: 'shopId', type: 'number', min: 1, required: true, value: localStorage.getItem('seckill.shop') || '1' })),
      h('label', {}, 'Title', h('input', { name: 'title', required: true, value: '100 off' })),
      h('label', {}, 'Subtitle', h('input', { name: 'subTitle', value: 'weekdays' })),
      h('label', {}, 'Rules', h('input', { name: 'rules', value: 'one per user' })),
      h('label', {}, 'Buyer pays (¥)', h('input', { name: 'payValue', inputmode: 'decimal', required: true, value: '80.00', placeholder: 'e.g. 80 or 79.90' })),
      h('label', {}, 'Worth (¥)', h('input', { name: 'actualValue', inputmode: 'decimal', required: true, value: '100.00' })),
      h('label', {}, 'Stock', h('input', { name: 'stock', type: 'number', min: 1, required: true, value: '100' })),
      h('label', {}, 'Begins', h('input', { name: 'beginTime', type: 'datetime-local', step: 1, required: true, value: localInput(now) })),
      h('label', {}, 'Ends', h('input', { name: 'endTime', type: 'datetime-local', step: 1, required: true, value: localInput(new Date(now.getTime() + 3600e3)) })),
      h('div', { class: 'actions' },
        h('button', { id: 'publish-submit', type: 'submit' }, 'Publish'),
        h('button', { id: 'publish-cancel', type: 'button', class: 'secondary', hidden: true, onclick: () => stopEditing() }, 'Cancel edit')),
      publishOut);
    publishForm = form;
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const num = (n) => Number(field(form, n));
      // The browser's local time, sent with its offset (RFC 3339 in UTC):
      // the server's zone does not matter.
      const iso = (n) => {
        const t = new Date(field(form, n));
        return isNaN(t) ? field(form, n) : t.toISOString();
      };
      const pay = fen(field(form, 'payValue'));
      const worth = fen(field(form, 'actualValue'));
      if (isNaN(pay) || isNaN(worth)) {
        message(publishOut, 'refused', 'Prices are in yuan, like 80, 79.90 or 79,90, with no thousands separator.');
        return;
      }
      for (const [name, most] of [['title', 255], ['subTitle', 255], ['rules', 1024]]) {
        const n = [...field(form, name)].length;
        if (n > most) {
          message(publishOut, 'refused', `${LABELS[name]} is too long: ${n} characters, at most ${most} are allowed.`);
          return;
        }
      }
      if (pay > worth) {
        message(publishOut, 'refused', `The buyer would pay ${money(pay)} for a voucher worth ${money(worth)}: the price must not exceed the worth.`);
        return;
      }
      const body = {
        title: field(form, 'title'), subTitle: field(form, 'subTitle'), rules: field(form, 'rules'),
        payValue: pay, actualValue: worth, stock: num('stock'), beginTime: iso('beginTime'), endTime: iso('endTime'),
      };
      try {
        if (editing) {
          const { id, shopId } = editing;
          await api('PUT', '/voucher/seckill/' + id, { token: tokens.admin(), body });
          stopEditing(true);
          message(publishOut, 'ok', `Voucher ${id} saved.`);
          publishOut.dataset.voucher = id;
          listShop(shopId);
          return;
        }
        const env = await api('POST', '/voucher/seckill', {
          token: tokens.admin(), body: { shopId: num('shopId'), type: 1, ...body },
        });
        message(publishOut, 'ok', `Voucher ${env.data} published. `);
        publishOut.append(h('a', { href: '#/admin/live/' + env.data, 'data-live': env.data }, 'Open its live dashboard'));
        publishOut.dataset.voucher = env.data;
        listShop(num('shopId'));
      } catch (e) {
        if (!expired(e)) show(publishOut, e);
      }
    });
    return h('section', { class: 'card', id: 'publish-card' }, publishTitle, form);
  }

  function startEditing(v) {
    editing = v;
    const set = (n, val) => { publishForm.elements.namedItem(n).value = val; };
    set('shopId', v.shopId);
    publishForm.elements.namedItem('shopId').disabled = true;
    set('title', v.title);
    set('subTitle', v.subTitle);
    set('rules', v.rules);
    set('payValue', yuan(v.payValue));
    set('actualValue', yuan(v.actualValue));
    set('stock', v.initialStock);
    set('beginTime', localInput(new Date(v.beginTime)));
    set('endTime', localInput(new Date(v.endTime)));
    setText(publishTitle, `Edit voucher ${v.id} (its sale has not started)`);
    setText(document.getElementById('publish-submit'), 'Save changes');
    document.getElementById('publish-cancel').hidden = false;
    publishOut.hidden = true;
    publishForm.scrollIntoView({ block: 'start' });
  }

  // stopEditing turns the form back into an empty Publish form: the edited
  // values go, so a second click cannot publish a copy.
  function stopEditing(keepMessage) {
    const shopId = editing ? editing.shopId : null;
    editing = null;
    publishForm.elements.namedItem('shopId').disabled = false;
    if (shopId) publishForm.elements.namedItem('shopId').value = shopId;
    const now = new Date();
    const set = (n, val) => { publishForm.elements.namedItem(n).value = val; };
    for (const n of ['title', 'subTitle', 'rules', 'payValue', 'actualValue', 'stock']) set(n, '');
    set('beginTime', localInput(now));
    set('endTime', localInput(new Date(now.getTime() + 3600e3)));
    setText(publishTitle, 'Publish a seckill voucher');
    setText(document.getElementById('publish-submit'), 'Publish');
    document.getElementById('publish-cancel').hidden = true;
    if (!keepMessage) publishOut.hidden = true;
  }

  // ---- a shop's vouchers: dashboards, edit (before the sale), close
  const listBody = h('tbody', { id: 'admin-vouchers' });
  const listStatus = h('p', { class: 'muted', id: 'admin-list-status' });
  const listOut = h('p', { id: 'admin-list-result', class: 'message', hidden: true });
  function listCard() {
    const form = h('form', { class: 'inline', id: 'list-shop' },
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
    return h('section', { class: 'card' }, h('h2', {}, 'Vouchers: edit, close, watch'), form, open, listStatus, listOut,
      scroll(h('table', { class: 'admin-vouchers cards' }, h('thead', {}, h('tr', {}, LIST_COLUMNS.map((t) => h('th', {}, t)))), listBody)));
  }

  async function listShop(shopId) {
    if (!Number.isInteger(shopId) || shopId < 1) return;
    localStorage.setItem('seckill.shop', String(shopId));
    try {
      const env = await api('GET', '/voucher/list/' + shopId);
      const now = Date.now();
      const rows = (env.data || []).map((v) => {
        const closed = v.status === 2;
        const ended = closed || Date.parse(v.endTime) <= now;
        const before = !closed && Date.parse(v.beginTime) > now;
        return labelled(h('tr', { 'data-voucher-row': v.id, 'data-closed': String(closed) },
          h('td', {}, String(v.id)), h('td', {}, v.title, closed ? h('span', { class: 'muted small' }, ' (closed)') : ''),
          h('td', {}, money(v.payValue)),
          h('td', {}, `${v.stock} / ${v.initialStock}`),
          h('td', { class: 'small window' }, windowText(v)),
          h('td', { class: 'row-actions' },
            h('a', { href: '#/admin/live/' + v.id, 'data-live': v.id }, 'Dashboard'),
            before ? h('button', { type: 'button', class: 'secondary', 'data-edit': v.id, onclick: () => startEditing(v) }, 'Edit') : '',
            !ended ? h('button', { type: 'button', class: 'secondary', 'data-close': v.id, onclick: (ev) => closeVoucher(v, ev.currentTarget) }, 'Close') : '')), LIST_COLUMNS);
      });
      listBody.replaceChildren(...rows);
      setText(listStatus, rows.length ? `Shop ${shopId}: a voucher can be edited until its sale starts, and closed (its orders stay) until it ends.` : `Shop ${shopId} has no voucher yet.`);
    } catch (e) {
      listBody.replaceChildren();
      setText(listStatus, e instanceof ApiError && e.code === 'SHOP_NOT_FOUND' ? `Shop ${shopId} does not exist.` : explain(e));
    }
  }

  // closeVoucher asks once more (the button turns into a confirmation for
  // a few seconds), then ends the voucher's sale now.
  async function closeVoucher(v, btn) {
    if (btn.dataset.confirm !== 'yes') {
      btn.dataset.confirm = 'yes';
      setText(btn, 'Confirm close');
      btn.classList.add('danger');
      setTimeout(() => {
        if (!btn.isConnected) return;
        btn.dataset.confirm = '';
        setText(btn, 'Close');
        btn.classList.remove('danger');
      }, 5000);
      return;
    }
    try {
      await api('POST', `/voucher/seckill/${v.id}/close`, { token: tokens.admin() });
      message(listOut, 'ok', `Voucher ${v.id} (“${v.title}”) closed: its sale ended now; its orders stay.`);
    } catch (e) {
      if (!expired(e)) show(listOut, e);
    }
    if (editing && editing.id === v.id) stopEditing();
    listShop(v.shopId);
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

// LIST_COLUMNS label the columns of a shop's vouchers.
const LIST_COLUMNS = ['Id', 'Title', 'Price', 'Stock', 'Window', ''];

// LABELS are the form's labels of the API's fields.
const LABELS = {
  shopId: 'Shop id', title: 'Title', subTitle: 'Subtitle', rules: 'Rules', payValue: 'Buyer pays',
  actualValue: 'Worth', stock: 'Stock', beginTime: 'Begins', endTime: 'Ends',
};

// inWords says a refusal of a field in the form's words: "invalid
// endTime: must be after beginTime" is "Ends must be after Begins.".
function inWords(e) {
  const m = e.code === 'INVALID_ARGUMENT' && /^invalid (\w+): (.*)$/s.exec(e.message);
  if (!m || !LABELS[m[1]]) return explain(e);
  const reason = m[2].replace(/\b(\w+)\b/g, (w) => LABELS[w] || w);
  return `${LABELS[m[1]]} ${reason}.`;
}

function show(el, e) {
  if (e instanceof ApiError) {
    message(el, e.status >= 500 || e.status === 0 ? 'error' : 'refused', inWords(e), e.code);
  } else {
    message(el, 'error', String(e));
  }
}
