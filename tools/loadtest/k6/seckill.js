// seckill.js: the flash-sale experiment for k6 (v1.x).
//
// Many users buy one seckill voucher at once, each several times, across one
// or more instances. Afterwards the audit must show that nothing was
// oversold and nobody bought twice. tools/loadtest/README.md describes the phases
// (setup, default, burst, life, teardown), the counters and the environment.

import http from 'k6/http';
import exec from 'k6/execution';
import { SharedArray } from 'k6/data';
import { Counter, Trend } from 'k6/metrics';
import { sleep } from 'k6';

function env(name, def) {
  const v = __ENV[name];
  return v === undefined || v === '' ? def : v;
}

function intEnv(name, def) {
  const raw = env(name, String(def));
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) {
    throw new Error(`${name}: "${raw}" is not a non-negative integer`);
  }
  return n;
}

function shareEnv(name) {
  const raw = env(name, '0');
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0 || n > 1) {
    throw new Error(`${name}: "${raw}" is not a share between 0 and 1`);
  }
  return n;
}

function readLines(path) {
  return open(path)
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .map((l) => {
      const i = l.indexOf(',');
      if (i <= 0) {
        throw new Error(`${path}: line "${l.slice(0, 40)}" is not userId,token`);
      }
      return [l.slice(0, i), l.slice(i + 1)];
    });
}

const BASE_URLS = env('BASE_URLS', 'http://127.0.0.1:8080')
  .split(',')
  .map((s) => s.trim().replace(/\/+$/, ''))
  .filter((s) => s !== '');
const TOKENS_FILE = env('TOKENS_FILE', 'tokens.csv');
const SCENARIO = env('SCENARIO', 'random');
const DUPS = intEnv('DUPS', 3);
const STOCK = intEnv('STOCK', 100);
const VUS_WANTED = intEnv('VUS', 50);
const SPACING_MS = intEnv('SPACING_MS', 0);
const LOG_ORDERS = env('LOG_ORDERS', '1') === '1';
const FAIL_ON_DUPREJ = env('FAIL_ON_DUPREJ', '0') === '1';
const REQUEST_TIMEOUT = env('REQUEST_TIMEOUT', '30s');
const SUMMARY_FILE = env('SUMMARY_FILE', '');
const PAY_SHARE = shareEnv('PAY_SHARE');
const CANCEL_SHARE = shareEnv('CANCEL_SHARE');
const SETTLE_S = intEnv('SETTLE_S', 0);
if (PAY_SHARE + CANCEL_SHARE > 1) {
  throw new Error('PAY_SHARE + CANCEL_SHARE must be at most 1');
}
const LIFE = PAY_SHARE + CANCEL_SHARE > 0;

const users = new SharedArray('users', () => {
  const all = readLines(TOKENS_FILE);
  const n = intEnv('USERS', all.length);
  if (n < 1 || n > all.length) {
    throw new Error(`USERS=${n}: ${TOKENS_FILE} holds ${all.length} users`);
  }
  return all.slice(0, n);
});

const ADMIN_TOKEN = (() => {
  const file = env('ADMIN_TOKENS_FILE', '');
  return file !== '' ? readLines(file)[0][1] : env('ADMIN_TOKEN', '');
})();

// Outcome counters, one per response code of docs/contract.md plus OTHER (an
// unexpected body) and TRANSPORT (no HTTP response at all).
const CODES = [
  'OK', 'SOLD_OUT', 'DUPLICATE_ORDER', 'SECKILL_NOT_STARTED', 'SECKILL_ENDED',
  'VOUCHER_NOT_FOUND', 'INVALID_ARGUMENT', 'UNAUTHORIZED', 'FORBIDDEN',
  'RATE_LIMITED', 'UNAVAILABLE', 'INTERNAL', 'OTHER', 'TRANSPORT',
];
const outcome = {};
for (const c of CODES) {
  outcome[c] = new Counter(`code_${c}`);
}
const purchases = new Counter('purchases');
const purchaseLatency = new Trend('purchase_duration', true);
const violations = new Counter('invariant_violations');
// Units sold again after a cancel or an expiry, and units sold twice (0).
const soldAgain = new Counter('sold_again');
const soldTwiceCount = new Counter('sold_twice');

// What buyers did after a purchase and what the server answered:
// life_<action>_<code>, as the Go driver's summary lines.
const LIFE_CODES = [
  'OK', 'ORDER_EXPIRED', 'ORDER_CANCELLED', 'ORDER_PAID', 'ORDER_PENDING',
  'ORDER_NOT_FOUND', 'RATE_LIMITED', 'UNAVAILABLE', 'INTERNAL', 'OTHER', 'TRANSPORT',
];
const life = { walk_away: new Counter('life_walk_away') };
for (const a of ['pay', 'cancel']) {
  for (const c of LIFE_CODES) {
    life[`${a}_${c}`] = new Counter(`life_${a}_${c}`);
  }
}

