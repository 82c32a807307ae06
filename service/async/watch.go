package async

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"seckill/model"
)

// Async mode keeps admitted orders in Redis until a consumer writes them.
// If Redis loses its data, Watch notices and recovers without a person.
// The steps and their reasons are in docs/async.md ("the Redis watch").

// LossPrefix starts the rows that record a Redis data loss.
// A row is redislost:<unix ms of the detection>; its value says what was seen.
const LossPrefix = "redislost:"

// WatchConfig configures Watch.
type WatchConfig struct {
	// Every is how often the Redis identity is read. Default 1s.
	Every time.Duration
	// Rebuild rebuilds each live voucher found unsafe from the facts at
	// once. The loss fence settles the consumers' writes first. False leaves
	// it to the operator (`seckill rebuild`).
	Rebuild bool
}

// Watch follows the Redis identity until ctx ends.
// Run it in its own goroutine after Reconcile.
func (s *Reconciler) Watch(ctx context.Context, cfg WatchConfig) {
	if cfg.Every <= 0 {
		cfg.Every = time.Second
	}
	log := s.d.Log.With("component", "redis-watch")
	var last model.RedisIdentity
	// scan looks for unsafe vouchers: at start, after a change and until
	// a rebuild succeeds.
	scan := true
	t := time.NewTicker(cfg.Every)
	defer t.Stop()
	for {
		id, err := s.d.Redis.Identity(ctx)
		switch {
		case err != nil:
			log.DebugContext(ctx, "read redis identity", "err", err)
		case last == (model.RedisIdentity{}) && id.Epoch != "":
			last = id
		case id.Epoch != last.Epoch || (id.RunID != "" && last.RunID != "" && id.RunID != last.RunID):
			log.WarnContext(ctx, "redis changed under the running service: restarted, replaced or failed over",
				"run_id_before", last.RunID, "run_id", id.RunID, "epoch_before", last.Epoch, "epoch", id.Epoch)
			if err := s.redisChanged(ctx, last, id); err != nil {
				log.ErrorContext(ctx, "reconcile after redis changed (retried)", "err", err)
				break
			}
			if id, err = s.d.Redis.Identity(ctx); err == nil {
				last, scan = id, true
			}
		}
		if scan && cfg.Rebuild && ctx.Err() == nil {
			if err := s.rebuildUnsafe(ctx); err != nil {
				log.WarnContext(ctx, "automatic rebuild (retried)", "err", err)
			} else {
				scan = false
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// redisChanged records the loss and reconciles.
func (s *Reconciler) redisChanged(ctx context.Context, before, now model.RedisIdentity) error {
	at := s.d.Now()
	what := fmt.Sprintf("run_id %s -> %s, epoch %q -> %q", before.RunID, now.RunID, before.Epoch, now.Epoch)
	if err := s.d.Values.InsertIfAbsent(ctx, LossPrefix+strconv.FormatInt(at.UnixMilli(), 10), what); err != nil {
		return fmt.Errorf("record the loss: %w", err)
	}
	return s.Reconcile(ctx)
}

// rebuildUnsafe rebuilds each live voucher found unsafe, at once. The
// rebuild moves the loss fence first: no write of entries read before it
// can follow the facts it reads.
func (s *Reconciler) rebuildUnsafe(ctx context.Context) error {
	live, err := s.d.Vouchers.ListLive(ctx, s.d.Now())
	if err != nil {
		return err
	}
	states, err := s.d.Redis.Vouchers(ctx, voucherIDs(live))
	if err != nil {
		return err
	}
	var due []model.SeckillVoucher
	for _, sv := range live {
		if states[sv.VoucherID].State == model.VoucherStateUnsafe {
			due = append(due, sv)
		}
	}
	if len(due) == 0 {
		return nil
	}
	n, err := s.rebuildIfUnsafe(ctx, due)
	if err != nil {
		return err
	}
	if n > 0 {
		s.d.Log.WarnContext(ctx, "vouchers rebuilt automatically after redis lost its data: admissions lost with it are reported failed to their owners",
			"vouchers", n)
	}
	return nil
}

// rebuildIfUnsafe rebuilds the vouchers still unsafe, under the reconcile lock.
// Another process may have rebuilt some meanwhile.
// It returns how many it rebuilt.
func (s *Reconciler) rebuildIfUnsafe(ctx context.Context, vouchers []model.SeckillVoucher) (int, error) {
	var todo []model.SeckillVoucher
	err := s.withReconcileLock(ctx, func(ctx context.Context) error {
		states, err := s.d.Redis.Vouchers(ctx, voucherIDs(vouchers))
		if err != nil {
			return err
		}
		var reasons []string
		for _, sv := range vouchers {
			if states[sv.VoucherID].State == model.VoucherStateUnsafe {
				todo, reasons = append(todo, sv), append(reasons, "automatic: redis lost its data")
			}
		}
		return s.rebuildAll(ctx, todo, reasons)
	})
	return len(todo), err
}

// voucherIDs lists the vouchers' ids.
func voucherIDs(vs []model.SeckillVoucher) []int64 {
	ids := make([]int64, len(vs))
	for i, sv := range vs {
		ids[i] = sv.VoucherID
	}
	return ids
}

// lostWith reports whether an order found nowhere was lost with Redis.
// That is so when its id was made before a recorded loss,
// within the life of an order-info record before it.
// Such an order will never be written.
func lostWith(ctx context.Context, values NamedValues, orderID int64, infoTTL time.Duration) (bool, error) {
	if values == nil {
		return false, nil
	}
	rows, err := values.List(ctx, LossPrefix)
	if err != nil {
		return false, err
	}
	made := model.OrderIDTime(orderID)
	for name := range rows {
		ms, err := strconv.ParseInt(strings.TrimPrefix(name, LossPrefix), 10, 64)
		if err != nil {
			continue
		}
		at := time.UnixMilli(ms)
		// Ids carry whole seconds: the loss's second counts.
		if !made.After(at) && made.After(at.Add(-infoTTL)) {
			return true, nil
		}
	}
	return false, nil
}
