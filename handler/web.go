package handler

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
)

// The web app (package web, embedded in the binary): GET / is its page,
// GET /assets/<file> its scripts and styles. The API routes keep their
// paths and win: the app's files live under / and /assets/ only, and no
// API route starts with /assets/ (TestWebDoesNotShadowAPI). Any other
// unknown path stays a JSON 404.

// webCSP allows the page its own scripts, styles and API calls, nothing
// inline, nothing from elsewhere, no framing.
const webCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// webFile is one file of the app, read once at start.
type webFile struct {
	name  string
	body  []byte
	etag  string
	ctype string
}

func (a *api) webRoutes(r *gin.Engine) {
	if a.Web == nil {
		return
	}
	files := map[string]*webFile{}
	err := fs.WalkDir(a.Web, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(a.Web, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ctype := mime.TypeByExtension(path.Ext(p))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		files[p] = &webFile{name: p, body: b, etag: `"` + hex.EncodeToString(sum[:8]) + `"`, ctype: ctype}
		return nil
	})
	if err != nil {
		// The files are embedded: this is a build defect, not a runtime
		// condition.
		panic("handler: reading the embedded web app: " + err.Error())
	}
	index := files["index.html"]
	if index == nil {
		panic("handler: the embedded web app has no index.html")
	}
	serveIndex := func(c *gin.Context) { serveWebFile(c, index) }
	r.GET("/", serveIndex)
	r.HEAD("/", serveIndex)
	serveAsset := func(c *gin.Context) {
		name := strings.TrimPrefix(c.Param("file"), "/")
		f := files["assets/"+name]
		if f == nil || name == "" || strings.Contains(name, "..") {
			c.AbortWithStatusJSON(http.StatusNotFound, Envelope{Code: CodeNotFound, ErrorMsg: "no such file"})
			return
		}
		serveWebFile(c, f)
	}
	r.GET("/assets/*file", serveAsset)
	r.HEAD("/assets/*file", serveAsset)
}

func serveWebFile(c *gin.Context, f *webFile) {
	h := c.Writer.Header()
	h.Set("Content-Type", f.ctype)
	h.Set("ETag", f.etag)
	// Revalidate every time (a 304 when unchanged): a new binary's app is
	// never mixed with an old cached script.
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", webCSP)
	http.ServeContent(c.Writer, c.Request, f.name, time.Time{}, bytes.NewReader(f.body))
}
