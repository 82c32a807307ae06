// What the buyer's order shows after the payment: while paid and unused,
// when it was paid, the redemption code and its QR code for the shop's
// counter, and Refund (buyer.js); once used, when; while refunding, that
// the money is on its way; once refunded, when and why (docs/redemption.md,
// docs/payments.md).
import { api } from './api.js';
import { h, money, localTime } from './dom.js';

// PROVIDER_NAMES are the pay providers' names as buyers know them.
export const PROVIDER_NAMES = { alipay: 'Alipay', wechat: 'WeChat Pay' };

// REFUND_REASONS say in words why an order's money went back.
const REFUND_REASONS = {
  buyer: 'You asked for the refund.',
  late_payment: 'The payment arrived after the order was cancelled or expired, so the money went back to you.',
  unreachable_provider: 'The order was cancelled while the payment service could not be reached; the money it took went back to you.',
  duplicate_payment: 'The order was paid twice; the second payment went back to you.',
};

// REFUND_REFUSALS say why POST /voucher-order/:orderId/refund refused.
export const REFUND_REFUSALS = {
  VOUCHER_USED: 'This voucher was used at the shop: a used voucher cannot be refunded.',
  NOT_REFUNDABLE: 'There is no payment to refund: the order is not paid, or it was cancelled, expired or refunded already.',
  ORDER_NOT_FOUND: 'No such order of yours.',
};

// spaced writes a code in groups of five, to be read aloud or typed.
export function spaced(code) {
  return String(code).replace(/(.{5})(?=.)/g, '$1 ');
}

// statusWords is an order's status in words, with the amount once paid.
export function statusWords(o) {
  const amount = o.payAmount !== undefined ? ' ' + money(o.payAmount) : '';
  switch (o.status) {
    case 'paid': return 'paid' + amount;
    case 'used': return 'used at the shop';
    case 'refunding': return 'refunding' + amount;
    case 'refunded': return 'refunded' + amount;
  }
  return o.status;
}

// paidWith is how an order was paid, in words: " with Alipay", or nothing
// for the simulated payment.
export function paidWith(o) {
  return PROVIDER_NAMES[o.payType] ? ' with ' + PROVIDER_NAMES[o.payType] : '';
}

// paidAt is the line that says when an order was paid, and how.
function paidAt(o) {
  return o.payTime ? h('p', { class: 'paid-at small muted' }, 'Paid on ' + localTime(o.payTime) + paidWith(o) + '.') : null;
}

// orderAfterPay is what an order shows under its status once paid, used,
// refunding or refunded (null for the other states).
export function orderAfterPay(o) {
  switch (o.status) {
    case 'paid':
      if (!o.redeemCode) {
        return [paidAt(o), h('p', { class: 'redeem-wait small muted' }, o.codeMissing
          ? 'The code to show at the shop could not be read: reload the page to try again.' : 'Getting the code to show at the shop…')];
      }
      return [paidAt(o), h('div', { class: 'redeem-panel', 'data-redeem': o.redeemCode },
        h('p', { class: 'small' }, 'Show this at the shop’s counter: the staff scan the QR code or type the code, and the voucher is used.'),
        h('p', { class: 'redeem-code', 'aria-label': 'Redemption code ' + o.redeemCode.split('').join(' ') }, spaced(o.redeemCode)),
        o.redeemQR ? h('img', { class: 'redeem-qr', src: o.redeemQR, width: 180, height: 180, alt: 'QR code of the redemption code ' + o.redeemCode }) : null)];
    case 'used':
      return [h('p', { class: 'used-at small' }, o.useTime ? 'Redeemed at the shop on ' + localTime(o.useTime) + '.' : 'Redeemed at the shop.',
        ' A used voucher cannot be refunded.'), paidAt(o)];
    case 'refunding': {
      const to = PROVIDER_NAMES[o.payType] || 'the payment service';
      return [h('p', { class: 'refund-why small' },
        'Refund on its way: ' + (o.payAmount !== undefined ? money(o.payAmount) : 'the money') + ' goes back to you' + paidWith(o) + '. ',
        `This order turns refunded when ${to} confirms the money is back; the voucher can no longer be used.`), paidAt(o)];
    }
    case 'refunded':
      return [h('p', { class: 'refund-why small' },
        'Refunded' + (o.payAmount !== undefined ? ' ' + money(o.payAmount) : '') + (o.refundTime ? ' on ' + localTime(o.refundTime) : '') + '. ',
        REFUND_REASONS[o.refundReason] || (o.refundReason ? `Reason: ${o.refundReason}.` : '')), paidAt(o)];
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
