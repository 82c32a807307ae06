// Small DOM helpers. Text always goes in as text nodes (never innerHTML), so
// a voucher title or a shop name can never become markup.

// h builds an element: h('button', {class: 'buy', onclick: f}, 'Buy').
// Attributes whose value is null, undefined or false are left out; true sets
// an empty attribute; on<event> adds a listener.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'value') el.value = v;
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

// setText sets an element's text only when it changed (no needless layout).
export function setText(el, text) {
  const s = String(text);
  if (el && el.textContent !== s) el.textContent = s;
}

// field returns the value of the named control of a form, trimmed.
export function field(form, name) {
  return String(form.elements.namedItem(name)?.value ?? '').trim();
}

// money formats an amount in cents (the course stores fen) as yuan.
export function money(cents) {
  return '¥' + (Number(cents) / 100).toFixed(2);
}

// duration formats milliseconds as [d ]hh:mm:ss.
export function duration(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  const d = Math.floor(s / 86400);
  const hh = String(Math.floor((s % 86400) / 3600)).padStart(2, '0');
  const mm = String(Math.floor((s % 3600) / 60)).padStart(2, '0');
  const ss = String(s % 60).padStart(2, '0');
  return (d > 0 ? d + 'd ' : '') + `${hh}:${mm}:${ss}`;
}

// localTime formats an RFC 3339 time in the browser's zone.
export function localTime(rfc3339) {
  const t = new Date(rfc3339);
  return isNaN(t) ? String(rfc3339) : t.toLocaleString();
}

// message shows a result line: kind is 'ok', 'refused' or 'error'; the
// code, when given, follows the words in small type.
export function message(el, kind, text, code) {
  el.replaceChildren(text, code ? ' ' : '', code ? h('code', { class: 'code' }, code) : '');
  el.className = 'message ' + kind;
  el.dataset.status = kind;
  if (code) el.dataset.code = code; else delete el.dataset.code;
  el.hidden = false;
}

// yuan formats fen as a number of yuan for an input ("80.00").
export function yuan(fen) {
  return (Number(fen) / 100).toFixed(2);
}

// fen reads a yuan amount typed by a person ("80", "80.5", "¥80.00") as
// whole fen, or NaN. A decimal comma ("79,90") is a decimal point; any
// other comma (a thousands separator, "1,000") is refused, never dropped.
export function fen(text) {
  let s = String(text).replace(/[¥\s]/g, '');
  if (/^\d+,\d{1,2}$/.test(s)) s = s.replace(',', '.');
  if (!/^\d+(\.\d{1,2})?$/.test(s)) return NaN;
  return Math.round(Number(s) * 100);
}

// windowText is a voucher's sale window in words. A voucher closed before
// its sale began (its window then begins and ends at the close) says so.
export function windowText(v) {
  const begin = new Date(v.beginTime);
  const end = new Date(v.endTime);
  if (isNaN(begin) || isNaN(end)) return `${v.beginTime} – ${v.endTime}`;
  if (v.status === 2 && end - begin <= 1000) return `closed ${end.toLocaleString()}, before its sale began`;
  const to = begin.toDateString() === end.toDateString() ? end.toLocaleTimeString() : end.toLocaleString();
  return `${begin.toLocaleString()} – ${v.status === 2 ? 'closed ' : ''}${to}`;
}

// labelled gives each cell of a row the label of its column (data-label):
// on a phone a table is a list of cards, each cell under its label.
export function labelled(tr, labels) {
  [...tr.children].forEach((td, i) => td.setAttribute('data-label', labels[i] ?? ''));
  return tr;
}

// shortId shows a long id by its last six digits; the whole id is its
// title (a phone has no room for 19 digits).
export function shortId(id) {
  const s = String(id);
  return h('code', { class: 'oid', title: s }, h('span', { class: 'full' }, s), h('span', { class: 'short' }, '…' + s.slice(-6)));
}

// scroll wraps a table so that it scrolls sideways inside its card.
export function scroll(table) {
  return h('div', { class: 'scroll' }, table);
}
