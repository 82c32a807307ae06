package catalog

import (
	"context"
	"errors"
	"sync"
	"testing"

	"seckill/model"
)

// blockingLister holds every search until release is closed, and counts
// the searches it runs at once.
type blockingLister struct {
	release chan struct{}
	started chan struct{}
	mu      sync.Mutex
	running int
	most    int
}

func (b *blockingLister) ListShops(context.Context, string, int) ([]model.Shop, error) {
	b.mu.Lock()
	b.running++
	b.most = max(b.most, b.running)
	b.mu.Unlock()
	b.started <- struct{}{}
	<-b.release
	b.mu.Lock()
	b.running--
	b.mu.Unlock()
	return nil, nil
}

// TestShopSearchesBounded: a flood of 64 searches at once reaches the store
// MaxShopSearches at a time. The rest are RATE_LIMITED at once, before the
// store. A search that ends frees its place.
func TestShopSearchesBounded(t *testing.T) {
	store := &blockingLister{release: make(chan struct{}), started: make(chan struct{}, 64)}
	s := NewShopSearch(store)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range MaxShopSearches {
		wg.Go(func() {
			_, err := s.List(context.Background(), "x")
			errs <- err
		})
	}
	for range MaxShopSearches {
		<-store.started // every place taken
	}
	for range 64 - MaxShopSearches {
		wg.Go(func() {
			_, err := s.List(context.Background(), "x")
			errs <- err
		})
	}
	refused := 0
	for range 64 - MaxShopSearches {
		var rl *model.RateLimitedError
		if err := <-errs; !errors.As(err, &rl) {
			t.Errorf("search over the bound: got %v, want RATE_LIMITED", err)
			continue
		}
		refused++
	}
	close(store.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("search within the bound: got %v, want none", err)
		}
	}
	if store.most != MaxShopSearches || refused != 64-MaxShopSearches {
		t.Errorf("at once: got %d searches in the store, %d refused; want %d, %d", store.most, refused, MaxShopSearches, 64-MaxShopSearches)
	}
	if _, err := s.List(context.Background(), "x"); err != nil {
		t.Errorf("search after the flood: got %v, want none", err)
	}
}
