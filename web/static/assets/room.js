// The waiting room (docs/waiting-room.md). A buyer joins the queue of a
// voucher that has one, sees their place and the number ahead move, then a
// Buy button while admitted, then the outcome. The dashboard's room panel
// shows the room's counters from the voucher's audit.
import { api, ApiError, explain } from './api.js';
import { h, setText, duration } from './dom.js';

const MIN_POLL_MS = 250;

// queuePanel is the room's part of a voucher card. buy(admission) buys
// with the admission token and resolves when the purchase has answered.
export function queuePanel(voucherId, token, buy) {
  const place = h('span', { class: 'room-place', 'data-field': 'position' }, '');
  const ahead = h('span', { class: 'room-ahead', 'data-field': 'ahead' }, '');
  const note = h('p', { class: 'room-note small muted' });
  const joinBtn = h('button', { class: 'room-join', type: 'button' }, 'Join the queue');
  const buyBtn = h('button', { class: 'room-buy', type: 'button', hidden: true }, 'Buy now');
  const el = h('div', { class: 'room', 'data-room': voucherId, 'data-status': '' },
    h('p', {}, 'Waiting room: ', place, ' ', ahead), joinBtn, buyBtn, note);
  let timer = null;
  let stopped = false;
  let admission = '';
  // The place ticket of the last answer, sent back on each poll: a
  // waiting buyer's poll is then answered without the room's script.
  let ticket = '';

  function show(a) {
    el.dataset.status = a.status;
    setText(place, a.position == null ? (a.status === 'waiting' ? 'in the pool, drawn at the start' : '') : 'place ' + a.position);
    setText(ahead, a.ahead == null || a.status !== 'waiting' ? '' : `· ${a.ahead} ahead of you`);
    joinBtn.hidden = true;
    buyBtn.hidden = a.status !== 'admitted';
    admission = a.token || '';
    const words = {
      waiting: a.position == null ? 'The queue is drawn at random when the sale starts: joining early gives no better place.' : 'Waiting for your turn.',
      admitted: 'Your turn: buy within ' + duration(60000) + ' or your place passes on.',
      sold_out: 'Sold out for now: a unit given back (an order cancelled or left unpaid) goes to the next in the queue.',
      closed: 'The queue is closed for you (the sale ended, or your turn passed unused).',
    };
    setText(note, words[a.status] || a.status);
  }

  async function step(method) {
    clearTimeout(timer);
    if (stopped || !el.isConnected) return;
    try {
      const headers = method === 'GET' && ticket ? { 'Queue-Ticket': ticket } : {};
      const a = (await api(method, `/voucher-order/seckill/${voucherId}/queue`, { token, headers })).data;
      if (a.ticket) ticket = a.ticket;
      show(a);
      // sold_out is not final while the sale lasts: units given back
      // reopen the room (its answer says when to ask again).
      if (a.retryAfterMs > 0) {
        timer = setTimeout(() => step('GET'), Math.max(a.retryAfterMs || 1000, MIN_POLL_MS));
      }
    } catch (e) {
      if (e instanceof ApiError && e.code === 'NOT_ADMITTED' && method === 'GET') {
        // The room lost our place (see docs/waiting-room.md): join again.
        ticket = '';
        return step('POST');
      }
      setText(note, explain(e));
      timer = setTimeout(() => step('GET'), 3000);
    }
  }

  joinBtn.addEventListener('click', () => step('POST'));
  buyBtn.addEventListener('click', async () => {
    buyBtn.disabled = true;
    try {
      await buy(admission);
    } finally {
      buyBtn.disabled = false;
      stopped = true;
      clearTimeout(timer);
      buyBtn.hidden = true;
    }
  });
  return { el, stop() { stopped = true; clearTimeout(timer); } };
}

// roomTiles is the dashboard's room panel: joined, admitted, bought and
// served per second, lapsed (no-shows), outstanding, from the audit each
// second.
export function roomTiles(voucherId, token, timers) {
  const f = {};
  const num = (name) => (f[name] = h('span', { class: 'num', 'data-field': 'room.' + name }, '–'));
  const tile = (label, ...c) => h('div', { class: 'tile' }, h('div', { class: 'label' }, label), h('div', { class: 'value' }, ...c));
  const seed = h('code', { 'data-field': 'room.seed' }, '–');
  const el = h('section', { class: 'card', id: 'live-room' }, h('h2', {}, 'Waiting room'),
    h('div', { class: 'tiles' },
      tile('Joined', num('joined')), tile('Admitted', num('admitted')), tile('Bought', num('purchased')),
      tile('Served / s', num('perSecond')), tile('No-shows (lapsed)', num('lapsed')),
      tile('Admitted, not bought', num('outstanding')), tile('Serving number', num('serving')), tile('State', num('state'))),
    h('p', { class: 'muted small' }, 'Draw seed (shown after the start): ', seed));
  let last = null;
  async function load() {
    try {
      const a = (await api('GET', `/admin/vouchers/${voucherId}/audit`, { token })).data;
      const r = a.waitingRoom;
      if (!r) return;
      const now = Date.now();
      for (const k of ['joined', 'admitted', 'purchased', 'lapsed', 'outstanding', 'serving', 'state']) setText(f[k], String(r[k]));
      if (last) setText(f.perSecond, ((1000 * (r.purchased - last.purchased)) / Math.max(now - last.at, 1)).toFixed(1));
      last = { purchased: r.purchased, at: now };
      setText(seed, r.seed || '–');
    } catch {
      // The live stream shows the connection's state; keep the last numbers.
    }
  }
  load();
  timers.push(setInterval(load, 1000));
  return el;
}
