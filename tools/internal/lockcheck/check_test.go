package lockcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const timeout = 10 * time.Second

func acq(c int, call, ret int64, out string) Op {
	return Op{Client: c, Key: "k", Kind: KindAcquire, Call: call, Return: ret, Outcome: out}
}

func rel(c int, call, ret int64, out string) Op {
	return Op{Client: c, Key: "k", Kind: KindRelease, Call: call, Return: ret, Outcome: out}
}

func rmw(c int, tok int64, call, ret int64, out string, read, wrote int64) Op {
	return Op{Client: c, Key: "k", Kind: KindRMW, Token: tok, Call: call, Return: ret, Outcome: out, Read: read, Wrote: wrote}
}

func TestMutex(t *testing.T) {
	tests := []struct {
		name string
		ops  []Op
		want int // violations
	}{
		{"clean handover", []Op{
			acq(1, 0, 10, OK), acq(2, 5, 12, Refused), rel(1, 20, 30, OK), acq(2, 40, 50, OK), rel(2, 60, 70, OK),
		}, 0},
		{"two overlapping holders", []Op{
			acq(1, 0, 10, OK), acq(2, 20, 30, OK), rel(1, 40, 50, OK), rel(2, 60, 70, OK),
		}, 1},
		{"release by a non-holder succeeds", []Op{
			acq(1, 0, 10, OK), rel(2, 20, 30, OK),
		}, 1},
		{"lapsed lease noticed at release", []Op{
			acq(1, 0, 10, OK), rel(1, 20, 30, Refused), acq(2, 40, 50, OK),
		}, 0},
		{"concurrent release and acquire", []Op{
			acq(1, 0, 10, OK), rel(1, 20, 40, OK), acq(2, 30, 35, OK),
		}, 0},
		{"unknown acquire may not have happened", []Op{
			acq(1, 0, 0, Unknown), acq(2, 20, 30, OK), rel(2, 40, 50, OK),
		}, 0},
		{"unknown acquire then a holder beside the first", []Op{
			acq(1, 0, 10, OK), acq(3, 12, 0, Unknown), acq(2, 20, 30, OK),
		}, 1},
		{"unknown release may have freed it", []Op{
			acq(1, 0, 10, OK), rel(1, 20, 0, Unknown), acq(2, 40, 50, OK),
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := CheckMutex(tt.ops, timeout)
			if v.Violations != tt.want || v.TimedOut != 0 {
				t.Fatalf("got %d violations (%d timed out), want %d", v.Violations, v.TimedOut, tt.want)
			}
			if (v.Shortest != nil) != (tt.want > 0) {
				t.Fatalf("got shortest %v with %d violations", v.Shortest, v.Violations)
			}
		})
	}
}

func TestRegister(t *testing.T) {
	tests := []struct {
		name string
		ops  []Op
		want int
	}{
		{"clean sequence", []Op{
			rmw(1, 5, 0, 10, OK, 0, 1), rmw(2, 6, 20, 30, OK, 1, 2), rmw(1, 7, 40, 50, OK, 2, 3),
		}, 0},
		{"lost update", []Op{
			rmw(1, 0, 0, 30, OK, 0, 1), rmw(2, 0, 10, 40, OK, 0, 1),
		}, 1},
		{"write applied after a newer token", []Op{
			rmw(2, 6, 0, 10, OK, 0, 1), rmw(1, 5, 20, 30, OK, 1, 2),
		}, 1},
		{"stale write refused", []Op{
			rmw(2, 6, 0, 10, OK, 0, 1), rmw(1, 5, 20, 30, Refused, 0, 0), rmw(3, 7, 40, 50, OK, 1, 2),
		}, 0},
		{"unknown write that applied", []Op{
			rmw(1, 5, 0, 0, Unknown, 0, 1), rmw(2, 6, 20, 30, OK, 1, 2),
		}, 0},
		{"unknown write that did not apply", []Op{
			rmw(1, 5, 0, 0, Unknown, 0, 1), rmw(2, 6, 20, 30, OK, 0, 1),
		}, 0},
		{"read of a value never written", []Op{
			rmw(1, 0, 0, 10, OK, 7, 8),
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := CheckRegister(tt.ops, timeout)
			if v.Violations != tt.want || v.TimedOut != 0 {
				t.Fatalf("got %d violations (%d timed out), want %d", v.Violations, v.TimedOut, tt.want)
			}
		})
	}
}

// TestShortest checks that a violation deep in a long history is cut to
// a short window, and that its page is written.
func TestShortest(t *testing.T) {
	var ops []Op
	at := int64(0)
	for i := range 50 {
		c := 1 + i%3
		ops = append(ops, acq(c, at, at+5, OK), rel(c, at+10, at+15, OK))
		at += 20
	}
	ops = append(ops, acq(1, at, at+5, OK), acq(2, at+10, at+15, OK))
	v := CheckMutex(ops, timeout)
	if v.Violations != 1 {
		t.Fatalf("got %d violations, want 1", v.Violations)
	}
	if len(v.Shortest) != 2 {
		t.Fatalf("got a window of %d operations, want the 2 overlapping acquires", len(v.Shortest))
	}
	// The same violation first: the prefix stops right after it.
	early := append([]Op{acq(1, -100, -95, OK), acq(2, -90, -85, OK), rel(1, -80, -75, Refused), rel(2, -70, -65, OK)}, ops[:100]...)
	v = CheckMutex(early, timeout)
	if v.Violations != 1 || len(v.Shortest) != 2 {
		t.Fatalf("got %d violations, prefix of %d, want 1 and 2", v.Violations, len(v.Shortest))
	}
	path := filepath.Join(t.TempDir(), "v.html")
	if err := v.WritePage(path, timeout); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), "<html") {
		t.Fatalf("got page of %d bytes (%v), want HTML", len(b), err)
	}
}

// TestWindowNeedsItsPast checks that a window is not cut where its
// operations need what came before: a release is legal only after its
// acquire, so the violation's window keeps the acquire.
func TestWindowNeedsItsPast(t *testing.T) {
	ops := []Op{
		acq(1, 0, 10, OK), rel(1, 20, 30, OK), acq(2, 40, 50, OK), rel(1, 60, 70, OK),
	}
	v := CheckMutex(ops, timeout)
	if v.Violations != 1 {
		t.Fatalf("got %d violations, want 1", v.Violations)
	}
	// c1's second release is illegal from every start of the window
	// {acq2, rel1}: the window is 2 operations.
	if len(v.Shortest) != 2 {
		t.Fatalf("got a window of %d operations, want 2", len(v.Shortest))
	}
	// A register: the lost update needs both writes.
	r := CheckRegister([]Op{
		rmw(1, 0, 0, 10, OK, 0, 1), rmw(2, 0, 20, 60, OK, 1, 2), rmw(3, 0, 30, 70, OK, 1, 2),
	}, timeout)
	if r.Violations != 1 || len(r.Shortest) != 2 {
		t.Fatalf("got %d violations, window of %d, want 1 and 2", r.Violations, len(r.Shortest))
	}
}

func TestRecorderRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRecorder(f)
	want := []Op{acq(1, 1, 2, OK), rmw(1, 9, 3, 0, Unknown, 4, 5)}
	for _, op := range want {
		if err := r.Record(op); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, err := ReadFile(path)
	if err != nil || len(got) != 2 || got[1] != want[1] {
		t.Fatalf("got %v (%v), want %v", got, err, want)
	}
}
