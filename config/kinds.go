package config

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A binding ties one setting to its Config field: one parser per type,
// the bounds, the default and how the value is shown.
type binding interface {
	// set parses v (never empty) into c's field when it is valid.
	set(c *Config, v string) error
	// check reports a field value outside the setting's bounds.
	check(c *Config) error
	// reset puts the default into c's field.
	reset(c *Config)
	// what describes the accepted values in markdown ("a duration ≥ 1s").
	what() string
	// defText is the default as text, empty for an empty string or list.
	defText() string
	// logValue is the field's value in the start-up log line.
	logValue(c *Config) slog.Value
}

// field is a binding of one Go type T. parse reads a T from text,
// valid checks its bounds, show writes it back as text.
type field[T any] struct {
	ptr   func(*Config) *T
	def   T
	parse func(string) (T, error)
	valid func(T) error
	show  func(T) string
	log   func(T) slog.Value
	desc  string
}

func (f field[T]) set(c *Config, v string) error {
	x, err := f.parse(v)
	if err != nil {
		return notA(v, f.desc)
	}
	if err := f.valid(x); err != nil {
		return err
	}
	*f.ptr(c) = x
	return nil
}

func (f field[T]) check(c *Config) error { return f.valid(*f.ptr(c)) }
func (f field[T]) reset(c *Config)       { *f.ptr(c) = f.def }
func (f field[T]) what() string          { return f.desc }
func (f field[T]) defText() string       { return f.show(f.def) }

func (f field[T]) logValue(c *Config) slog.Value { return f.log(*f.ptr(c)) }

// notA is the one message of a value that is not what the setting takes.
func notA(v, desc string) error { return fmt.Errorf("%q is not %s", v, plain(desc)) }

// plain drops markdown's backquotes for terminals and error messages.
func plain(s string) string { return strings.ReplaceAll(s, "`", "") }

// bounded returns valid for a T within [lo, hi], or desc's refusal.
func bounded[T int | float64 | time.Duration](lo, hi T, show func(T) string, desc string) func(T) error {
	return func(x T) error {
		if x >= lo && x <= hi {
			return nil
		}
		return notA(show(x), desc)
	}
}

// text is a string setting; check, when not nil, refuses bad values with
// its own message (a DSN's error must not repeat its password).
func text(ptr func(*Config) *string, def, desc string, check func(string) error) binding {
	if check == nil {
		check = func(string) error { return nil }
	}
	return field[string]{ptr: ptr, def: def, desc: desc,
		parse: func(s string) (string, error) { return s, nil },
		valid: check, show: func(s string) string { return s }, log: slog.StringValue}
}

// number is a whole number from lo to hi (math.MaxInt: no upper bound).
func number(ptr func(*Config) *int, def, lo, hi int) binding {
	desc := fmt.Sprintf("a whole number from %d to %d", lo, hi)
	if hi == math.MaxInt {
		desc = fmt.Sprintf("a whole number ≥ %d", lo)
	}
	return field[int]{ptr: ptr, def: def, desc: desc, parse: strconv.Atoi,
		valid: bounded(lo, hi, strconv.Itoa, desc), show: strconv.Itoa, log: slog.IntValue}
}

// fraction is a decimal number from lo to hi.
func fraction(ptr func(*Config) *float64, def, lo, hi float64) binding {
	show := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	desc := fmt.Sprintf("a fraction from %s to %s", show(lo), show(hi))
	return field[float64]{ptr: ptr, def: def, desc: desc,
		parse: func(s string) (float64, error) { return strconv.ParseFloat(s, 64) },
		valid: bounded(lo, hi, show, desc), show: show, log: slog.Float64Value}
}

// duration is a Go duration of at least lo (0 means any, 1ns positive).
// With off, 0 is accepted too and switches the feature off.
func duration(ptr func(*Config) *time.Duration, def, lo time.Duration, off bool) binding {
	var desc string
	switch {
	case lo == 0:
		desc = "a duration like `10s`"
	case lo == time.Nanosecond:
		desc = "a positive duration like `10s`"
	default:
		desc = "a duration ≥ `" + shortDuration(lo) + "`"
	}
	if off {
		desc = "`0` (off) or " + desc
	}
	inBounds := bounded(lo, time.Duration(math.MaxInt64), shortDuration, desc)
	valid := func(d time.Duration) error {
		if off && d == 0 {
			return nil
		}
		return inBounds(d)
	}
	return field[time.Duration]{ptr: ptr, def: def, desc: desc, parse: time.ParseDuration,
		valid: valid, show: shortDuration, log: func(d time.Duration) slog.Value { return slog.StringValue(d.String()) }}
}

// onOff is a switch written "on" or "off", in any case.
func onOff(ptr func(*Config) *bool, def bool) binding {
	show := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	parse := func(s string) (bool, error) {
		switch strings.ToLower(s) {
		case "on":
			return true, nil
		case "off":
			return false, nil
		}
		return false, errors.New("not on or off")
	}
	return field[bool]{ptr: ptr, def: def, desc: "`on` or `off`", parse: parse,
		valid: func(bool) error { return nil }, show: show, log: slog.BoolValue}
}

// oneOf is one of values, spelt exactly.
func oneOf(ptr func(*Config) *string, def string, values []string) binding {
	desc := "one of `" + strings.Join(values, "`, `") + "`"
	valid := func(s string) error {
		if slices.Contains(values, s) {
			return nil
		}
		return notA(s, desc)
	}
	return field[string]{ptr: ptr, def: def, desc: desc,
		parse: func(s string) (string, error) { return s, nil },
		valid: valid, show: func(s string) string { return s }, log: slog.StringValue}
}

// list is a comma-separated list; blanks around items and empty items
// are dropped, and every item must pass item (desc names one item).
func list(ptr func(*Config) *[]string, item func(string) bool, desc string) binding {
	valid := func(l []string) error {
		for _, v := range l {
			if !item(v) {
				return notA(v, desc)
			}
		}
		return nil
	}
	return field[[]string]{ptr: ptr, desc: "a comma list of " + desc, parse: splitList, valid: valid,
		show: func(l []string) string { return strings.Join(l, ",") },
		log:  func(l []string) slog.Value { return slog.AnyValue(l) }}
}

func splitList(v string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out, nil
}

// shortDuration writes d without trailing zero units: 1m, not 1m0s.
func shortDuration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
