package store

import "testing"

type fake struct{}

func (fake) One()   {}
func (fake) Two()   {}
func (fake) Three() {}
func (*fake) Four() {}

func TestSell(t *testing.T) {
	s := New()
	s.Sell()
	if s.Left() != 0 {
		t.Fatal("left")
	}
}
