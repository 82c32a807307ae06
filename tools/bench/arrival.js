// arrival.js: the latency run of `make bench` (k6 v1.x). Requests arrive at
// a constant rate, whatever the latency (an open model: a slow server does
// not slow the arrivals down, unlike wrk's closed loop), each one the
// seckill of a new user on one voucher.
//
// Environment (set by tools/bench/run.sh and by `harness bench`, tools/cmd/harness):
//   BENCH_BASE      base URL, e.g. http://127.0.0.1:18181
//   BENCH_VOUCHER   voucher id
//   BENCH_PATH      instead of the seckill, GET this path (the no-op
//                   endpoint: the latency floor of the same machine and client)
//   BENCH_TOKENS    `seckill tokens` output (userId,token lines)
//   BENCH_RATE      arrivals per second
//   BENCH_DURATION  seconds
//   BENCH_VUS       pre-allocated VUs (more are added up to 8x when needed)
//   BENCH_SUMMARY   where handleSummary writes the JSON summary
//
// Iteration i of the test uses token i: every request is a different user.
// An iteration beyond the tokens wraps around and counts in `wrapped` (the
// run then had too few tokens). Responses are counted by status and by the
// envelope's code in the counters below; the bench reads them, and the
// latency percentiles, from the summary.

import http from 'k6/http';
import exec from 'k6/execution';
import { SharedArray } from 'k6/data';
import { Counter } from 'k6/metrics';

function need(name) {
  const v = __ENV[name];
  if (v === undefined || v === '') {
    throw new Error(`arrival.js: ${name} is not set`);
  }
  return v;
}

function positive(name) {
  const n = Number(need(name));
  if (!Number.isInteger(n) || n <= 0) {
    throw new Error(`arrival.js: ${name}=${__ENV[name]} is not a positive integer`);
  }
  return n;
}

const BASE = need('BENCH_BASE');
const PATH = __ENV.BENCH_PATH || '';
const VOUCHER = PATH === '' ? positive('BENCH_VOUCHER') : 0;
const RATE = positive('BENCH_RATE');
const DURATION = positive('BENCH_DURATION');
const VUS = positive('BENCH_VUS');
const TOKENS_FILE = need('BENCH_TOKENS');
const SUMMARY = need('BENCH_SUMMARY');

const tokens = new SharedArray('tokens', () =>
  open(TOKENS_FILE)
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .map((l) => {
      const i = l.indexOf(',');
      if (i <= 0) {
        throw new Error(`${TOKENS_FILE}: "${l.slice(0, 40)}" is not userId,token`);
      }
      return l.slice(i + 1);
    }),
);

const status200 = new Counter('status_200');
const status409 = new Counter('status_409');
const status429 = new Counter('status_429');
const status5xx = new Counter('status_5xx');
const statusOther = new Counter('status_other');
const codeDuplicate = new Counter('code_DUPLICATE_ORDER');
const codeSoldOut = new Counter('code_SOLD_OUT');
const codeUnavailable = new Counter('code_UNAVAILABLE');
const codeOther = new Counter('code_other');
const wrapped = new Counter('wrapped');

export const options = {
  scenarios: {
    arrival: {
      executor: 'constant-arrival-rate',
      rate: RATE,
      timeUnit: '1s',
      duration: `${DURATION}s`,
      preAllocatedVUs: VUS,
      maxVUs: 8 * VUS,
    },
  },
  summaryTrendStats: ['avg', 'min', 'med', 'p(50)', 'p(90)', 'p(95)', 'p(99)', 'max'],
  // One connection per VU, kept alive, as wrk does.
  noConnectionReuse: false,
};

const url = PATH === '' ? `${BASE}/voucher-order/seckill/${VOUCHER}` : `${BASE}${PATH}`;

export default function () {
  const i = exec.scenario.iterationInTest;
  if (i >= tokens.length) {
    wrapped.add(1);
  }
  const params = { headers: { authorization: tokens[i % tokens.length] }, timeout: '10s' };
  const res = PATH === '' ? http.post(url, null, params) : http.get(url, params);
  switch (true) {
    case res.status === 200:
      status200.add(1);
      return;
    case res.status === 409:
      status409.add(1);
      break;
    case res.status === 429:
      status429.add(1);
      break;
    case res.status >= 500:
      status5xx.add(1);
      break;
    default:
      statusOther.add(1);
  }
  let code = '';
  try {
    code = res.json('code') || '';
  } catch (e) {
    code = '';
  }
  if (code === 'DUPLICATE_ORDER') {
    codeDuplicate.add(1);
  } else if (code === 'SOLD_OUT') {
    codeSoldOut.add(1);
  } else if (code === 'UNAVAILABLE') {
    codeUnavailable.add(1);
  } else {
    codeOther.add(1);
  }
}

export function handleSummary(data) {
  return { [SUMMARY]: JSON.stringify(data, null, 1) };
}
