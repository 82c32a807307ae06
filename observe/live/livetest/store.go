// Package livetest is test support for the live dashboard: a live.Store in
// memory, shared by several publishers the way Redis is. Nothing in the
// product imports it.
package livetest

import (
	"context"
	"maps"
	"slices"
	"sync"

	"seckill/model"
)

// Store is a live.Store in memory. Its zero value is not ready: use New.
type Store struct {
	mu        sync.Mutex
	counts    map[int64]model.LiveCounts
	history   map[int64]map[int64][]int64 // voucher -> second -> answers by code
	instances map[string]model.LiveInstance
	publishes int
	fail      error // Publish and the reads fail with it when set
}

// New returns an empty store.
func New() *Store {
	return &Store{counts: map[int64]model.LiveCounts{}, history: map[int64]map[int64][]int64{}, instances: map[string]model.LiveInstance{}}
}

// Publish adds deltas to the counts and records inst.
func (m *Store) Publish(_ context.Context, inst model.LiveInstance, deltas map[int64]model.LiveCounts) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.publishes++
	for id, d := range deltas {
		if m.counts[id] == nil {
			m.counts[id] = model.LiveCounts{}
		}
		for k, n := range d {
			m.counts[id][k] += n
		}
		for i, c := range model.LiveCodes {
			n := d[model.LiveCodeField(c)]
			if n == 0 {
				continue
			}
			if m.history[id] == nil {
				m.history[id] = map[int64][]int64{}
			}
			sec := inst.Seen.Unix()
			if m.history[id][sec] == nil {
				m.history[id][sec] = make([]int64, len(model.LiveCodes))
			}
			m.history[id][sec][i] += n
		}
	}
	m.instances[inst.ID] = inst
	return nil
}

// Retire forgets an instance.
func (m *Store) Retire(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.instances, id)
	return nil
}

// Instances lists the recorded instances.
func (m *Store) Instances(context.Context) ([]model.LiveInstance, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return nil, m.fail
	}
	var out []model.LiveInstance
	for _, in := range m.instances {
		out = append(out, in)
	}
	return out, nil
}

// Counts returns a copy of a voucher's counts.
func (m *Store) Counts(_ context.Context, id int64) (model.LiveCounts, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return nil, m.fail
	}
	out := maps.Clone(m.counts[id])
	if out == nil {
		out = model.LiveCounts{}
	}
	return out, nil
}

// History returns a voucher's answers per second, in time order.
func (m *Store) History(_ context.Context, id int64) (model.LiveHistory, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return model.LiveHistory{}, m.fail
	}
	var h model.LiveHistory
	for _, sec := range slices.Sorted(maps.Keys(m.history[id])) {
		h.Seconds = append(h.Seconds, model.LiveSecond{At: sec, Answers: slices.Clone(m.history[id][sec])})
	}
	return h, nil
}

// Count returns one counter of a voucher.
func (m *Store) Count(id int64, field string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[id][field]
}

// Publishes says how many publications succeeded.
func (m *Store) Publishes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.publishes
}

// SetFail makes Publish and the reads fail with err (nil: succeed again).
func (m *Store) SetFail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fail = err
}
