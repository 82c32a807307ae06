// The API client. Every answer is the envelope {success, data, total} or
// {success: false, code, errorMsg}. Refusals are read from the envelope,
// not from the HTTP status. So the page works with SECKILL_API_STYLE=rest
// (refusals carry their status) and =heima (refusals are 200).

// ApiError is a refusal or a failure: status (0 when the server could not be
// reached), code (INVALID_ARGUMENT, SOLD_OUT, ...) and the server's message.
// retryAfter is the Retry-After header's wait in seconds (0 when none).
export class ApiError extends Error {
  constructor(status, code, message, retryAfter = 0) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }
}

// Plain words for each refusal, shown beside its code. A function gets the
// error (for the wait of RATE_LIMITED or the server's detail).
const WORDS = {
  SOLD_OUT: 'Sold out: every unit has been bought.',
  DUPLICATE_ORDER: 'You already bought this voucher (one per person).',
  SECKILL_NOT_STARTED: 'The sale has not started yet.',
  SECKILL_ENDED: 'The sale has ended.',
  RATE_LIMITED: (e) => (e.retryAfter ? `Too many tries: wait ${e.retryAfter} s, then try again.` : 'Too many tries: wait a moment.'),
  UNAUTHORIZED: 'Your login has ended: log in again.',
  FORBIDDEN: 'This needs an admin token.',
  VOUCHER_NOT_FOUND: 'No voucher has this id.',
  SHOP_NOT_FOUND: 'No shop has this id.',
  ORDER_NOT_FOUND: 'No such order of yours.',
  ORDER_CANCELLED: 'This order was cancelled: it can no longer be paid.',
  ORDER_EXPIRED: 'The time to pay this order is over: it expired and its unit went back on sale.',
  ORDER_PAID: 'This order is paid: it can no longer be cancelled.',
  ORDER_PENDING: 'This order is still being written: try again in a moment.',
  NOT_ADMITTED: 'Join the waiting room first: you can buy when it is your turn.',
  VOUCHER_NOT_EDITABLE: 'Its sale has started or it is closed: it can only be closed now.',
  INVALID_ARGUMENT: (e) => 'Please check: ' + e.message.replace(/^invalid /, '') + '.',
  UNAVAILABLE: 'The service is busy: try again in a moment.',
  NETWORK: 'The server cannot be reached: check the connection.',
  INTERNAL: 'Something went wrong on the server.',
};

// explain returns plain words for an error (its code's, else its message).
export function explain(e) {
  if (!(e instanceof ApiError)) return String(e);
  const w = WORDS[e.code];
  return typeof w === 'function' ? w(e) : w || e.message;
}

// The server's clock, from the Date header of its answers. The server's
// time lies in [date, date + 1 s) at some moment between sending and
// receiving, which bounds the offset. Countdowns use the middle of the
// bounds. So a browser whose clock is wrong still counts down to the
// server's window.
let offsetLo = -Infinity;
let offsetHi = Infinity;

function noteDate(res, sent, received) {
  const t = Date.parse(res.headers.get('date') || '');
  if (isNaN(t)) return;
  const lo = t - received;
  const hi = t + 1000 - sent;
  if (Math.max(offsetLo, lo) > Math.min(offsetHi, hi)) {
    offsetLo = lo; // the clock jumped: start over
    offsetHi = hi;
    return;
  }
  offsetLo = Math.max(offsetLo, lo);
  offsetHi = Math.min(offsetHi, hi);
}

// serverNow is the server's time now, in milliseconds since the epoch.
export function serverNow() {
  if (!isFinite(offsetLo) || !isFinite(offsetHi)) return Date.now();
  return Date.now() + (offsetLo + offsetHi) / 2;
}

// api calls the API and returns the envelope ({data, total}); it throws
// ApiError for a refusal or a failure.
export async function api(method, path, { token, body, signal, headers: extra } = {}) {
  const headers = { ...extra };
  if (token) headers.authorization = token;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const sent = Date.now();
  let res;
  try {
    res = await fetch(path, {
      method, headers, signal, cache: 'no-store',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'NETWORK', 'the server cannot be reached');
  }
  noteDate(res, sent, Date.now());
  return envelope(res);
}

// envelope reads an answer's envelope; it throws ApiError unless success.
export async function envelope(res) {
  let env = null;
  try {
    env = await res.json();
  } catch {
    // not JSON: handled below
  }
  if (!env || typeof env !== 'object') {
    throw new ApiError(res.status, 'HTTP_' + res.status, `HTTP ${res.status}`);
  }
  if (!env.success) {
    const wait = Number(res.headers.get('retry-after')) || 0;
    throw new ApiError(res.status, env.code || 'HTTP_' + res.status, env.errorMsg || `HTTP ${res.status}`, wait);
  }
  return env;
}

// stream reads a Server-Sent Events stream with fetch (which, unlike
// EventSource, can send the authorization header, so the token never goes
// into a URL) and calls onEvent(name, data) per event. It returns when the
// server ends the stream and throws ApiError when the server refused it.
export async function stream(path, { token, signal, onEvent }) {
  let res;
  try {
    res = await fetch(path, {
      headers: { authorization: token, accept: 'text/event-stream' }, signal, cache: 'no-store',
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'NETWORK', 'the server cannot be reached');
  }
  const ctype = res.headers.get('content-type') || '';
  if (!res.ok || !ctype.startsWith('text/event-stream')) {
    await envelope(res); // throws the refusal
    throw new ApiError(res.status, 'HTTP_' + res.status, 'not an event stream');
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value.replace(/\r\n?/g, '\n');
    let end;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      let name = 'message';
      const data = [];
      for (const line of block.split('\n')) {
        if (line === '' || line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const key = colon < 0 ? line : line.slice(0, colon);
        let val = colon < 0 ? '' : line.slice(colon + 1);
        if (val.startsWith(' ')) val = val.slice(1);
        if (key === 'event') name = val;
        else if (key === 'data') data.push(val);
      }
      if (data.length) onEvent(name, data.join('\n'));
    }
  }
}

// Tokens live in sessionStorage: they go when the tab closes.
export const tokens = {
  user: () => sessionStorage.getItem('seckill.token') || '',
  setUser: (t) => {
    if (t) sessionStorage.setItem('seckill.token', t);
    else sessionStorage.removeItem('seckill.token');
    window.dispatchEvent(new Event('seckill:token')); // the top navigation follows the role
  },
  admin: () => sessionStorage.getItem('seckill.admin') || '',
  setAdmin: (t) => (t ? sessionStorage.setItem('seckill.admin', t) : sessionStorage.removeItem('seckill.admin')),
};

// claims decodes a token's payload for display ({uid, role, exp}); the
// server checks the token, this never does.
export function claims(token) {
  try {
    const part = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    return JSON.parse(atob(part + '='.repeat((4 - (part.length % 4)) % 4)));
  } catch {
    return null;
  }
}
