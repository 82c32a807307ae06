// The web app's entry: hash routes, so that every page is / for the server
// (the API's paths stay the API's).
//
//   #/                         buyer: log in by code, vouchers, buy, my orders
//   #/order/<orderId>          the buyer's page with that order shown
//   #/admin                    admin: token, shops, publish, vouchers
//   #/admin/live/<voucherId>   the live sale dashboard
//   #/staff                    a shop's staff: redeem a buyer's code
//
// Two routes of the same page (#/ and #/order/<id>) keep the page mounted:
// the page's show(match) is called instead, so what it shows (an "Order
// placed" message) survives the link and the browser's back button.
import { buyer } from './buyer.js';
import { admin } from './admin.js';
import { dashboard } from './dashboard.js';
import { staff } from './staff.js';
import { claims, tokens } from './api.js';

const routes = [
  [/^#\/admin\/live\/(\d{1,19})$/, 'dashboard', (root, m) => dashboard(root, m[1]), 'admin'],
  [/^#\/admin\/?$/, 'admin', (root) => admin(root), 'admin'],
  [/^#\/staff\/?$/, 'staff', (root) => staff(root), 'staff'],
  [/^#\/order\/(\d{1,19})$/, 'buyer', (root) => buyer(root), 'buyer'],
  [/^(#\/?)?$/, 'buyer', (root) => buyer(root), 'buyer'],
];

let current = null;
let currentPage = '';

function route() {
  const hash = location.hash;
  for (const [re, page, mount, nav] of routes) {
    const m = hash.match(re);
    if (!m) continue;
    for (const a of document.querySelectorAll('[data-nav]')) {
      a.classList.toggle('active', a.dataset.nav === nav);
    }
    showStaffLink();
    if (current && currentPage === page && current.show) {
      current.show(m);
      return;
    }
    if (current && current.unmount) current.unmount();
    const root = document.getElementById('view');
    root.replaceChildren();
    current = mount(root, m);
    currentPage = page;
    if (current && current.show) current.show(m);
    return;
  }
  location.hash = '#/';
}

// showStaffLink shows Staff in the top navigation to a staff member's
// token (the claims are read for display only: the server checks the
// role), and on the staff page itself.
function showStaffLink() {
  const link = document.querySelector('[data-nav="staff"]');
  const c = claims(tokens.user());
  if (link) link.hidden = !((c && c.role === 'staff') || /^#\/staff/.test(location.hash));
}

window.addEventListener('hashchange', route);
window.addEventListener('seckill:token', showStaffLink);
route();
