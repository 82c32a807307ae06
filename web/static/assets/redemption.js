// What the buyer's order shows after the payment: while paid and unused,
// the redemption code and its QR code for the shop's counter; once used,
// when; once refunded, why (docs/redemption.md).
import { api } from './api.js';
import { h, money, localTime } from './dom.js';

// REFUND_REASONS say in words why an order's money went back.
const REFUND_REASONS = {
  buyer: 'You asked for the refund.',
  late_payment: 'The payment arrived after the order was cancelled or expired, so the money went back to you.',
  unreachable_provider: 'The order was cancelled while the payment service could not be reached; the money it took went back to you.',
  duplicate_payment: 'The order was paid twice; the second payment went back to you.',
};

// spaced writes a code in groups of five, to be read aloud or typed.
export function spaced(code) {
  return String(code).replace(/(.{5})(?=.)/g, '$1 ');
}

// statusWords is an order's status in words, with the amount once paid.
export function statusWords(o) {
  if (o.status === 'paid' && o.payAmount !== undefined) return 'paid ' + money(o.payAmount);
  if (o.status === 'used') return 'used at the shop';
  return o.status;
}

// orderAfterPay is what an order shows under its status once paid, used,
// refunding or refunded (null for the other states).
export function orderAfterPay(o) {
  switch (o.status) {
    case 'paid':
      if (!o.redeemCode) {
        return h('p', { class: 'redeem-wait small muted' }, o.codeMissing
          ? 'The code to show at the shop could not be read: reload the page to try again.' : 'Getting the code to show at the shop…');
      }
      return h('div', { class: 'redeem-panel', 'data-redeem': o.redeemCode },
        h('p', { class: 'small' }, 'Show this at the shop’s counter: the staff scan the QR code or type the code, and the voucher is used.'),
        h('p', { class: 'redeem-code', 'aria-label': 'Redemption code ' + o.redeemCode.split('').join(' ') }, spaced(o.redeemCode)),
        o.redeemQR ? h('img', { class: 'redeem-qr', src: o.redeemQR, width: 180, height: 180, alt: 'QR code of the redemption code ' + o.redeemCode }) : null);
    case 'used':
      return h('p', { class: 'used-at small' }, o.useTime ? 'Redeemed at the shop on ' + localTime(o.useTime) + '.' : 'Redeemed at the shop.');
    case 'refunding':
      return h('p', { class: 'refund-why small' }, 'Refund on its way: the order turns refunded when the money is back.');
    case 'refunded':
      return h('p', { class: 'refund-why small' },
        'Refunded' + (o.payAmount !== undefined ? ' ' + money(o.payAmount) : '') + (o.refundTime ? ' on ' + localTime(o.refundTime) : '') + '. ',
        REFUND_REASONS[o.refundReason] || (o.refundReason ? `Reason: ${o.refundReason}.` : ''));
  }
  return null;
}

// codeKeeper returns withCodes(list, token), which gives each paid order of
// the list its redemption code. GET /user/orders carries it; an order
// without it is read once by its id (GET /voucher-order/:id makes the code
// on the owner's first read), never again after, so a list read every
// second asks no more than once per paid order.
export function codeKeeper() {
  const codes = new Map(); // order id -> {redeemCode, redeemQR}
  return async function withCodes(list, token) {
    for (const [i, o] of list.entries()) {
      if (o.status !== 'paid') continue;
      if (o.redeemCode) {
        codes.set(o.id, { redeemCode: o.redeemCode, redeemQR: o.redeemQR });
        continue;
      }
      if (!codes.has(o.id)) {
        codes.set(o.id, { codeMissing: true });
        try {
          const one = (await api('GET', '/voucher-order/' + o.id, { token })).data;
          if (one.redeemCode) codes.set(o.id, { redeemCode: one.redeemCode, redeemQR: one.redeemQR });
        } catch {
          // shown without its code; a later list may carry it
        }
      }
      list[i] = { ...o, ...codes.get(o.id) };
    }
  };
}
