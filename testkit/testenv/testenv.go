// Package testenv holds what the product's tests share: the settings of
// the tests that need a real server, a run per backend, a log sink and a
// settable clock.
package testenv

import (
	"bytes"
	"os"
	"sync"
	"testing"
	"time"
)

// Need returns the environment variable name, or skips the test when it
// is empty. It fails the test instead when CI=true: there every service
// must be up.
func Need(tb testing.TB, name string) string {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("%s is empty; CI=true requires it", name)
		}
		tb.Skipf("%s is empty; source .ci/env.sh to run this test against a real server", name)
	}
	return v
}

// Each runs f as a subtest on every backend, named by its key.
func Each[T any](t *testing.T, backends map[string]T, f func(t *testing.T, b T)) {
	t.Helper()
	for name, b := range backends {
		t.Run(name, func(t *testing.T) { f(t, b) })
	}
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers: a logger's sink
// that the test reads.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// Bytes returns a copy of what was written so far.
func (s *SyncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Clock is a settable clock: its Now stands in for time.Now.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock that reads t until it is moved.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
