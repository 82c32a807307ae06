package middleware_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/auth"
	"seckill/middleware"
	"seckill/model"
	"seckill/observe/metrics"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.TestMode)
	os.Exit(m.Run())
}

// failRecorder is a FailFunc that records the error and writes a bare 599.
type failRecorder struct{ errs []error }

func (f *failRecorder) fail(c *gin.Context, err error) {
	f.errs = append(f.errs, err)
	c.AbortWithStatus(599)
}

// issue returns a token of tokens for user id with role.
func issue(t *testing.T, tokens *auth.Tokens, id int64, role string) string {
	t.Helper()
	tok, err := tokens.Issue(id, role)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func serve(t *testing.T, r *gin.Engine, method, path, authorization string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	if authorization != "" {
		req.Header.Set("authorization", authorization)
	}
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, req)
	return rec
}

func TestAuth(t *testing.T) {
	tokens := auth.NewTokens("mw-secret", time.Hour)
	userTok, adminTok := issue(t, tokens, 7, model.RoleUser), issue(t, tokens, 9, model.RoleAdmin)
	foreign := issue(t, auth.NewTokens("other-secret", time.Hour), 7, model.RoleAdmin)
	tests := []struct {
		name     string
		header   string
		wantUser middleware.User
		wantFail bool
	}{
		{name: "raw token", header: userTok, wantUser: middleware.User{ID: 7, Role: model.RoleUser}},
		{name: "bearer token", header: "Bearer " + adminTok, wantUser: middleware.User{ID: 9, Role: model.RoleAdmin}},
		{name: "BEARER token", header: "BEARER " + userTok, wantUser: middleware.User{ID: 7, Role: model.RoleUser}},
		{name: "missing", header: "", wantFail: true},
		{name: "bearer only", header: "Bearer ", wantFail: true},
		{name: "garbage", header: "Bearer xyz", wantFail: true},
		{name: "other secret", header: foreign, wantFail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fr := &failRecorder{}
			var got middleware.User
			var found, reached bool
			r := gin.New()
			r.GET("/x", middleware.Auth(tokens, nil, fr.fail), func(c *gin.Context) {
				reached = true
				got, found = middleware.UserFrom(c.Request.Context())
				c.Status(http.StatusOK)
			})
			rec := serve(t, r, http.MethodGet, "/x", tt.header)
			if tt.wantFail {
				if reached {
					t.Errorf("next handler ran without a valid token")
				}
				if len(fr.errs) != 1 || !errors.Is(fr.errs[0], model.ErrUnauthorized) {
					t.Errorf("fail: got %v, want one %v", fr.errs, model.ErrUnauthorized)
				}
				if rec.Code != 599 {
					t.Errorf("status: got %d, want the fail func's 599", rec.Code)
				}
				return
			}
			if len(fr.errs) != 0 {
				t.Fatalf("fail: got %v, want none", fr.errs)
			}
			if !found || got.ID != tt.wantUser.ID || got.Role != tt.wantUser.Role || got.IssuedAt.IsZero() {
				t.Errorf("user in context: got %+v (found %v), want %+v with the token's iat", got, found, tt.wantUser)
			}
		})
	}
}

func TestUserFromEmptyContext(t *testing.T) {
	if u, ok := middleware.UserFrom(context.Background()); ok {
		t.Errorf("got %+v, true, want no user", u)
	}
	ctx := middleware.WithUser(context.Background(), middleware.User{ID: 3, Role: "user"})
	if u, ok := middleware.UserFrom(ctx); !ok || u.ID != 3 {
		t.Errorf("got %+v, %v, want user 3", u, ok)
	}
}

