// Package web is the web app served by the binary at / (handler): plain
// HTML, CSS and JavaScript modules, embedded at build time. No Node build.
//
//	static/index.html           the one page (hash routes: #/ buyer, #/order/<id>, #/admin, #/admin/live/<voucherId>, #/staff)
//	static/assets/app.js        entry: routing between the views
//	static/assets/api.js        the API client (envelope, token header, clock offset)
//	static/assets/login.js      the login by code (a buyer's and a staff member's)
//	static/assets/buyer.js      find a shop, vouchers with countdown, stock and buy, my orders (pay, cancel)
//	static/assets/redemption.js a paid order's redemption code and QR, a used or refunded order's words
//	static/assets/staff.js      a shop's staff: pick the shop, redeem a buyer's code
//	static/assets/admin.js      admin token (checked), publish (yuan), edit before the sale, close, list
//	static/assets/dashboard.js  the live sale dashboard (the SSE stream read with fetch)
//	static/assets/mismatches.js the sale's reconciliation mismatches on the dashboard
//	static/assets/style.css
package web

import (
	"embed"
	"io/fs"
)

//go:embed static
var static embed.FS

// Files returns the app's files: index.html and assets/.
func Files() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic("web: " + err.Error()) // "static" is embedded above
	}
	return sub
}