function scenarios() {
  if (SCENARIO === 'burst') {
    return {
      burst: {
        executor: 'shared-iterations',
        exec: 'burst',
        iterations: users.length,
        vus: Math.max(1, Math.min(VUS_WANTED, users.length)),
        maxDuration: env('MAX_DURATION', '5m'),
      },
    };
  }
  if (SCENARIO !== 'random') {
    throw new Error(`SCENARIO: "${SCENARIO}" is not random or burst`);
  }
  const duration = env('DURATION', '');
  const rate = intEnv('RATE', 0);
  if (duration !== '' && rate > 0) {
    return {
      random: {
        executor: 'constant-arrival-rate',
        rate,
        timeUnit: '1s',
        duration,
        preAllocatedVUs: Math.max(1, VUS_WANTED),
        maxVUs: Math.max(1, VUS_WANTED) * 4,
      },
    };
  }
  if (duration !== '') {
    return { random: { executor: 'constant-vus', vus: Math.max(1, VUS_WANTED), duration } };
  }
  const iterations = intEnv('ITERATIONS', users.length * DUPS);
  return {
    random: {
      executor: 'shared-iterations',
      iterations: Math.max(1, iterations),
      vus: Math.max(1, Math.min(VUS_WANTED, iterations)),
      maxDuration: env('MAX_DURATION', '5m'),
    },
  };
}

export const options = {
  scenarios: scenarios(),
  // 409 refusals are the business working, not errors.
  thresholds: {
    invariant_violations: ['count==0'],
    purchases: ['count>0'],
  },
  summaryTrendStats: ['avg', 'min', 'med', 'p(95)', 'p(99)', 'max'],
  setupTimeout: '60s',
  teardownTimeout: '60s',
  discardResponseBodies: false,
};

http.setResponseCallback(http.expectedStatuses(200, 409));

function adminParams() {
  if (ADMIN_TOKEN === '') {
    throw new Error('ADMIN_TOKENS_FILE or ADMIN_TOKEN is required');
  }
  return {
    headers: { authorization: ADMIN_TOKEN, 'content-type': 'application/json' },
    tags: { name: 'admin' },
    responseCallback: http.expectedStatuses(200),
  };
}

function envelope(res) {
  try {
    return JSON.parse(res.body);
  } catch (e) {
    return null;
  }
}

export function setup() {
  if (BASE_URLS.length === 0) {
    throw new Error('BASE_URLS is empty');
  }
  const given = env('VOUCHER_ID', '');
  if (given !== '') {
    return { voucherId: given };
  }
  let shopId = env('SHOP_ID', '');
  if (shopId === '') {
    const shop = {
      name: 'k6 load test shop', typeId: 1, address: 'loopback 1', x: 120.15, y: 30.28,
    };
    const res = http.post(`${BASE_URLS[0]}/shop`, JSON.stringify(shop), adminParams());
    const env_ = envelope(res);
    if (res.status !== 200 || !env_ || !env_.success) {
      throw new Error(`create shop: status ${res.status}: ${String(res.body).slice(0, 200)}`);
    }
    shopId = String(env_.data);
  }
  const now = Date.now();
  const body = {
    shopId: Number(shopId),
    title: `k6 seckill ${new Date(now).toISOString()}`,
    subTitle: 'load test',
    rules: 'one per user',
    payValue: 8000,
    actualValue: 10000,
    type: 1,
    stock: STOCK,
    beginTime: new Date(now - 60 * 1000).toISOString(),
    endTime: new Date(now + 24 * 3600 * 1000).toISOString(),
  };
  const res = http.post(`${BASE_URLS[0]}/voucher/seckill`, JSON.stringify(body), adminParams());
  const env_ = envelope(res);
  if (res.status !== 200 || !env_ || !env_.success) {
    throw new Error(`publish voucher: status ${res.status}: ${String(res.body).slice(0, 200)}`);
  }
  console.log(`VOUCHER ${env_.data} stock=${STOCK}`);
  return { voucherId: String(env_.data) };
}

function params(token) {
  return {
    headers: { authorization: token },
    tags: { name: 'POST /voucher-order/seckill/:id' },
    timeout: REQUEST_TIMEOUT,
  };
}