func TestAdmin(t *testing.T) {
	tests := []struct {
		name    string
		user    *middleware.User
		wantErr error
	}{
		{name: "admin", user: &middleware.User{ID: 9, Role: model.RoleAdmin}},
		{name: "user", user: &middleware.User{ID: 7, Role: model.RoleUser}, wantErr: model.ErrForbidden},
		{name: "empty role", user: &middleware.User{ID: 7}, wantErr: model.ErrForbidden},
		{name: "no user", wantErr: model.ErrUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fr := &failRecorder{}
			reached := false
			r := gin.New()
			r.GET("/x", func(c *gin.Context) {
				if tt.user != nil {
					c.Request = c.Request.WithContext(middleware.WithUser(c.Request.Context(), *tt.user))
				}
			}, middleware.Admin(nil, fr.fail), func(c *gin.Context) { reached = true })
			serve(t, r, http.MethodGet, "/x", "")
			if tt.wantErr == nil {
				if !reached || len(fr.errs) != 0 {
					t.Errorf("got reached %v, fail %v, want reached and no failure", reached, fr.errs)
				}
				return
			}
			if reached {
				t.Errorf("next handler ran for %s", tt.name)
			}
			if len(fr.errs) != 1 || !errors.Is(fr.errs[0], tt.wantErr) {
				t.Errorf("fail: got %v, want one %v", fr.errs, tt.wantErr)
			}
		})
	}
}

func TestDeadline(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
	}{
		{"short", 50 * time.Millisecond},
		{"long", time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ctx context.Context
			r := gin.New()
			r.GET("/x", middleware.Deadline(tt.d), func(c *gin.Context) { ctx = c.Request.Context() })
			before := time.Now()
			serve(t, r, http.MethodGet, "/x", "")
			after := time.Now()
			if ctx == nil {
				t.Fatal("handler did not run")
			}
			dl, ok := ctx.Deadline()
			if !ok {
				t.Fatal("deadline: got none, want one")
			}
			if dl.Before(before.Add(tt.d)) || dl.After(after.Add(tt.d)) {
				t.Errorf("deadline: got %v, want within [%v, %v]", dl, before.Add(tt.d), after.Add(tt.d))
			}
			if ctx.Err() == nil {
				t.Errorf("context after the request: got live, want cancelled (resources released)")
			}
		})
	}
}

// TestDeadlineExemptsStreams: a route named as a stream gets no deadline;
// the others still do.
func TestDeadlineExemptsStreams(t *testing.T) {
	got := map[string]bool{}
	r := gin.New()
	r.Use(middleware.Deadline(time.Second, "/s/:id"))
	note := func(c *gin.Context) { _, got[c.Request.URL.Path] = c.Request.Context().Deadline() }
	r.GET("/s/:id", note)
	r.GET("/x/:id", note)
	serve(t, r, http.MethodGet, "/s/1", "")
	serve(t, r, http.MethodGet, "/x/1", "")
	if got["/s/1"] || !got["/x/1"] {
		t.Errorf("deadlines: got %v, want none on the stream /s/1, one on /x/1", got)
	}
}

func TestRecover(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	fr := &failRecorder{}
	r := gin.New()
	r.Use(middleware.Recover(log, fr.fail))
	r.GET("/boom", func(*gin.Context) { panic("secret panic text") })
	r.GET("/fine", func(c *gin.Context) { c.Status(http.StatusNoContent) })
	rec := serve(t, r, http.MethodGet, "/boom", "")
	if rec.Code != 599 {
		t.Errorf("status: got %d, want the fail func's 599", rec.Code)
	}
	if len(fr.errs) != 1 {
		t.Fatalf("fail calls: got %d, want 1", len(fr.errs))
	}
	if strings.Contains(fr.errs[0].Error(), "secret") {
		t.Errorf("error handed to fail: got %q, want no panic text", fr.errs[0])
	}
	if !strings.Contains(logs.String(), "secret panic text") {
		t.Errorf("log: got %q, want the panic value", logs.String())
	}
	if rec := serve(t, r, http.MethodGet, "/fine", ""); rec.Code != http.StatusNoContent {
		t.Errorf("after a panic: got %d, want 204", rec.Code)
	}
}

func TestMetrics(t *testing.T) {
	m := metrics.New()
	r := gin.New()
	r.Use(middleware.Metrics(m))
	r.GET("/items/:id", func(c *gin.Context) { c.Status(http.StatusTeapot) })
	for _, p := range []string{"/items/1", "/items/2", "/nowhere"} {
		serve(t, r, http.MethodGet, p, "")
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`seckill_http_requests_total{method="GET",route="/items/:id",status="418"} 2`,
		`seckill_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`seckill_http_request_duration_seconds_count{route="/items/:id"} 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics: missing %q", want)
		}
	}
}
