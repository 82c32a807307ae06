package model

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRedeemCodes(t *testing.T) {
	seen := map[string]bool{}
	for range 2000 {
		c := NewRedeemCode()
		if n, ok := NormalizeRedeemCode(c); !ok || n != c {
			t.Fatalf("code %q does not read back: %q %v", c, n, ok)
		}
		if seen[c] {
			t.Fatalf("code %q drawn twice", c)
		}
		seen[c] = true
	}
	if n, ok := NormalizeRedeemCode(" abcd-efgh-jk "); !ok || n != "ABCDEFGHJK" {
		t.Errorf("typed code: %q %v", n, ok)
	}
	for _, bad := range []string{"", "ABCDEFGHJ", "ABCDEFGHJKL", "ABCDEFGHJ0", "ABCDEFGHJI", "ÄBCDEFGHJK", strings.Repeat("A", 100)} {
		if _, ok := NormalizeRedeemCode(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestUseWindow(t *testing.T) {
	loc := time.UTC
	sunday := time.Date(2026, 3, 1, 12, 0, 0, 0, loc) // a Sunday
	if err := UseWindow("", "", sunday, loc); err != nil {
		t.Fatal(err)
	}
	err := UseWindow("1,2,3,4,5", "", sunday, loc)
	if !errors.Is(err, ErrVoucherNotUsable) || !strings.Contains(err.Error(), "Monday, Tuesday, Wednesday, Thursday, Friday only, today is Sunday") {
		t.Errorf("weekdays on a Sunday: %v", err)
	}
	if err := UseWindow("6,7", "", sunday, loc); err != nil {
		t.Errorf("weekend on a Sunday: %v", err)
	}
	if err := UseWindow("", "2026-03-01", sunday, loc); err != nil {
		t.Errorf("last day: %v", err)
	}
	err = UseWindow("", "2026-02-28", sunday, loc)
	if !errors.Is(err, ErrVoucherNotUsable) || !strings.Contains(err.Error(), "valid until 2026-02-28, today is 2026-03-01") {
		t.Errorf("after the last day: %v", err)
	}
	if s, err := ParseUseDays([]int{5, 1, 5}); err != nil || s != "1,5" {
		t.Errorf("ParseUseDays: %q %v", s, err)
	}
	if _, err := ParseUseDays([]int{0}); err == nil {
		t.Error("day 0 accepted")
	}
	if _, err := ParseUseUntil("2026-13-01"); err == nil {
		t.Error("month 13 accepted")
	}
}