// record counts one purchase response and logs its order id on success;
// it returns the order id of a 200, '' otherwise.
function record(res, user, base) {
  purchases.add(1);
  if (res.status === 0) {
    outcome.TRANSPORT.add(1);
    return '';
  }
  purchaseLatency.add(res.timings.duration);
  const body = envelope(res);
  if (res.status === 200 && body && body.success === true && typeof body.data === 'string') {
    outcome.OK.add(1);
    if (LOG_ORDERS) {
      console.log(`ORDER ${body.data} ${user[0]} ${base}`);
    }
    return body.data;
  }
  const code = body && typeof body.code === 'string' ? body.code : '';
  if (code !== '' && code !== 'OK' && outcome[code] !== undefined) {
    outcome[code].add(1);
    return '';
  }
  outcome.OTHER.add(1);
  console.warn(`unexpected response: status ${res.status}: ${String(res.body).slice(0, 200)}`);
  return '';
}

function lifeParams(token, action) {
  return {
    headers: { authorization: token },
    tags: { name: `POST /voucher-order/:id/${action}` },
    timeout: REQUEST_TIMEOUT,
    responseCallback: http.expectedStatuses(200, 409),
  };
}

// afterPurchase: the buyer of orderId pays, cancels or walks away, on the
// instance that sold; an order still pending (async) is retried for 30 s.
async function afterPurchase(user, base, orderId) {
  if (!LIFE || orderId === '') {
    return;
  }
  const r = Math.random();
  const action = r < PAY_SHARE ? 'pay' : r < PAY_SHARE + CANCEL_SHARE ? 'cancel' : '';
  if (action === '') {
    life.walk_away.add(1);
    return;
  }
  const deadline = Date.now() + 30 * 1000;
  for (;;) {
    const res = await http.asyncRequest('POST', `${base}/voucher-order/${orderId}/${action}`, null,
      lifeParams(user[1], action));
    const body = envelope(res);
    let code = 'TRANSPORT';
    if (res.status === 200 && body && body.success === true) {
      code = 'OK';
    } else if (body && typeof body.code === 'string' && body.code !== '') {
      code = LIFE_CODES.includes(body.code) ? body.code : 'OTHER';
    } else if (res.status !== 0) {
      code = 'OTHER';
    }
    if (code === 'ORDER_PENDING' && Date.now() < deadline) {
      await pause(50);
      continue;
    }
    if (code === 'OTHER' || code === 'INTERNAL') {
      console.warn(`unexpected ${action} answer: status ${res.status}: ${String(res.body).slice(0, 200)}`);
    }
    life[`${action}_${code}`].add(1);
    return;
  }
}

// default: one purchase by a random user on a random instance, then the
// buyer's pay, cancel or walk away.
export default async function (data) {
  const user = users[Math.floor(Math.random() * users.length)];
  const base = BASE_URLS[Math.floor(Math.random() * BASE_URLS.length)];
  const res = http.post(`${base}/voucher-order/seckill/${data.voucherId}`, null, params(user[1]));
  await afterPurchase(user, base, record(res, user, base));
}

