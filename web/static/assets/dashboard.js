// The live sale dashboard of one voucher. The server pushes a snapshot a
// second (GET /admin/vouchers/:id/live). The page reads the Server-Sent
// Events with fetch, so the admin token travels in a header, never in a URL.
// Every number is the whole sale's, over every instance: the server sums
// what each instance published to Redis and adds the voucher's audit.
import { api, stream, ApiError, explain, serverNow, tokens } from './api.js';
import { h, setText, localTime, duration, money, scroll, windowText, labelled, shortId } from './dom.js';
import { roomTiles } from './room.js';
import { mismatchPanel } from './mismatches.js';

const CODES = ['OK', 'SOLD_OUT', 'DUPLICATE_ORDER', 'SECKILL_NOT_STARTED', 'SECKILL_ENDED', 'RATE_LIMITED', 'UNAVAILABLE', 'INTERNAL', 'OTHER'];
const LIVE_POINTS = 3600; // the stream's seconds kept past the server's history
// Refusals that end the stream for good; anything else is retried.
const FINAL = new Set(['UNAUTHORIZED', 'FORBIDDEN', 'VOUCHER_NOT_FOUND', 'INVALID_ARGUMENT', 'NOT_FOUND']);

export function dashboard(root, voucherId) {
  const token = tokens.admin();
  if (!token) {
    root.append(h('section', { class: 'card' }, h('h2', {}, `Voucher ${voucherId}: live`),
      h('p', {}, 'The dashboard is for admins: ', h('a', { href: '#/admin' }, 'paste an admin token'), ' first.')));
    return { unmount() {} };
  }
  // The voucher first: an unknown one gets a page that says so, not a
  // dashboard of dashes.
  const abort = new AbortController();
  const timers = [];
  const waiting = h('section', { class: 'card' }, h('p', { class: 'muted' }, `Voucher ${voucherId}: loading…`));
  root.append(waiting);
  api('GET', '/voucher/seckill/' + voucherId, { signal: abort.signal }).then((env) => {
    waiting.remove();
    board(root, voucherId, token, env.data, abort, timers);
  }, (e) => {
    if (abort.signal.aborted) return;
    waiting.replaceChildren(h('h2', {}, `Voucher ${voucherId}`),
      h('p', { id: 'live-missing', class: 'message ' + (e instanceof ApiError && e.code === 'VOUCHER_NOT_FOUND' ? 'refused' : 'error'), 'data-code': e.code || '' },
        e instanceof ApiError && e.code === 'VOUCHER_NOT_FOUND' ? `No voucher has the id ${voucherId}.` : explain(e)),
      h('p', {}, h('a', { href: '#/admin' }, '← Admin: the vouchers of a shop')));
  });
  return { unmount: () => { abort.abort(); timers.forEach(clearInterval); } };
}

