package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/model"
)

// IDEpoch is the start of order-id time: 2022-01-01T00:00:00Z.
var IDEpoch = model.OrderIDEpoch

// IDWorker makes 64-bit order ids. The seconds since IDEpoch are shifted
// left 32. A 32-bit daily sequence from Redis is ORed in
// (icr:order:<yyyy:MM:dd>). With a block size above 1 it leases blocks of
// the sequence with INCRBY. It hands them out in process, so most ids cost
// no round trip. Ids stay unique across instances, increasing within one
// instance.
type IDWorker struct {
	rdb   redis.UniversalClient
	block int64
	now   func() time.Time

	mu   sync.Mutex
	day  string
	next int64 // next sequence number to hand out
	end  int64 // end of the leased block (exclusive)
}

// NewIDWorker returns an ID worker leasing block sequence numbers at a time
// (1 = one INCR per id).
func NewIDWorker(rdb redis.UniversalClient, block int64, now func() time.Time) *IDWorker {
	if block < 1 {
		block = 1
	}
	return &IDWorker{rdb: rdb, block: block, now: now}
}

// NextID returns a new order id.
func (w *IDWorker) NextID(ctx context.Context) (int64, error) {
	now := w.now().UTC()
	day := IDDay(now)
	w.mu.Lock()
	defer w.mu.Unlock()
	if day != w.day || w.next >= w.end {
		end, err := w.rdb.IncrBy(ctx, IDSequenceKey(day), w.block).Result()
		if err != nil {
			return 0, redisErr(err)
		}
		w.day, w.next, w.end = day, end-w.block+1, end+1
	}
	seq := w.next
	w.next++
	if seq >= 1<<32 {
		return 0, fmt.Errorf("id worker: daily sequence exhausted (%d)", seq)
	}
	secs := now.Unix() - IDEpoch.Unix()
	return secs<<32 | seq, nil
}

// resyncMargin is how far past the database's highest sequence Resync moves
// the counter. It leaves room for ids the database does not show. Running
// processes may have leased them. Others were announced but lost with
// Redis.
const resyncMargin = 1 << 20

// resyncCap bounds what Resync sets the counter to.
const resyncCap = 1 << 31

// Discard forgets the leased block, so that the next id leases a new one
// (after the sequence was moved past ids the block may hold).
func (w *IDWorker) Discard() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.day, w.next, w.end = "", 0, 0
}

// IDSequence repairs the ID worker's daily sequence after Redis lost it.
type IDSequence struct {
	rdb     redis.UniversalClient
	db      OrderSequences
	now     func() time.Time
	workers []*IDWorker
}

// OrderSequences reads the highest daily sequence among stored order ids.
// sqlstore.DB implements it.
type OrderSequences interface {
	// MaxOrderSequence is the largest low 32 bits of an id in [from, to).
	MaxOrderSequence(ctx context.Context, from, to int64) (int64, error)
}

// NewIDSequence returns the repair of the sequence icr:order:<day>. Each
// Resync also makes workers discard the blocks they leased.
func NewIDSequence(rdb redis.UniversalClient, db OrderSequences, now func() time.Time, workers ...*IDWorker) *IDSequence {
	return &IDSequence{rdb: rdb, db: db, now: now, workers: workers}
}

// Resync makes today's sequence exceed, by a margin, the sequence of every
// order of today in the database. After Redis lost its data the counter
// starts again from zero, and the ids it would hand out (second, sequence)
// could equal ids already used.
func (s *IDSequence) Resync(ctx context.Context) error {
	now := s.now().UTC()
	dayStart := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	first := (dayStart.Unix() - IDEpoch.Unix()) << 32
	maxSeq, err := s.db.MaxOrderSequence(ctx, first, first+(86400<<32))
	if err != nil {
		return fmt.Errorf("id sequence: %w", err)
	}
	key := IDSequenceKey(IDDay(now))
	// Half the 32-bit space at most: an id that did not come from the
	// worker (a row written by hand) must not exhaust the day.
	want := min(maxSeq+resyncMargin, resyncCap)
	cur, err := s.rdb.Get(ctx, key).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return redisErr(err)
	}
	if cur < want {
		// Concurrent INCRBYs only move it further.
		if err := s.rdb.IncrBy(ctx, key, want-cur).Err(); err != nil {
			return redisErr(err)
		}
	}
	for _, w := range s.workers {
		w.Discard()
	}
	return nil
}
