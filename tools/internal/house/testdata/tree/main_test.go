package main

import "testing"

// TestMain_ runs the seller once.
func TestMain_(t *testing.T) {
	main()
}