function board(root, voucherId, token, v, abort, timers) {
  const f = {}; // data-field -> element
  const num = (name, cls) => (f[name] = h('span', { class: cls || 'num', 'data-field': name }, '–'));
  const state = h('span', { id: 'live-state', class: 'state', 'data-state': 'connecting' }, 'connecting…');
  const updated = num('at', 'muted');
  const modes = h('p', { id: 'live-modes' });
  const verdict = h('div', { id: 'verdict', class: 'verdict', 'data-consistent': '' }, '–');
  const auditNote = h('p', { class: 'muted small', id: 'audit-note' });
  const chart = h('canvas', { id: 'rate-chart' });
  const codeRows = h('tbody', {});
  for (const c of CODES) {
    codeRows.append(h('tr', { 'data-code': c }, h('td', {}, h('code', {}, c)),
      h('td', { class: 'r' }, num('perSecond.' + c)), h('td', { class: 'r' }, num('answers.' + c))));
  }
  const checkLabel = h('span', {}, 'the order check');
  // Latencies keep their last values when the traffic stops, marked so.
  const latencyNote = h('p', { id: 'latency-note', class: 'muted small', hidden: true }, 'No request in the last seconds: latencies shown are the last measured.');
  let lastLatency = null;
  const instRows = h('tbody', { id: 'instances' });
  // The sale's curve: the server's history (every second with answers
  // since the first, kept after the sale), then the stream's seconds.
  let hist = { step: 1, to: 0, points: [] }; // points: {t (Unix s), rps, ok}
  let livePoints = [];
  const chartSpan = h('span', { id: 'chart-span' });

  // The sale's state as a badge: closed, ended, not started, sold out (the
  // latest audit's stock) or on sale, with the time left beside it.
  let soldOut = v.stock <= 0;
  const phaseBadge = h('span', { class: 'badge' });
  const phaseNote = h('span', { class: 'note' });
  const phase = h('span', { id: 'live-phase', class: 'phase' }, phaseBadge, phaseNote);
  const tick = () => {
    const now = serverNow();
    const begin = Date.parse(v.beginTime);
    const end = Date.parse(v.endTime);
    const [state, words, note] = v.status === 2 ? ['closed', 'closed', '']
      : now >= end ? ['ended', 'ended', '']
        : now < begin ? ['before', 'not started', 'starts in ' + duration(begin - now)]
          : soldOut ? ['soldout', 'sold out', '']
            : ['open', 'on sale', 'ends in ' + duration(end - now)];
    phase.dataset.phase = state;
    setText(phaseBadge, words);
    setText(phaseNote, note ? ' ' + note : '');
  };
  tick();
  timers.push(setInterval(tick, 250));
  root.append(
    h('section', { class: 'card', id: 'live-head' },
      h('h2', {}, h('span', { id: 'live-title' }, v.title), ' ', h('small', {}, `voucher ${voucherId}`), ' ', state),
      h('p', { class: 'window' }, phase, h('span', { class: 'muted' }, ' · ', h('span', { id: 'live-window' }, windowText(v)),
        ' · pay ', money(v.payValue), ' · updated ', updated)),
      modes,
      h('div', { class: 'tiles' },
        tile('Stock (database)', num('stock'), h('span', { class: 'muted' }, ' / ', num('initialStock', 'muted'))),
        tile('Orders', num('orders'), h('div', { class: 'muted small' }, 'unpaid and paid')),
        tile('Unpaid', num('unpaid')),
        tile('Paid', num('paid'), h('div', { class: 'muted small' }, 'used ones included')),
        tile('Used', num('used'), h('div', { class: 'muted small' }, 'redeemed at the shop')),
        tile('Refunding', num('refunding'), h('div', { class: 'muted small' }, 'asked by the buyer, money not back yet')),
        tile('Refunded', num('refunded'), h('div', { class: 'muted small' }, 'on the buyer\'s request')),
        tile('Cancelled', num('cancelled'), h('div', { class: 'muted small' }, 'units back on sale (refunds during the sale included)')),
        tile('Expired', num('expired'), h('div', { class: 'muted small' }, 'of the cancelled: not paid in time')),
        tile('Pending', num('pending'), h('div', { class: 'muted small' }, 'async: admitted, not yet written')),
        tile('Redis stock', num('redisStock'), h('div', { class: 'muted small' }, 'async only')),
        tile('Audit', verdict, auditNote))),
    v.waitingRoom ? roomTiles(voucherId, token, timers) : '',
    moneyTiles(voucherId, token, timers),
    refundList(voucherId, token, timers),
    mismatchPanel(voucherId, token, timers),
    h('section', { class: 'card' },
      h('h2', {}, 'Traffic'),
      h('div', { class: 'tiles' },
        tile('Requests / s', num('requestsPerSecond')),
        tile('Requests', num('requests')),
        tile('p50 ms', num('latency.p50')), tile('p95 ms', num('latency.p95')), tile('p99 ms', num('latency.p99')),
        tile('mean ms', num('latency.mean'))),
      latencyNote,
      chart,
      h('p', { class: 'muted small' }, 'Requests per second (line) and orders per second (bars) over the sale', chartSpan,
        '; the tiles\' rates and latencies over the last ', num('windowSeconds', 'muted'), ' s.')),
    h('section', { class: 'card cols' },
      h('div', {}, h('h2', {}, 'Answers by code'),
        scroll(h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'code'), h('th', { class: 'r' }, 'per second'), h('th', { class: 'r' }, 'total'))), codeRows))),
      h('div', {}, h('h2', {}, 'Duplicates stopped'),
        h('table', {}, h('tbody', {},
          h('tr', {}, h('td', {}, 'by the per-user lock'), h('td', { class: 'r' }, num('duplicates.lock'))),
          h('tr', {}, h('td', {}, 'by the fencing token'), h('td', { class: 'r' }, num('duplicates.fence'))),
          h('tr', {}, h('td', {}, 'by ', checkLabel), h('td', { class: 'r' }, num('duplicates.check'))),
          h('tr', { class: 'warn-row' }, h('td', {}, 'only by the unique key (the lock failed)'), h('td', { class: 'r' }, num('duplicates.uniqueKey'))),
          h('tr', {}, h('td', {}, 'unique-key rejections, audit (requests and consumers)'), h('td', { class: 'r' }, num('duplicateRejections'))))),
        h('p', { class: 'muted small' }, 'Each DUPLICATE_ORDER answer counted by where it was stopped. A lock that holds leaves the unique key nothing to do.'))),
    h('section', { class: 'card' }, h('h2', {}, 'Instances'),
      h('p', { class: 'muted small' }, 'An instance\'s requests count every voucher it served, not only this one.'),
      scroll(h('table', { class: 'instances cards' }, h('thead', {}, h('tr', {}, INSTANCE_COLUMNS.map((t, i) => h('th', { class: i === 4 || i === 5 ? 'r' : '' }, t)))), instRows))),
    h('p', {}, h('a', { href: '#/admin' }, '← Admin')));

  function show(s) {
    const a = s.audit || {};
    const set = (name, v) => setText(f[name], v === undefined || v === null ? '–' : v);
    set('at', new Date(s.at).toLocaleTimeString());
    set('stock', a.stock);
    set('initialStock', a.initialStock);
    set('orders', a.orders);
    for (const k of ['unpaid', 'paid', 'used', 'refunding', 'refunded', 'cancelled', 'expired']) set(k, a[k]);
    set('pending', a.pending);
    set('redisStock', a.redisStock);
    set('duplicateRejections', a.duplicateRejections);
    if (s.audit) {
      soldOut = a.initialStock > 0 && (a.stock <= 0 || (a.redisStock !== undefined && a.redisStock !== null && a.redisStock <= 0));
      tick();
      const okay = a.consistent && !a.oversold;
      setText(verdict, okay ? 'consistent' : a.oversold ? 'OVERSOLD' : 'INCONSISTENT');
      verdict.dataset.consistent = String(!!a.consistent);
      verdict.dataset.oversold = String(!!a.oversold);
      verdict.className = 'verdict ' + (okay ? 'good' : 'bad');
    }
    setText(auditNote, (s.auditError ? 'last audit failed: ' + s.auditError + '; shown: ' : 'audited ') + localTime(s.auditAt));
    set('requests', s.requests);
    set('requestsPerSecond', s.requestsPerSecond);
    set('windowSeconds', s.windowSeconds);
    if (s.latency) lastLatency = s.latency;
    latencyNote.hidden = !!s.latency || !lastLatency;
    for (const q of ['p50', 'p95', 'p99', 'mean']) set('latency.' + q, lastLatency ? lastLatency[q] : null);
    for (const c of CODES) {
      set('answers.' + c, (s.answers || {})[c]);
      set('perSecond.' + c, s.perSecond ? s.perSecond[c] : null);
    }
    for (const k of ['lock', 'fence', 'check', 'uniqueKey']) set('duplicates.' + k, (s.duplicates || {})[k]);
    f['duplicates.uniqueKey'].closest('tr').classList.toggle('bad', (s.duplicates || {}).uniqueKey > 0);

    const orderModes = s.orderModes || [];
    setText(checkLabel, orderModes.length === 1 && orderModes[0] === 'async'
      ? 'the admission script (buyers set)' : orderModes.length === 1 ? "the transaction's check" : 'the order check');
    const insts = s.instances || [];
    const serving = insts.filter((i) => i.serving).length;
    modes.replaceChildren(
      'Lock mode ', h('strong', { 'data-field': 'lockModes' }, (s.lockModes || []).join(', ') || '–'),
      ' · order mode ', h('strong', { 'data-field': 'orderModes' }, orderModes.join(', ') || '–'),
      ' · ', h('strong', { 'data-field': 'instances' }, String(insts.length)), insts.length === 1 ? ' instance running, ' : ' instances running, ',
      h('strong', { 'data-field': 'serving' }, serving === 0 ? 'none' : serving === insts.length && serving > 1 ? 'all' : String(serving)),
      serving === 0 ? ' answering this voucher now (no request in the last 10 s)' : ' answering this voucher',
      (s.lockModes || []).length > 1 || orderModes.length > 1 ? h('span', { class: 'message refused' }, ' the instances run different modes') : '',
      s.error ? h('span', { class: 'message error' }, ' counters: ' + s.error) : '');
    instRows.replaceChildren(...insts.map((i) => labelled(h('tr', { 'data-instance': i.id, 'data-serving': String(!!i.serving) },
      h('td', {}, h('code', { class: 'inst', title: i.id }, i.id)), h('td', {}, i.lockMode), h('td', {}, i.orderMode),
      h('td', {}, i.serving ? 'serving' : h('span', { class: 'muted' }, 'idle')),
      h('td', { class: 'r' }, i.requestsPerSecond ?? '–'), h('td', { class: 'r' }, String(i.requests)),
      h('td', {}, new Date(i.seen).toLocaleTimeString())), INSTANCE_COLUMNS)));

    if (s.requestsPerSecond !== undefined && s.requestsPerSecond !== null) {
      const t = Math.floor(Date.parse(s.at) / 1000);
      // Seconds without requests add no point (the curve is at zero there):
      // after the sale the curve keeps the sale's span, not the page's.
      if (s.requestsPerSecond > 0 && t >= hist.to + hist.step && (!livePoints.length || livePoints[livePoints.length - 1].t < t)) {
        livePoints.push({ t, rps: s.requestsPerSecond || 0, ok: s.perSecond ? s.perSecond.OK : 0 });
        if (livePoints.length > LIVE_POINTS) livePoints.shift();
      }
    }
    draw();
  }

  // loadHistory reads the sale's curve kept by the server: on opening the
  // page and at every (re)connection of the stream.
  async function loadHistory() {
    try {
      const d = (await api('GET', `/admin/vouchers/${voucherId}/history`, { token, signal: abort.signal })).data;
      const step = d.step || 1;
      hist = { step, to: d.to || 0, points: (d.points || []).map((p) => ({ t: p.t, rps: p.requests / step, ok: ((p.answers || {}).OK || 0) / step })) };
      livePoints = livePoints.filter((p) => p.t >= hist.to + step);
      chart.dataset.points = String(hist.points.length);
      chart.dataset.requests = String(d.requests || 0);
      chart.dataset.step = String(step);
      draw();
    } catch (e) {
      if (!abort.signal.aborted) chart.dataset.error = e.code || String(e);
    }
  }

  // draw paints the chart at the size it is shown: its CSS box times the
  // screen's pixel ratio, in CSS pixels. Time runs left to right from the
  // first answer to the last (a minute at least); each column of a few
  // pixels shows the busiest second it covers.
  function draw() {
    const ctx = chart.getContext('2d');
    if (!ctx) return;
    const ratio = window.devicePixelRatio || 1;
    const w = chart.clientWidth;
    const hgt = chart.clientHeight;
    if (!w || !hgt) return;
    const pw = Math.round(w * ratio);
    const ph = Math.round(hgt * ratio);
    if (chart.width !== pw || chart.height !== ph) {
      chart.width = pw;
      chart.height = ph;
    }
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, w, hgt);
    const css = getComputedStyle(chart);
    ctx.font = '12px system-ui, sans-serif';
    const muted = css.getPropertyValue('--muted') || '#888';
    const points = hist.points.concat(livePoints);
    if (!points.length) {
      ctx.fillStyle = muted;
      ctx.textBaseline = 'middle';
      ctx.fillText('No request yet: the curve starts with the first.', 8, hgt / 2);
      setText(chartSpan, '');
      return;
    }
    // A step of nothing before the first answer (the curve rises from
    // zero), half a minute at least.
    const step = hist.step;
    const t0 = points[0].t - step;
    const t1 = Math.max(points[points.length - 1].t + 2 * step, t0 + 30);
    const bottom = hgt - 16; // room for the times below
    const ncol = Math.max(1, Math.floor((w - 16) / 4));
    const cols = Array.from({ length: ncol }, () => null);
    for (const p of points) {
      const c = Math.min(ncol - 1, Math.floor(((p.t - t0) / (t1 - t0)) * ncol));
      const cur = cols[c] || { rps: 0, ok: 0 };
      cols[c] = { rps: Math.max(cur.rps, p.rps), ok: Math.max(cur.ok, p.ok) };
    }
    const top = Math.max(1, ...points.map((p) => Math.max(p.rps, p.ok)));
    const cw = (w - 16) / ncol;
    const x = (c) => 8 + cw * (c + 0.5);
    const y = (v) => bottom - ((bottom - 16) * v) / top;
    ctx.fillStyle = css.getPropertyValue('--ok') || '#2a8';
    cols.forEach((p, c) => p && p.ok > 0 && ctx.fillRect(x(c) - Math.max(1, cw * 0.4), y(p.ok), Math.max(2, cw * 0.8), bottom - y(p.ok)));
    ctx.strokeStyle = css.getPropertyValue('--line') || '#36c';
    ctx.lineWidth = 2;
    ctx.beginPath();
    // Columns without answers are zero: the line drops to the axis.
    cols.forEach((p, c) => (c ? ctx.lineTo(x(c), y(p ? p.rps : 0)) : ctx.moveTo(x(c), y(p ? p.rps : 0))));
    ctx.stroke();
    ctx.fillStyle = muted;
    ctx.textBaseline = 'top';
    ctx.fillText('max ' + Math.round(top * 10) / 10 + '/s', 4, 2);
    const at = (t) => new Date(t * 1000).toLocaleTimeString();
    ctx.textBaseline = 'bottom';
    ctx.fillText(at(t0), 8, hgt);
    const end = at(t1);
    ctx.fillText(end, w - 8 - ctx.measureText(end).width, hgt);
    setText(chartSpan, `, ${new Date(t0 * 1000).toLocaleString()} to ${at(t1)}` + (step > 1 ? ` (points of ${step} s)` : ''));
  }

  // Redrawn when its box changes (a rotated phone, a resized window).
  const resized = new ResizeObserver(() => draw());
  resized.observe(chart);
  abort.signal.addEventListener('abort', () => resized.disconnect());

  function setState(name, text) {
    state.dataset.state = name;
    state.className = 'state ' + name;
    setText(state, text);
  }

  // Connect, and reconnect (1 s, doubling to 10 s) unless the server refused
  // the stream for good or the page left the dashboard.
  (async () => {
    let wait = 1000;
    while (!abort.signal.aborted) {
      try {
        await stream(`/admin/vouchers/${voucherId}/live`, {
          token, signal: abort.signal,
          onEvent(name, data) {
            if (name !== 'snapshot') return;
            // The stream's badge says the numbers update, not that the
            // sale is on (the phase badge says that).
            if (state.dataset.state !== 'open') loadHistory();
            setState('open', 'connected');
            wait = 1000;
            show(JSON.parse(data));
          },
        });
        setState('reconnecting', 'reconnecting…');
      } catch (e) {
        if (abort.signal.aborted) return;
        if (e instanceof ApiError && FINAL.has(e.code)) {
          setState('error', e.code + ': ' + e.message);
          return;
        }
        setState('reconnecting', 'reconnecting… (' + (e.message || e) + ')');
      }
      await new Promise((r) => setTimeout(r, wait));
      wait = Math.min(10000, wait * 2);
    }
  })();
}

