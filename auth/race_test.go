//go:build race

package auth

// raceOn: the race detector's sync.Pool drops items at random.
const raceOn = true
