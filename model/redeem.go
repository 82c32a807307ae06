package model

import (
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Redemption at the shop (docs/redemption.md).
var (
	// ErrVoucherUsed: the order was redeemed already (VOUCHER_USED).
	ErrVoucherUsed = errors.New("voucher used")
	// ErrRedeemCodeInvalid: no redeemable order has the code at this shop;
	// a code of another shop gets the same (REDEEM_CODE_INVALID).
	ErrRedeemCodeInvalid = errors.New("redeem code invalid")
	// ErrNotStaff: the caller is not staff of this shop (NOT_STAFF).
	ErrNotStaff = errors.New("not staff of this shop")
	// ErrVoucherNotUsable: the voucher's use days or last day refuse it
	// now (VOUCHER_NOT_USABLE); the error's text says why in words.
	ErrVoucherNotUsable = errors.New("voucher not usable now")
)

// RedeemAlphabet are the 32 symbols of a redemption code: digits and
// capitals without the look-alikes 0, 1, I and O.
const RedeemAlphabet = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"

// RedeemCodeLen is a code's length: 10 symbols, 50 bits.
const RedeemCodeLen = 10

// NewRedeemCode draws a code from crypto/rand.
func NewRedeemCode() string {
	var b [RedeemCodeLen]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	for i := range b {
		b[i] = RedeemAlphabet[b[i]&31] // 256 is a multiple of 32: no bias
	}
	return string(b[:])
}

// NormalizeRedeemCode is code as typed by staff, upper-cased, without
// spaces and dashes; ok is false when it cannot be a code.
func NormalizeRedeemCode(code string) (string, bool) {
	if len(code) > 64 {
		return "", false
	}
	var b strings.Builder
	for _, r := range strings.ToUpper(code) {
		switch {
		case r == ' ' || r == '-' || r == '\t':
			continue
		case r > 127 || !strings.ContainsRune(RedeemAlphabet, r):
			return "", false
		}
		b.WriteRune(r)
	}
	if b.Len() != RedeemCodeLen {
		return "", false
	}
	return b.String(), true
}

// Redeemed is what a redemption answers the staff: the order and its
// voucher.
type Redeemed struct {
	OrderID     int64
	VoucherID   int64
	Title       string
	ActualValue int64
	UseTime     time.Time
}

// RedeemTarget is an order found by its code at a shop, with its voucher's
// use window.
type RedeemTarget struct {
	OrderID     int64
	VoucherID   int64
	Status      int
	UseTime     *time.Time
	Title       string
	ActualValue int64
	UseDays     string
	UseUntil    string
}

var weekdayNames = [...]string{"", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}

// ParseUseDays reads ISO weekdays (1 Monday to 7 Sunday) and returns them
// stored: sorted, without repeats, comma-separated; none is "".
func ParseUseDays(days []int) (string, error) {
	set := slices.Clone(days)
	slices.Sort(set)
	set = slices.Compact(set)
	parts := make([]string, len(set))
	for i, d := range set {
		if d < 1 || d > 7 {
			return "", InvalidArgument("useDays", "weekdays are 1 (Monday) to 7 (Sunday)")
		}
		parts[i] = strconv.Itoa(d)
	}
	return strings.Join(parts, ","), nil
}

// UseDayList is a stored UseDays as numbers (nil when every day).
func UseDayList(stored string) []int {
	if stored == "" {
		return nil
	}
	var out []int
	for _, p := range strings.Split(stored, ",") {
		if d, err := strconv.Atoi(p); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// UseDateLayout is the layout of UseUntil.
const UseDateLayout = "2006-01-02"

// ParseUseUntil checks a last day of use ("" for none).
func ParseUseUntil(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	if _, err := time.Parse(UseDateLayout, s); err != nil {
		return "", InvalidArgument("useUntil", "must be a date YYYY-MM-DD")
	}
	return s, nil
}

// UseWindow checks that a voucher of use days and last day may be used at
// now, read in loc: nil, or ErrVoucherNotUsable with the reason in words.
func UseWindow(days, until string, now time.Time, loc *time.Location) error {
	local := now.In(loc)
	if until != "" && local.Format(UseDateLayout) > until {
		return fmt.Errorf("%w: valid until %s, today is %s", ErrVoucherNotUsable, until, local.Format(UseDateLayout))
	}
	list := UseDayList(days)
	if len(list) == 0 {
		return nil
	}
	today := int(local.Weekday())
	if today == 0 {
		today = 7
	}
	if slices.Contains(list, today) {
		return nil
	}
	names := make([]string, 0, len(list))
	for _, d := range list {
		if d >= 1 && d <= 7 {
			names = append(names, weekdayNames[d])
		}
	}
	return fmt.Errorf("%w: valid on %s only, today is %s", ErrVoucherNotUsable, strings.Join(names, ", "), weekdayNames[today])
}
