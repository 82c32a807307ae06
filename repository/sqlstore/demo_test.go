package sqlstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestDemoMarksOneClaim: of processes claiming the demo seed at once,
// exactly one wins. The others read the record, and a released claim can
// be claimed again.
func TestDemoMarksOneClaim(t *testing.T) {
	for name, db := range databases(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			m := &DemoMarks{db: db.Gorm, name: fmt.Sprintf("demo_test_%d", rand.Int64())}
			t.Cleanup(func() { m.ReleaseDemo(context.Background()) })
			const n = 8
			var wg sync.WaitGroup
			wins := make(chan bool, n)
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ok, existing, err := m.ClaimDemo(ctx)
					if err != nil {
						t.Errorf("ClaimDemo: %v", err)
						return
					}
					if !ok && existing == "" {
						t.Errorf("lost the claim but read no record")
					}
					wins <- ok
				}()
			}
			wg.Wait()
			close(wins)
			won := 0
			for ok := range wins {
				if ok {
					won++
				}
			}
			if won != 1 {
				t.Fatalf("claims won: got %d, want 1", won)
			}
			if err := m.SetDemo(ctx, "shop=1 voucher=2"); err != nil {
				t.Fatal(err)
			}
			if ok, existing, err := m.ClaimDemo(ctx); ok || existing != "shop=1 voucher=2" || err != nil {
				t.Errorf("claim after the seed: got %v, %q, %v, want false and the record", ok, existing, err)
			}
			if err := m.ReleaseDemo(ctx); err != nil {
				t.Fatal(err)
			}
			if ok, _, err := m.ClaimDemo(ctx); !ok || err != nil {
				t.Errorf("claim after a release: got %v, %v, want true", ok, err)
			}
		})
	}
}
