// Package fakepay is a fake of the pay providers (Alipay, WeChat Pay) on
// loopback, for the tests and for development: the API each provider's
// SDK calls, signed as the provider signs, over trades and refunds kept in
// memory, and a control API that pays trades, sends (or tampers with)
// notifications, takes a provider down and picks how refunds answer.
// docs: notes/fakepay-spec.md (issue 43); cmd/fakepay is its binary.
//
// Layout: the core (this file: Options, Start, Server; store.go: Trade,
// Refund, Store; keys.go: the key directory; control.go: the control API,
// the scan page and the delivery of notifications) knows no provider.
// Each provider is one file that implements Provider and registers its
// constructor in an init function:
//
//	func init() { register(newAlipay) }          // alipay.go
//	func newAlipay(c *Core) Provider { ... }
//
// A constructor gets the Core: the shared Store, the Keys, the server's
// base URL (http://ADDR) and the clock. Its Register puts its API under
// /NAME/ on the mux; the core answers 503 there while the provider is
// down. The core calls Notification to build what it POSTs to a trade's
// notify_url, only when that URL's host is a loopback address.
package fakepay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Provider is one fake pay provider.
type Provider interface {
	Name() string                // "alipay" | "wechat"
	Register(mux *http.ServeMux) // the API its SDK calls, under /alipay/... or /wechat/...
	// Notification builds the signed notification of trade t (or of its refund r when r != nil),
	// as the provider sends it: headers and body, with tampering applied.
	Notification(t *Trade, r *Refund, tm Tamper) (http.Header, []byte, error)
	// Env is the provider's lines of the env file (absolute paths).
	Env(addr, keyDir string) map[string]string
}

// Tamper changes a notification, to prove the service rejects it. The
// zero Tamper is the true notification.
type Tamper struct {
	Amount     int64     // fen; 0 = the real one. Signed properly.
	AppID      string    // another app (or merchant's app); signed properly
	Time       time.Time // another notify time; signed
	OutTradeNo string    // another trade's number; signed
	WrongKey   bool      // signed by a key not the provider's
	Alter      bool      // the body changed after signing
}

// Core is what a provider's constructor gets.
type Core struct {
	Store   *Store
	Keys    *Keys
	BaseURL string // http://ADDR, no trailing slash
	Now     func() time.Time
}

// ScanURL is the page that stands for a trade's QR code.
func (c *Core) ScanURL(provider, outTradeNo string) string {
	return c.BaseURL + "/scan/" + provider + "/" + url.PathEscape(outTradeNo)
}

var (
	regMu        sync.Mutex
	constructors []func(*Core) Provider
)

// register adds a provider's constructor; each provider file calls it
// from init.
func register(f func(*Core) Provider) {
	regMu.Lock()
	defer regMu.Unlock()
	constructors = append(constructors, f)
}

// Options configure Start.
type Options struct {
	Listen  string           // host:port on loopback; "" = 127.0.0.1:0
	KeyDir  string           // where the keys are, or are generated (required)
	EnvFile string           // written at start when set (KEY=value lines)
	Now     func() time.Time // the providers' clock; nil = time.Now
	Log     io.Writer        // a line per notification sent; nil = none
}

// Server is a running fake.
type Server struct {
	core      *Core
	providers map[string]Provider
	addr      string
	env       map[string]string
	http      *http.Server
	client    *http.Client
	log       io.Writer
	logMu     sync.Mutex
	closeOnce sync.Once
	done      chan struct{}
	err       error
}

// Start listens, loads or generates the keys, writes the env file and
// serves until Close or until ctx is done.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	host, _, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("fakepay: listen on %s: loopback only", o.Listen)
	}
	keys, err := LoadKeys(o.KeyDir)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, err
	}
	s := &Server{
		addr:      ln.Addr().String(),
		providers: map[string]Provider{},
		client:    loopbackClient(),
		log:       o.Log,
		done:      make(chan struct{}),
	}
	s.core = &Core{Store: NewStore(), Keys: keys, BaseURL: "http://" + s.addr, Now: o.Now}
	mux := http.NewServeMux()
	regMu.Lock()
	ctors := slices.Clone(constructors)
	regMu.Unlock()
	s.env = map[string]string{"SECKILL_TEST_FAKEPAY_URL": s.core.BaseURL}
	for _, ctor := range ctors {
		p := ctor(s.core)
		s.providers[p.Name()] = p
		sub := http.NewServeMux()
		p.Register(sub)
		mux.Handle("/"+p.Name()+"/", s.downGuard(p.Name(), sub))
		maps.Copy(s.env, p.Env(s.addr, keys.Dir))
	}
	s.routes(mux)
	if o.EnvFile != "" {
		if err := writeEnvFile(o.EnvFile, s.env); err != nil {
			ln.Close()
			return nil, err
		}
	}
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		err := s.http.Serve(ln)
		if !errors.Is(err, http.ErrServerClosed) {
			s.err = err
		}
		close(s.done)
	}()
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.done:
		}
	}()
	return s, nil
}

// Addr is the address the fake listens on (127.0.0.1:PORT).
func (s *Server) Addr() string { return s.addr }

// URL is http://ADDR.
func (s *Server) URL() string { return s.core.BaseURL }

// Env is what the env file holds.
func (s *Server) Env() map[string]string { return maps.Clone(s.env) }

// Core is the server's store, keys and clock (for the tests of the fake).
func (s *Server) Core() *Core { return s.core }

// Done is closed once the server has stopped.
func (s *Server) Done() <-chan struct{} { return s.done }

// Close stops the server at once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { _ = s.http.Close() })
	<-s.done
	return s.err
}

// downGuard answers 503 while the provider is down.
func (s *Server) downGuard(provider string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.core.Store.Down(provider) {
			http.Error(w, "fakepay: "+provider+" is down (control API)", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// writeEnvFile writes KEY=value lines, sorted, mode 0600.
func writeEnvFile(path string, env map[string]string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return err
	}
	keys := slices.Collect(maps.Keys(env))
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, env[k])
	}
	return writeFile(abs, []byte(b.String()), 0o600)
}

// ParseEnvFile reads KEY=value lines; blank lines and # comments are
// skipped.
func ParseEnvFile(b []byte) (map[string]string, error) {
	env := map[string]string{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("line %d: want KEY=value", i+1)
		}
		env[k] = v
	}
	return env, nil
}
