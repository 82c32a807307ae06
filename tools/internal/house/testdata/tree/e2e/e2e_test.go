package e2e

import "testing"

func TestNothing(t *testing.T) {}
