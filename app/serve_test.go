package app

import (
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"seckill/config"
)

// TestHeaderBound: the server Serve runs refuses a header block over
// MaxHeaderBytes with 431 and never calls the handler; a block under it
// is served. net/http alone would take a megabyte.
func TestHeaderBound(t *testing.T) {
	var called atomic.Int32
	srv := newHTTPServer(config.Config{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		called.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}), discard())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	get := func(ua string) int {
		req, err := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/readyz", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("User-Agent", ua)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET with a %d-byte User-Agent: %v", len(ua), err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := get(strings.Repeat("a", 2<<10)); got != http.StatusNoContent || called.Load() != 1 {
		t.Errorf("2 KiB of headers: got %d (handler called %d times), want 204", got, called.Load())
	}
	if got := get(strings.Repeat("a", 2*MaxHeaderBytes)); got != http.StatusRequestHeaderFieldsTooLarge || called.Load() != 1 {
		t.Errorf("%d bytes of headers: got %d (handler called %d times), want 431 and no call", 2*MaxHeaderBytes, got, called.Load())
	}
}
