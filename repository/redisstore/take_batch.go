package redisstore

// takeBatch moves up to max items from the head of *queue into a new
// slice, in order, and calls taken on each (to mark it no longer queued).
// The queue keeps its array: the rest moves to its front and the tail is
// cleared for the collector. The caller holds the queue's lock. Both
// batchers (evalBatcher, roomJoins) take their next round trip with it.
func takeBatch[T any](queue *[]T, max int, taken func(T)) []T {
	q := *queue
	n := min(len(q), max)
	batch := make([]T, n)
	copy(batch, q)
	for _, c := range batch {
		taken(c)
	}
	rest := copy(q, q[n:])
	clear(q[rest:])
	*queue = q[:rest]
	return batch
}