// INSTANCE_COLUMNS label the columns of the instances.
const INSTANCE_COLUMNS = ['instance', 'lock', 'order', 'this voucher', 'requests / s (all)', 'requests (all vouchers)', 'published'];

function tile(label, ...content) {
  return h('div', { class: 'tile' }, h('div', { class: 'label' }, label), h('div', { class: 'value' }, ...content));
}

// moneyTiles is the sale's money at the pay providers, from the audit
// (GET /admin/vouchers/:id/audit, every 5 s): taken by paid trades,
// refunded, payments that came too late (refunded), refunds still owed.
// Hidden while no real provider is enabled.
function moneyTiles(voucherId, token, timers) {
  const f = {};
  const num = (name) => (f[name] = h('span', { class: 'num', 'data-field': 'payments.' + name }, '–'));
  const card = h('section', { class: 'card', id: 'money', hidden: true },
    h('h2', {}, 'Money'),
    h('div', { class: 'tiles' },
      tile('Taken', num('taken'), h('div', { class: 'muted small' }, 'paid at Alipay or WeChat Pay')),
      tile('Refunded', num('refunded'), h('div', { class: 'muted small' }, 'confirmed back with the buyers')),
      tile('Late payments', num('late'), h('div', { class: 'muted small' }, 'paid after the order ended: refunded')),
      tile('Refunds owed', num('refundsOwed'), h('div', { class: 'muted small' }, 'retried with backoff'))),
    h('p', { class: 'muted small' }, 'Rejected notifications (forged, altered, another app\'s, a wrong amount): seckill_pay_notifications_total in Prometheus.'));
  async function load() {
    try {
      const p = (await api('GET', `/admin/vouchers/${voucherId}/audit`, { token })).data.payments;
      card.hidden = !p;
      if (!p) return;
      setText(f.taken, money(p.taken));
      setText(f.refunded, money(p.refunded));
      setText(f.late, p.late);
      setText(f.refundsOwed, p.refundsOwed);
    } catch {
      // the next round tries again
    }
  }
  load();
  timers.push(setInterval(load, 5000));
  return card;
}

