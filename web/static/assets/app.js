// The web app's entry: hash routes, so that every page is / for the server
// (the API's paths stay the API's).
//
//   #/                         buyer: log in by code, vouchers, buy, my orders
//   #/admin                    admin: token, shops, publish, vouchers
//   #/admin/live/<voucherId>   the live sale dashboard
import { buyer } from './buyer.js';
import { admin } from './admin.js';
import { dashboard } from './dashboard.js';

const routes = [
  [/^#\/admin\/live\/(\d{1,19})$/, (root, m) => dashboard(root, m[1]), 'admin'],
  [/^#\/admin\/?$/, (root) => admin(root), 'admin'],
  [/^(#\/?)?$/, (root) => buyer(root), 'buyer'],
];

let current = null;

function route() {
  if (current && current.unmount) current.unmount();
  current = null;
  const root = document.getElementById('view');
  root.replaceChildren();
  const hash = location.hash;
  for (const [re, mount, nav] of routes) {
    const m = hash.match(re);
    if (m) {
      for (const a of document.querySelectorAll('[data-nav]')) {
        a.classList.toggle('active', a.dataset.nav === nav);
      }
      current = mount(root, m);
      return;
    }
  }
  location.hash = '#/';
}

window.addEventListener('hashchange', route);
route();
