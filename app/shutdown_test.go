package app

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"seckill/config"
)

// startPrivate starts the app in orderMode on an embedded database and a
// private miniredis. That Redis is not the app's own, so async mode watches
// it.
func startPrivate(t *testing.T, orderMode string) *App {
	t.Helper()
	mr := miniredis.RunT(t)
	vars := map[string]string{
		"SECKILL_ENV": "development", "SECKILL_DATA_DIR": t.TempDir(),
		"SECKILL_REDIS_ADDR": mr.Addr(), "SECKILL_ORDER_MODE": orderMode,
		"SECKILL_HTTP_ADDR": "127.0.0.1:0",
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(context.Background(), cfg, discard())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func names(cs []component) []string {
	var s []string
	for _, c := range cs {
		s = append(s, c.Name())
	}
	return s
}

// TestCloseStopsEveryComponent: New starts every background component of
// its mode, and Close stops each one.
func TestCloseStopsEveryComponent(t *testing.T) {
	for mode, want := range map[string][]string{
		"sync":  {"voucher changes", "revocation reloads", "live publisher", "live streams", "expiry sweeper"},
		"async": {"voucher changes", "revocation reloads", "live publisher", "live streams", "consumers", "redis watch", "expiry sweeper"},
	} {
		t.Run(mode, func(t *testing.T) {
			a := startPrivate(t, mode)
			all := slices.Concat(a.background.running, a.workers.running)
			if got := names(all); !slices.Equal(got, want) {
				t.Errorf("started %q, want %q", got, want)
			}
			for _, c := range all {
				if !c.running() {
					t.Errorf("%s does not run after New", c.Name())
				}
			}
			a.Close()
			for _, c := range all {
				if c.running() {
					t.Errorf("%s runs after Close", c.Name())
				}
			}
			if n := len(a.background.running) + len(a.workers.running); n != 0 {
				t.Errorf("%d components still listed after Close", n)
			}
		})
	}
}

// TestStopWorkersKeepsBackground: StopWorkers stops the consumers, the watch
// and the sweeper, not the publisher, the reloads or the streams.
// StartConsumers starts the consumers alone again, once.
func TestStopWorkersKeepsBackground(t *testing.T) {
	a := startPrivate(t, "async")
	defer a.Close()
	workers, background := slices.Clone(a.workers.running), slices.Clone(a.background.running)
	a.StopWorkers(time.Now().Add(9 * time.Second))
	for _, c := range workers {
		if c.running() {
			t.Errorf("%s runs after StopWorkers", c.Name())
		}
	}
	for _, c := range background {
		if !c.running() {
			t.Errorf("%s stopped with the workers", c.Name())
		}
	}
	if err := a.StartConsumers(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := names(a.workers.running); !slices.Equal(got, []string{"consumers"}) {
		t.Errorf("after StartConsumers the workers are %q, want [consumers]", got)
	}
	if err := a.StartConsumers(context.Background()); err == nil {
		t.Error("a second StartConsumers: got nil, want an error")
	}
}

// TestStartConsumersSync: StartConsumers is an error in sync mode.
func TestStartConsumersSync(t *testing.T) {
	a := startPrivate(t, "sync")
	defer a.Close()
	if err := a.StartConsumers(context.Background()); err == nil {
		t.Error("got nil, want an error")
	}
}
