package account

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/model"
	"seckill/service/internal/servicetest"
	"seckill/testkit/testenv"
)

func TestNotBeforeOf(t *testing.T) {
	base := time.Date(2026, 11, 23, 16, 42, 7, 0, time.UTC)
	for _, tt := range []struct{ in, want time.Time }{
		{base, base},
		{base.Add(time.Nanosecond), base.Add(time.Second)},
		{base.Add(999 * time.Millisecond), base.Add(time.Second)},
	} {
		if got := NotBeforeOf(tt.in); !got.Equal(tt.want) {
			t.Errorf("NotBeforeOf(%v): got %v, want %v", tt.in, got, tt.want)
		}
	}
}

// fakeRevocations is a RevocationLister whose answer the test changes.
type fakeRevocations struct {
	mu    sync.Mutex
	set   map[int64]time.Time
	err   error
	calls int
}

func (f *fakeRevocations) NotBefore(context.Context) (map[int64]time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	out := make(map[int64]time.Time, len(f.set))
	for k, v := range f.set {
		out[k] = v
	}
	return out, nil
}

func (f *fakeRevocations) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// answer sets the next answers and returns the calls so far.
func (f *fakeRevocations) answer(set map[int64]time.Time, err error) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.set, f.err = set, err
	return f.calls
}

// TestRevocationSet: a token of a revoked user issued before its not_before
// (or without iat) is revoked; at or after it, or of another user, not.
func TestRevocationSet(t *testing.T) {
	nb := time.Unix(1_800_000_000, 0)
	s := NewRevocationSet(&fakeRevocations{set: map[int64]time.Time{7: nb}}, servicetest.DiscardLog())
	if s.Revoked(7, nb.Add(-time.Hour)) {
		t.Error("empty set before Load: got revoked")
	}
	if err := s.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		user int64
		iat  time.Time
		want bool
	}{
		{7, nb.Add(-time.Second), true},
		{7, nb.Add(-time.Hour), true},
		{7, time.Time{}, true}, // no iat
		{7, nb, false},
		{7, nb.Add(time.Second), false},
		{8, nb.Add(-time.Hour), false},
		{8, time.Time{}, false},
	} {
		if got := s.Revoked(tt.user, tt.iat); got != tt.want {
			t.Errorf("Revoked(%d, %v): got %v, want %v", tt.user, tt.iat, got, tt.want)
		}
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5s", what)
		}
	}
}

// TestRevocationSetRun: Run picks up new revocations and returns when its
// context ends. Failing reloads keep the last set and log one warning per
// warnEvery.
func TestRevocationSetRun(t *testing.T) {
	nb := time.Unix(1_800_000_000, 0)
	store := &fakeRevocations{set: map[int64]time.Time{}}
	var logs testenv.SyncBuffer
	s := NewRevocationSet(store, slog.New(slog.NewTextHandler(&logs, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx, time.Millisecond)
	}()
	defer func() {
		cancel()
		<-done
	}()

	store.answer(map[int64]time.Time{7: nb}, nil)
	waitFor(t, "revocation of 7 loaded", func() bool { return s.Revoked(7, nb.Add(-time.Second)) })

	calls := store.answer(map[int64]time.Time{}, model.Unavailable(errors.New("database down")))
	waitFor(t, "ten failed reloads", func() bool { return store.callCount()-calls >= 10 })
	if !s.Revoked(7, nb.Add(-time.Second)) {
		t.Error("after failed reloads: got 7 not revoked, want the last set kept")
	}
	if n := strings.Count(logs.String(), "reload failed"); n != 1 {
		t.Errorf("got %d warnings for ten failures within a minute, want 1:\n%s", n, logs.String())
	}

	store.answer(map[int64]time.Time{8: nb}, nil)
	waitFor(t, "recovered reload", func() bool { return s.Revoked(8, nb.Add(-time.Second)) && !s.Revoked(7, nb.Add(-time.Second)) })

	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

// fakeAccess is an AccessStore of one answer.
type fakeAccess struct {
	role string
	nb   time.Time
	err  error
}

func (f fakeAccess) Access(context.Context, int64) (string, time.Time, error) {
	return f.role, f.nb, f.err
}

func TestAdminAccess(t *testing.T) {
	nb := time.Unix(1_800_000_000, 0)
	before, after := nb.Add(-time.Second), nb
	for _, tt := range []struct {
		name  string
		store fakeAccess
		iat   time.Time
		want  error
	}{
		{"admin", fakeAccess{role: model.RoleAdmin}, before, nil},
		{"admin issued after revocation", fakeAccess{role: model.RoleAdmin, nb: nb}, after, nil},
		{"demoted", fakeAccess{role: model.RoleUser}, before, model.ErrForbidden},
		{"revoked", fakeAccess{role: model.RoleAdmin, nb: nb}, before, model.ErrUnauthorized},
		{"revoked, no iat", fakeAccess{role: model.RoleAdmin, nb: nb}, time.Time{}, model.ErrUnauthorized},
		{"revoked and demoted", fakeAccess{role: model.RoleUser, nb: nb}, before, model.ErrUnauthorized},
		{"user gone", fakeAccess{err: model.ErrUserNotFound}, before, model.ErrUnauthorized},
		{"database down", fakeAccess{err: errors.New("driver: bad connection")}, before, model.ErrUnavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := AdminAccess{Store: tt.store}.CheckAdmin(context.Background(), 9, tt.iat)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
}

// fakeUserFinder finds the users of its map.
type fakeUserFinder map[int64]model.User

func (f fakeUserFinder) FindByID(_ context.Context, id int64) (*model.User, error) {
	u, ok := f[id]
	if !ok {
		return nil, model.ErrUserNotFound
	}
	return &u, nil
}

// fakeWriter records the not_before asked and stores the later one.
type fakeWriter map[int64]time.Time

func (f fakeWriter) Revoke(_ context.Context, id int64, nb time.Time) (time.Time, error) {
	if nb.After(f[id]) {
		f[id] = nb
	}
	return f[id], nil
}

func TestRevokeTokens(t *testing.T) {
	users := fakeUserFinder{5: {ID: 5, Role: model.RoleAdmin}}
	w := fakeWriter{}
	now := time.Date(2026, 11, 23, 16, 42, 7, 300_000_000, time.UTC)
	r, err := RevokeTokens(context.Background(), users, w, 5, now)
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 11, 23, 16, 42, 8, 0, time.UTC)
	if !r.NotBefore.Equal(want) || r.User.ID != 5 || !w[5].Equal(want) {
		t.Errorf("got %+v (stored %v), want user 5 not before %v", r, w[5], want)
	}
	if _, err := RevokeTokens(context.Background(), users, w, 6, now); !errors.Is(err, model.ErrUserNotFound) {
		t.Errorf("unknown user: got %v, want %v", err, model.ErrUserNotFound)
	}
	if _, ok := w[6]; ok {
		t.Error("unknown user: got a revocation stored")
	}
}
