package sqlstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"seckill/model"
	"seckill/testkit/testenv"
)

func entryOf(o *model.VoucherOrder) model.QueuedOrder {
	return model.QueuedOrder{MsgID: "1-0", OrderID: o.ID, UserID: o.UserID, VoucherID: o.VoucherID}
}

// TestOrderOutcome: one outcome per order. A dead letter recorded first
// stops the batch and the single write of the order. An order written
// first turns the dead letter into an acknowledgement. The first dead
// letter's reason stays. An id of another order records nothing.
func TestOrderOutcome(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, databases(t), func(t *testing.T, db *DB) {
		r := NewOrders(db)
		vid := newVoucher(t, db, 5)
		u := 1_000_000 + rand.Int64N(1<<40)
		given, written := order(vid, u+1), order(vid, u+2)

		out, err := r.RecordDeadLetter(ctx, entryOf(given), "sold_out", 2)
		if err != nil || out != (model.Outcome{Reason: "sold_out", Attempts: 2}) {
			t.Fatalf("first dead letter: got %+v, %v, want sold_out, 2", out, err)
		}
		out, err = r.RecordDeadLetter(ctx, entryOf(given), "failures", 5)
		if err != nil || out != (model.Outcome{Reason: "sold_out", Attempts: 2}) {
			t.Errorf("second dead letter: got %+v, %v, want the first one's (sold_out, 2)", out, err)
		}
		if _, err := r.WriteBatch(ctx, "", []model.VoucherOrder{*written, *given}); !errors.Is(err, model.ErrOrderDeadLettered) {
			t.Errorf("batch with a dead-lettered order: got %v, want ErrOrderDeadLettered", err)
		}
		if s, n := stockAndOrders(t, db, vid); s != 5 || n != 0 {
			t.Errorf("after the refused batch: stock %d, %d orders, want 5, 0", s, n)
		}
		if _, err := r.WriteOne(ctx, "", given); !errors.Is(err, model.ErrOrderDeadLettered) {
			t.Errorf("single write of a dead-lettered order: got %v, want ErrOrderDeadLettered", err)
		}

		if existed, err := r.WriteOne(ctx, "", written); err != nil || existed {
			t.Fatalf("write: got %v, %v, want written", existed, err)
		}
		out, err = r.RecordDeadLetter(ctx, entryOf(written), "deliveries", 6)
		if err != nil || !out.Written {
			t.Errorf("dead letter of a written order: got %+v, %v, want Written", out, err)
		}
		if existed, err := r.WriteOne(ctx, "", written); err != nil || !existed {
			t.Errorf("write again: got %v, %v, want existed", existed, err)
		}
		other := entryOf(written)
		other.UserID++
		if _, err := r.RecordDeadLetter(ctx, other, "deliveries", 6); !errors.Is(err, model.ErrOrderIDTaken) {
			t.Errorf("dead letter under another order's id: got %v, want ErrOrderIDTaken", err)
		}

		// An order written before outcomes were recorded (no row).
		old := order(vid, u+3)
		if err := r.CreateOrder(ctx, old, nil); err != nil {
			t.Fatal(err)
		}
		if out, err := r.RecordDeadLetter(ctx, entryOf(old), "deliveries", 6); err != nil || !out.Written {
			t.Errorf("dead letter of an order written without outcome: got %+v, %v, want Written", out, err)
		}
		if s, n := stockAndOrders(t, db, vid); s != 3 || n != 2 {
			t.Errorf("end: stock %d, %d orders, want 3, 2", s, n)
		}
	})
}

// TestOrderOutcomeRace: for each of many orders, a write (batch or
// single) and a dead letter run at once. In every interleaving exactly one
// wins. A written order is never reported given up, and a given-up order
// is never in the database.
func TestOrderOutcomeRace(t *testing.T) {
	ctx := context.Background()
	testenv.Each(t, databases(t), func(t *testing.T, db *DB) {
		r := NewOrders(db)
		const n = 40
		vid := newVoucher(t, db, n)
		u := 1_000_000 + rand.Int64N(1<<40)
		wins := map[bool]int{}
		for i := range n {
			o := order(vid, u+int64(i))
			start := make(chan struct{})
			var wg sync.WaitGroup
			var writeErr, deadErr error
			var out model.Outcome
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				if i%2 == 0 {
					_, writeErr = r.WriteBatch(ctx, "", []model.VoucherOrder{*o})
				} else {
					_, writeErr = r.WriteOne(ctx, "", o)
				}
			}()
			go func() {
				defer wg.Done()
				<-start
				out, deadErr = r.RecordDeadLetter(ctx, entryOf(o), "deliveries", 6)
			}()
			close(start)
			wg.Wait()
			if errors.Is(writeErr, model.ErrUnavailable) || errors.Is(deadErr, model.ErrUnavailable) {
				t.Fatalf("order %d: database unavailable: %v, %v", i, writeErr, deadErr)
			}
			if deadErr != nil {
				t.Fatalf("order %d: dead letter: %v", i, deadErr)
			}
			inDB, err := r.Written(ctx, []model.QueuedOrder{entryOf(o)})
			if err != nil {
				t.Fatal(err)
			}
			wins[out.Written]++
			switch {
			case out.Written && (writeErr != nil || !inDB[o.ID]):
				t.Errorf("order %d: dead letter says written, write got %v, in database %v", i, writeErr, inDB[o.ID])
			case !out.Written && (!errors.Is(writeErr, model.ErrOrderDeadLettered) || inDB[o.ID]):
				t.Errorf("order %d: dead letter won, write got %v (want ErrOrderDeadLettered), in database %v", i, writeErr, inDB[o.ID])
			}
		}
		t.Logf("written first %d times, dead letter first %d times", wins[true], wins[false])
	})
}
