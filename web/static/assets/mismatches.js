// The reconciliation's mismatches of one sale (docs/payments.md,
// "Reconciliation"): how many, and the newest with what to do, from
// GET /admin/payments/mismatches?voucherId= every 30 s. Hidden while no
// real pay provider is enabled (the route is absent) and while there is
// none.
import { api } from './api.js';
import { h, setText, localTime, money } from './dom.js';

const SHOWN = 20;

export function mismatchPanel(voucherId, token, timers) {
  const count = h('span', { class: 'num', 'data-field': 'mismatches.total' }, '–');
  const rows = h('tbody', {});
  const card = h('section', { class: 'card', id: 'mismatches', hidden: true },
    h('h2', {}, 'Reconciliation mismatches'),
    h('div', { class: 'tiles' },
      h('div', { class: 'tile' }, h('div', { class: 'label' }, 'Mismatches'), h('div', { class: 'value' }, count,
        h('div', { class: 'muted small' }, 'the providers\' view against the orders: each needs a person')))),
    h('div', { class: 'scroll' },
      h('table', { class: 'mismatches' },
        h('thead', {}, h('tr', {}, ...['kind', 'provider', 'trade', 'order', 'amount', 'bill day', 'seen', 'what to do'].map((c) => h('th', {}, c)))),
        rows)));
  async function load() {
    let env;
    try {
      env = await api('GET', `/admin/payments/mismatches?voucherId=${voucherId}&limit=${SHOWN}`, { token });
    } catch {
      return; // absent without a real provider, or down: the next round tries again
    }
    const list = env.data || [];
    card.hidden = !env.total;
    setText(count, env.total || 0);
    rows.replaceChildren(...list.map((m) => h('tr', { 'data-kind': m.kind },
      h('td', {}, h('code', {}, m.kind)),
      h('td', {}, m.provider),
      h('td', {}, h('code', {}, m.outTradeNo)),
      h('td', {}, m.orderId || '–'),
      h('td', { class: 'num' }, money(m.amount)),
      h('td', {}, m.billDate),
      h('td', {}, localTime(m.firstSeen)),
      h('td', { title: m.detail }, m.action))));
  }
  load();
  timers.push(setInterval(load, 30000));
  return card;
}