// refundList is the sale's refunds at the pay providers (GET
// /admin/vouchers/:id/refunds, every 5 s): those owed or processing first,
// with their tries, the next try and why the last one did not finish. The
// route exists only while a real provider is enabled: a 404 hides the card
// for good.
function refundList(voucherId, token, timers) {
  const rows = h('tbody', { id: 'refunds' });
  const summary = h('p', { id: 'refunds-summary', class: 'muted small' });
  const card = h('section', { class: 'card', id: 'refunds-card', hidden: true },
    h('h2', {}, 'Refunds'), summary,
    scroll(h('table', { class: 'refunds cards' }, h('thead', {}, h('tr', {}, REFUND_COLUMNS.map((t, i) => h('th', { class: i === 2 || i === 5 ? 'r' : '' }, t)))), rows)));
  let shown = ''; // the list as last rendered: rows are rebuilt only when it changed
  let timer = 0;
  async function load() {
    if (document.hidden) return;
    let list;
    try {
      list = (await api('GET', `/admin/vouchers/${voucherId}/refunds`, { token })).data || [];
    } catch (e) {
      if (e instanceof ApiError && (e.status === 404 || e.code === 'NOT_FOUND')) {
        card.hidden = true;
        clearInterval(timer);
      }
      return; // else the next round tries again
    }
    card.hidden = false;
    const sig = JSON.stringify(list);
    if (sig === shown) return;
    shown = sig;
    const open = list.filter((r) => r.state !== 'done').length;
    setText(summary, !list.length ? 'No refund yet.'
      : open ? `${open} of ${list.length} not done yet: retried with backoff until the provider confirms the money back.`
        : `All ${list.length} done: the money is back with the buyers.`);
    rows.replaceChildren(...list.map((r) => labelled(h('tr', { 'data-refund': r.refundNo, 'data-state': r.state, class: r.state === 'done' ? '' : 'open' },
      h('td', {}, shortId(r.orderId)),
      h('td', {}, REFUND_REASON_WORDS[r.reason] || r.reason, h('div', { class: 'muted small' }, PROVIDER_WORDS[r.provider] || r.provider)),
      h('td', { class: 'r' }, money(r.amount)),
      h('td', {}, h('span', { class: 'refund-state ' + r.state }, REFUND_STATE_WORDS[r.state] || r.state)),
      h('td', { class: 'small' }, r.state === 'done' ? (r.refundTime ? localTime(r.refundTime) : '–') : r.nextTry ? localTime(r.nextTry) : 'now'),
      h('td', { class: 'r' }, String(r.attempts)),
      h('td', { class: 'small note' }, r.note || '', h('div', { class: 'muted' }, h('code', { title: 'refund number at the provider' }, r.refundNo)))), REFUND_COLUMNS)));
  }
  load();
  timer = setInterval(load, 5000);
  timers.push(timer);
  return card;
}

// REFUND_COLUMNS label the columns of the refunds.
const REFUND_COLUMNS = ['order', 'why', 'amount', 'state', 'next try / done', 'tries', 'last note'];
const REFUND_STATE_WORDS = { owed: 'owed', processing: 'processing', done: 'done' };
const REFUND_REASON_WORDS = {
  buyer: 'asked by the buyer', late_payment: 'late payment', unreachable_provider: 'trade given up',
  duplicate_payment: 'paid twice',
};
const PROVIDER_WORDS = { alipay: 'Alipay', wechat: 'WeChat Pay' };