function pause(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// burst: user number iterationInTest fires DUPS purchases, SPACING_MS apart,
// round-robin over the instances, without waiting for the answers in between.
export async function burst(data) {
  const user = users[exec.scenario.iterationInTest % users.length];
  const pending = [];
  for (let i = 0; i < DUPS; i++) {
    if (i > 0 && SPACING_MS > 0) {
      await pause(SPACING_MS);
    }
    const base = BASE_URLS[i % BASE_URLS.length];
    pending.push(
      http
        .asyncRequest('POST', `${base}/voucher-order/seckill/${data.voucherId}`, null, params(user[1]))
        .then((res) => afterPurchase(user, base, record(res, user, base))),
    );
  }
  await Promise.all(pending);
}

function readAudit(data) {
  const res = http.get(`${BASE_URLS[0]}/admin/vouchers/${data.voucherId}/audit`, adminParams());
  const body = envelope(res);
  if (res.status !== 200 || !body || !body.success) {
    return { error: `audit: status ${res.status}: ${String(res.body).slice(0, 200)}` };
  }
  return { audit: body.data };
}

// settled: nothing unpaid or pending, no give-back due.
function settled(a) {
  return a.unpaid === 0 && !(a.pending > 0) && !(a.givebacksDue > 0);
}

// soldTwice counts units the figures show sold more than once: live orders
// (and, in async mode, Redis stock, pending and give-backs due) beyond the
// initial stock. It must be 0.
function soldTwice(a) {
  let over = Math.max(0, a.stock + a.unpaid + a.paid - a.initialStock);
  if (a.redisStock !== undefined) {
    const redis = a.redisStock + a.unpaid + a.paid + (a.pending || 0) + (a.givebacksDue || 0);
    over = Math.max(over, redis - a.initialStock);
  }
  return over;
}

// restated lists the lifecycle invariants of docs/contract.md the audit
// shows broken, as the Go driver judges them.
function restated(a) {
  const failed = [];
  if (a.stock + a.unpaid + a.paid !== a.initialStock) {
    failed.push(`2: stock ${a.stock} + unpaid ${a.unpaid} + paid ${a.paid} != initial ${a.initialStock}`);
  }
  if (a.redisStock !== undefined) {
    const due = a.givebacksDue || 0;
    const sum = a.redisStock + a.unpaid + a.paid + (a.pending || 0) + due;
    if (sum !== a.initialStock) {
      failed.push(`5: redis stock ${a.redisStock} + unpaid ${a.unpaid} + paid ${a.paid} + pending ${a.pending} + give-backs due ${due} = ${sum} != initial ${a.initialStock}`);
    }
  }
  if (a.paidCancelled > 0) {
    failed.push(`6: ${a.paidCancelled} paid orders cancelled`);
  }
  return failed;
}

// teardown waits for the expiry to settle (SETTLE_S), reads the audit and
// records its verdict.
export function teardown(data) {
  let got = readAudit(data);
  const deadline = Date.now() + SETTLE_S * 1000;
  while (SETTLE_S > 0 && Date.now() < deadline && (got.error || !settled(got.audit))) {
    sleep(0.2);
    got = readAudit(data);
  }
  if (got.error) {
    violations.add(1, { invariant: 'audit' });
    console.error(got.error);
    return;
  }
  // The server's audit judges the invariants (model.Counts, the same rules
  // the tests and the harness use); the script reads its verdict and
  // restates the lifecycle ones.
  const a = got.audit;
  const failed = [];
  if (a.oversold) failed.push(`1: oversold: orders ${a.orders} > initial stock ${a.initialStock}`);
  if (!a.consistent) {
    const redis = a.redisStock !== undefined ? `, redis stock ${a.redisStock}, pending ${a.pending}` : '';
    failed.push(`audit: not consistent (orders ${a.orders}, distinct users ${a.distinctUsers}, initial ${a.initialStock}, stock ${a.stock}${redis})`);
  }
  if (FAIL_ON_DUPREJ && a.duplicateRejections > 0) {
    failed.push(`lock: ${a.duplicateRejections} duplicates stopped only by the unique key`);
  }
  // The lifecycle's statements, judged once nothing is in flight (the
  // server's verdict above covers the other runs).
  if (LIFE || SETTLE_S > 0) {
    failed.push(...restated(a));
    if (SETTLE_S > 0 && !settled(a)) {
      failed.push(`settle: ${a.unpaid} unpaid, pending ${a.pending || 0}, give-backs due ${a.givebacksDue || 0} after ${SETTLE_S} s`);
    }
    const twice = soldTwice(a);
    soldTwiceCount.add(twice);
    soldAgain.add(Math.max(0, a.orders + a.cancelled - a.initialStock));
    if (twice > 0) {
      failed.push(`sold twice: ${twice} unit(s)`);
    }
  }
  console.log(`AUDIT ${JSON.stringify(a)}`);
  for (const f of failed) {
    violations.add(1, { invariant: f.split(':')[0] });
    console.error(`invariant violated: ${f}`);
  }
}

function metricValue(data, name, field) {
  const m = data.metrics[name];
  return m && m.values && m.values[field] !== undefined ? m.values[field] : 0;
}

// handleSummary prints a short report and, with SUMMARY_FILE, KEY=VALUE lines.
export function handleSummary(data) {
  const seconds = data.state.testRunDurationMs / 1000;
  const n = metricValue(data, 'purchases', 'count');
  const lines = [
    `purchases=${n}`,
    `seconds=${seconds.toFixed(3)}`,
    `rps=${seconds > 0 ? (n / seconds).toFixed(1) : '0'}`,
    `p50_ms=${metricValue(data, 'purchase_duration', 'med').toFixed(1)}`,
    `p95_ms=${metricValue(data, 'purchase_duration', 'p(95)').toFixed(1)}`,
    `p99_ms=${metricValue(data, 'purchase_duration', 'p(99)').toFixed(1)}`,
    `driver_violations=${metricValue(data, 'invariant_violations', 'count')}`,
  ];
  for (const c of CODES) {
    lines.push(`code_${c}=${metricValue(data, `code_${c}`, 'count')}`);
  }
  if (LIFE || SETTLE_S > 0) {
    lines.push(`sold_again=${metricValue(data, 'sold_again', 'count')}`);
    lines.push(`sold_twice=${metricValue(data, 'sold_twice', 'count')}`);
    for (const k of Object.keys(life).sort()) {
      const n = metricValue(data, `life_${k}`, 'count');
      if (n > 0) {
        lines.push(`life_${k}=${n}`);
      }
    }
  }
  const text = `\nk6 seckill summary (${SCENARIO}, ${BASE_URLS.length} base URL(s))\n  ${lines.join('\n  ')}\n`;
  const out = { stdout: text };
  if (SUMMARY_FILE !== '') {
    out[SUMMARY_FILE] = `${lines.join('\n')}\n`;
  }
  return out;
}

