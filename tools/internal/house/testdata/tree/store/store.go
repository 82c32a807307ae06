// Package store keeps the stock.
//
// Version 1.26.8 is fine! Is it?
//
//	store.New().Sell()
//
// Items:
//   - one item
//   - two items
package store

// Store holds the stock.
type Store struct{ n int }

// New returns a store.
func New() *Store { return &Store{n: 1} }

// Sell takes one unit.
func (s *Store) Sell() { s.n-- }

// Left returns the units left.
func (s Store) Left() int { return s.n }

// Add puts units back.
func (s *Store) Add(n int) { s.n += n }
