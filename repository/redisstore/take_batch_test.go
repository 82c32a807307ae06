package redisstore

import (
	"slices"
	"testing"
)

// TestTakeBatch: the head of the queue, in order, at most max, each told;
// the rest at the front of the same array, the tail cleared.
func TestTakeBatch(t *testing.T) {
	a, b, c := new(int), new(int), new(int)
	q := []*int{a, b, c}
	arr := q[:cap(q)]
	var told []*int
	got := takeBatch(&q, 2, func(p *int) { told = append(told, p) })
	if !slices.Equal(got, []*int{a, b}) || !slices.Equal(told, got) {
		t.Fatalf("took %v, told %v; want a, b twice", got, told)
	}
	if !slices.Equal(q, []*int{c}) || &q[0] != &arr[0] || arr[1] != nil || arr[2] != nil {
		t.Fatalf("queue %v (array %v): want c at the front of the same array, the rest nil", q, arr)
	}
	if got := takeBatch(&q, 2, func(*int) {}); !slices.Equal(got, []*int{c}) || len(q) != 0 {
		t.Fatalf("second take %v, queue %v", got, q)
	}
	if got := takeBatch(&q, 2, func(*int) {}); len(got) != 0 {
		t.Fatalf("empty queue gave %v", got)
	}
}
