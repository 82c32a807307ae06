// The login by code, the same for a buyer and a shop's staff (a staff
// member is a user whose token carries the role staff): the phone, Send
// code (with the phone's cooldown on the button), the code, Log in. The
// token goes to tokens.setUser; onLogin is called after.
import { api, ApiError, explain, tokens } from './api.js';
import { h, setText, field, message } from './dom.js';

// CODE_GUESSES is how many wrong guesses a login code survives (the
// server's service.CodeGuesses); then it is void.
const CODE_GUESSES = 5;
const PHONE = /^1[3-9]\d{9}$/;
// CODE_COOLDOWN_S is the server's default wait between two codes to a
// phone (SECKILL_CODE_COOLDOWN), for an answer without resendAfter.
const CODE_COOLDOWN_S = 60;

// codeRefusal words a refused code: within the phone's cooldown, the code
// already sent still works (one resend is no abuse); the other limits (per
// day, per address) in the server's words, with the wait.
function codeRefusal(e, masked) {
  const wait = e.retryAfter ? `${e.retryAfter} s` : 'a moment';
  if (/^a code was just sent/.test(e.message)) return `A code was already sent to ${masked}: use it, or ask for a new one in ${wait}.`;
  const reason = e.message.replace(/: try again in \d+s$/, '');
  return `${reason.charAt(0).toUpperCase()}${reason.slice(1)}: try again in ${wait}.`;
}


// loginForm returns the login form; its intervals go in timers (cleared by
// the page that shows it).
export function loginForm({ timers, onLogin }) {
  const devCode = h('span', { id: 'dev-code', class: 'muted' });
  const out = h('p', { id: 'login-result', class: 'message', hidden: true });
  const sendBtn = h('button', { id: 'send-code', type: 'button', onclick: sendCode }, 'Send code');
  const form = h('form', { id: 'login-form', autocomplete: 'off' },
    h('label', {}, 'Phone ', h('input', {
      id: 'phone', name: 'phone', inputmode: 'numeric', autocomplete: 'tel', maxlength: 11, required: true,
      placeholder: 'mobile number', value: sessionStorage.getItem('seckill.phone') || '',
    })),
    sendBtn,
    h('label', {}, 'Code ', h('input', { id: 'code', name: 'code', inputmode: 'numeric', maxlength: 6, size: 8, required: true, placeholder: '6 digits' })),
    h('button', { id: 'login', type: 'submit' }, 'Log in'),
    devCode, out);
  let wrong = 0; // wrong guesses of the code last sent
  let wait = null;
  function cooldown(seconds) {
    clearInterval(wait);
    let left = seconds;
    sendBtn.disabled = true;
    const paint = () => setText(sendBtn, left > 90 ? `Send again in ${Math.ceil(left / 60)} min` : `Send again in ${left} s`);
    paint();
    wait = setInterval(() => {
      left -= 1;
      if (left > 0) return paint();
      clearInterval(wait);
      sendBtn.disabled = false;
      setText(sendBtn, 'Send code');
    }, 1000);
    timers.push(wait);
  }
  function phone() {
    const p = field(form, 'phone');
    if (!PHONE.test(p)) {
      message(out, 'refused', p ? `"${p}" is not a mobile number: 11 digits, starting with 1.` : 'Enter your mobile number first.');
      form.elements.namedItem('phone').focus();
      return null;
    }
    sessionStorage.setItem('seckill.phone', p);
    return p;
  }
  async function sendCode() {
    const p = phone();
    if (!p) return;
    try {
      const env = await api('POST', '/user/code?phone=' + encodeURIComponent(p));
      wrong = 0;
      // sentTo is where the server sent the code: the phone, masked.
      const to = env.sentTo || `${p.slice(0, 3)}****${p.slice(7)}`;
      if (env.data) {
        // Development only: the server returns the code.
        form.elements.namedItem('code').value = env.data;
        setText(devCode, 'development: the code is ' + env.data);
      } else {
        form.elements.namedItem('code').value = '';
        setText(devCode, '');
      }
      message(out, 'ok', `Code sent to ${to}. It works once, for a few minutes.`);
      // The next code to this phone waits for its cooldown: counted down
      // on the button from now (the server's, else its default).
      const wait = Number(env.resendAfter ?? CODE_COOLDOWN_S);
      if (wait > 0) cooldown(wait);
    } catch (e) {
      if (e instanceof ApiError && e.code === 'RATE_LIMITED') {
        if (e.retryAfter) cooldown(e.retryAfter);
        message(out, 'refused', codeRefusal(e, `${p.slice(0, 3)}****${p.slice(7)}`), e.code);
        return;
      }
      showError(out, e);
    }
  }
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const p = phone();
    if (!p) return;
    const code = field(form, 'code');
    if (!/^\d{6}$/.test(code)) {
      message(out, 'refused', 'The code has 6 digits: send a code, then type it here.');
      return;
    }
    try {
      const env = await api('POST', '/user/login', { body: { phone: p, code } });
      tokens.setUser(env.data);
      await onLogin();
    } catch (e) {
      if (e instanceof ApiError && e.code === 'INVALID_ARGUMENT' && /code/.test(e.message)) {
        wrong += 1;
        if (wrong >= CODE_GUESSES) {
          form.elements.namedItem('code').value = '';
          setText(devCode, '');
          message(out, 'refused', 'This code is used up (too many wrong tries) or expired: request a new one.', e.code);
        } else {
          message(out, 'refused', `Wrong or expired code (${wrong} of ${CODE_GUESSES} tries used): check it, or request a new one.`, e.code);
        }
        return;
      }
      showError(out, e);
    }
  });
  return form;
}

// showError shows a refusal or a failure in words, with its code.
export function showError(el, e, prefix = '') {
  if (e instanceof ApiError) {
    message(el, e.status >= 500 || e.status === 0 ? 'error' : 'refused', prefix + explain(e), e.code);
  } else {
    message(el, 'error', prefix + String(e));
  }
}
