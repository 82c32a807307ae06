// The shop staff's page (#/staff): the counter where a buyer's voucher is
// redeemed. A staff member logs in by code like a buyer (a user whose token
// carries the role staff), picks the shop once (remembered in this
// browser), then types the code the buyer shows (or a scanner types it)
// and presses Redeem: POST /shop/:shopId/redeem answers what was redeemed,
// or a refusal said here in words (docs/redemption.md). Made for a phone
// held in one hand: one big field, one big button under it.
import { api, ApiError, claims, tokens } from './api.js';
import { h, setText, field, money, localTime, message, shortId } from './dom.js';
import { loginForm, showError } from './login.js';

// SHOP_KEY remembers the staff member's shop: {id, name}.
const SHOP_KEY = 'seckill.staff.shop';

export function staff(root) {
  const timers = [];
  const head = h('section', { class: 'card', id: 'staff-card' });
  const counter = h('section', { class: 'card counter', id: 'counter', hidden: true });
  let note = ''; // why the login form is shown again
  root.append(head, counter);
  render();
  return { unmount: () => timers.forEach(clearInterval) };

  function shop() {
    try {
      const s = JSON.parse(localStorage.getItem(SHOP_KEY) || 'null');
      return s && s.id ? s : null;
    } catch {
      return null;
    }
  }

  function logout() {
    tokens.setUser('');
    note = '';
    render();
  }

  // render shows what the token allows: the login, a word to a user who
  // is not staff, the shop to pick, or the counter.
  function render() {
    const token = tokens.user();
    const c = token ? claims(token) : null;
    counter.hidden = true;
    if (!c || (c.exp && c.exp * 1000 < Date.now())) {
      if (c) tokens.setUser('');
      head.replaceChildren(h('h2', {}, 'Shop staff: log in'),
        note ? h('p', { id: 'login-note', class: 'message refused' }, note) : '',
        h('p', { class: 'muted small' }, 'Log in with the phone an admin made staff of your shop, by code like a buyer.'),
        loginForm({ timers, onLogin: () => { note = ''; render(); } }));
      return;
    }
    const who = h('p', { class: 'small' }, `Logged in as user ${c.uid} `,
      h('button', { id: 'logout', type: 'button', class: 'secondary', onclick: logout }, 'Log out'));
    if (c.role !== 'staff') {
      head.replaceChildren(h('h2', {}, 'Shop staff'), who,
        h('p', { id: 'staff-not', class: 'message refused' },
          'This login is not a shop’s staff, so it cannot redeem vouchers. An admin adds staff by phone; ',
          'if an admin just did, log out and log in again.'));
      return;
    }
    const s = shop();
    if (!s) {
      head.replaceChildren(h('h2', {}, 'Shop staff'), who, shopPicker());
      return;
    }
    head.replaceChildren(h('p', { id: 'staff-shop-line' }, 'Redeeming at ', h('strong', { id: 'staff-shop-name' }, s.name),
      h('span', { class: 'muted' }, ` (shop ${s.id}) `),
      h('button', { type: 'button', class: 'link', id: 'change-shop', onclick: () => { localStorage.removeItem(SHOP_KEY); render(); } }, 'Change')),
    who);
    counterForm(s);
  }

  // shopPicker finds the staff member's shop by number or by part of its
  // name.
  function shopPicker() {
    const found = h('ul', { id: 'staff-shops', class: 'shops' });
    const out = h('p', { class: 'message', hidden: true });
    const pick = (s) => {
      localStorage.setItem(SHOP_KEY, JSON.stringify({ id: s.id, name: s.name }));
      render();
    };
    const form = h('form', { id: 'staff-shop-form', autocomplete: 'off' },
      h('label', {}, 'Your shop ', h('input', { id: 'staff-shop', name: 'shop', required: true, size: 22, placeholder: 'its number or part of its name' })),
      h('button', { type: 'submit' }, 'Find'));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const q = field(form, 'shop');
      out.hidden = true;
      try {
        if (/^\d{1,19}$/.test(q)) return pick((await api('GET', '/shop/' + q)).data);
        const shops = (await api('GET', '/shop/list?name=' + encodeURIComponent(q))).data || [];
        if (shops.length === 1) return pick(shops[0]);
        found.replaceChildren(...shops.map((s) => h('li', {},
          h('button', { type: 'button', class: 'link', 'data-shop': s.id, onclick: () => pick(s) }, s.name), ' ',
          h('span', { class: 'muted small' }, s.address))));
        if (!shops.length) message(out, 'refused', `No shop has “${q}” in its name.`);
      } catch (e) {
        showError(out, e);
      }
    });
    return h('div', {}, h('h3', {}, 'Which shop is this counter at?'), form, found, out);
  }

  // counterForm is the counter: the answer, the code, Redeem.
  function counterForm(s) {
    const result = h('p', { id: 'redeem-result', class: 'message', 'aria-live': 'polite', hidden: true });
    const answer = h('div', { class: 'redeem-answer' }, result,
      h('p', { id: 'redeem-hint', class: 'muted' }, 'Type the code the buyer shows, or scan its QR code into the field.'));
    const input = h('input', {
      id: 'redeem-code', name: 'code', type: 'text', inputmode: 'text', autocapitalize: 'characters',
      autocomplete: 'off', autocorrect: 'off', spellcheck: 'false', enterkeyhint: 'go', maxlength: 32,
      placeholder: 'e.g. ABCDE 23456', 'aria-label': 'Redemption code', required: true,
    });
    const btn = h('button', { id: 'redeem', type: 'submit' }, 'Redeem');
    const form = h('form', { id: 'redeem-form', class: 'redeem-form', autocomplete: 'off' }, input, btn);
    let waiting = null; // the countdown of a RATE_LIMITED wait
    function wait(seconds) {
      clearInterval(waiting);
      let left = seconds;
      btn.disabled = true;
      setText(btn, `Wait ${left} s`);
      waiting = setInterval(() => {
        left -= 1;
        if (left > 0) return setText(btn, `Wait ${left} s`);
        clearInterval(waiting);
        btn.disabled = false;
        setText(btn, 'Redeem');
      }, 1000);
      timers.push(waiting);
    }
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const code = field(form, 'code');
      if (!code) {
        message(result, 'refused', 'Type the code first: 10 letters and digits.');
        input.focus();
        return;
      }
      btn.disabled = true;
      let limited = false;
      try {
        const r = (await api('POST', `/shop/${s.id}/redeem`, { token: tokens.user(), body: { code } })).data;
        message(result, 'ok', `Redeemed: “${r.title}”, worth ${money(r.actualValue)}, at ${localTime(r.useTime)}. Order `);
        result.append(shortId(r.orderId), '.');
        result.dataset.order = r.orderId;
        input.value = '';
        input.focus();
      } catch (e) {
        delete result.dataset.order;
        if (e instanceof ApiError && e.status === 401) {
          tokens.setUser('');
          note = 'Your login has ended (expired or signed out elsewhere): log in again.';
          render();
          return;
        }
        if (e instanceof ApiError && REFUSALS[e.code]) {
          message(result, 'refused', REFUSALS[e.code](e, s), e.code);
          limited = e.code === 'RATE_LIMITED' && e.retryAfter > 0;
          if (limited) wait(e.retryAfter);
        } else {
          showError(result, e);
        }
        input.focus();
        input.select();
      } finally {
        if (!limited) btn.disabled = false;
      }
    });
    counter.replaceChildren(h('h2', {}, 'Redeem a voucher'), answer, form);
    counter.hidden = false;
    input.focus();
  }
}

// REFUSALS say each refusal of POST /shop/:shopId/redeem in words; the
// server's detail (when, why) is used when it is in English (the REST
// style), else the words stand alone.
const REFUSALS = {
  VOUCHER_USED: (e) => {
    const at = e.message.match(/redeemed at (.+)$/);
    return at ? `Already used: this code was redeemed at ${at[1]}. Do not accept it again.` : 'Already used: this code was redeemed before. Do not accept it again.';
  },
  REDEEM_CODE_INVALID: (e) => {
    const st = e.message.match(/the order is (\w+)$/);
    return st ? `Not usable: this code’s order is ${st[1]}.` : 'Not a code of this shop: check the code with the buyer (a code of another shop is not accepted here).';
  },
  VOUCHER_NOT_USABLE: (e) => {
    const why = e.message.match(/now: (.+)$/);
    return why ? `Not usable today: ${why[1]}.` : 'Not usable today: the voucher’s days do not include today.';
  },
  RATE_LIMITED: (e) => `Too many tries: wait ${e.retryAfter ? e.retryAfter + ' s' : 'a minute'}, then try again.`,
  NOT_STAFF: (e, s) => `You are not staff of ${s.name} (shop ${s.id}): check the shop (Change above), or ask an admin.`,
};
