package lockrun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"seckill/lock"
	"seckill/tools/cmd/harness/testbed"
	"seckill/tools/internal/lockcheck"
)

func TestLockCheckPlan(t *testing.T) {
	rows := lcPlan("", "", false)
	// Every mode x fault unfenced, the token modes fenced too, the
	// Redlock restart only for redsync and multi (multi fenced too), the
	// Sentinel failover only for the four single-Redis modes (lua and
	// reentrant fenced too).
	general := len(lcFaults) - len(lcFaultModes)
	want := len(lock.Modes)*general + len(lcTokenModes)*general + (2 + 1) + (4 + 2)
	if len(rows) != want {
		t.Fatalf("got %d rows, want %d", len(rows), want)
	}
	for _, r := range lcPlan("", "", true) {
		if !lcMustHold(r) || r.Fault == "none" {
			t.Errorf("CI runs %+v, which need not hold", r)
		}
	}
	if got := lcPlan("lua", "pause", false); len(got) != 2 {
		t.Fatalf("got %d rows for lua under pause, want 2 (fencing off, on)", len(got))
	}
}

func TestLockCheckVerdicts(t *testing.T) {
	tests := []struct {
		r    Row
		want string
	}{
		{Row{}, "holds"},
		{Row{MutexViolations: 1, Fencing: true}, "fenced"},
		{Row{MutexViolations: 1}, "lock fails"},
		{Row{MutexViolations: 1, RegisterViolations: 1, Fencing: true}, "fails"},
		{Row{Undecided: 1}, "undecided"},
		{Row{Error: "x"}, "error"},
	}
	for _, tt := range tests {
		if got := verdictOf(tt.r); got != tt.want {
			t.Errorf("verdictOf(%+v): got %q, want %q", tt.r, got, tt.want)
		}
	}
	mustHold := Row{Mode: "lua", Fault: "pause", Fencing: true, MutexViolations: 2}
	if why := lcBroken(mustHold); why != "" {
		t.Errorf("a fenced lua row with a kept register broke: %s", why)
	}
	mustHold.RegisterViolations = 1
	if lcBroken(mustHold) == "" {
		t.Error("a fenced lua row with a register violation passed")
	}
	if lcBroken(Row{Mode: "mysql", Fault: "partition-lock", MutexViolations: 1}) == "" {
		t.Error("mysql with two holders under a partition passed")
	}
	if why := lcBroken(Row{Mode: "lua", Fault: "pause", RegisterViolations: 1}); why != "" {
		t.Errorf("unfenced lua must not hold, got %q", why)
	}
}

func TestLockCheckMerge(t *testing.T) {
	old := Report{RunInfo: testbed.RunInfo{Command: "make lock-check", ElapsedS: 10}, Rows: []Row{
		{Mode: "lua", Fault: "pause", Verdict: "fails"},
		{Mode: "mysql", Fault: "pause", Verdict: "holds"},
	}}
	run := Report{RunInfo: testbed.RunInfo{Command: "LOCKCHECK_MODES=lua make lock-check", ElapsedS: 5}, Rows: []Row{
		{Mode: "lua", Fault: "pause", Verdict: "lock fails"},
		{Mode: "lua", Fault: "none", Verdict: "holds"},
	}}
	got := mergeLockCheck(old, run)
	var names []string
	for _, r := range got.Rows {
		names = append(names, r.Mode+"/"+r.Fault+"/"+r.Verdict)
	}
	want := "lua/none/holds lua/pause/lock fails mysql/pause/holds"
	if strings.Join(names, " ") != want {
		t.Fatalf("got %q, want %q", strings.Join(names, " "), want)
	}
	if got.ElapsedS != 15 || !strings.Contains(got.Command, "; then ") {
		t.Fatalf("got %v s, %q", got.ElapsedS, got.Command)
	}
}

func TestHolding(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	write := func(ops ...lockcheck.Op) {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		r := lockcheck.NewRecorder(f)
		for _, op := range ops {
			if err := r.Record(op); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.Flush(); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	acq := lockcheck.Op{Client: 1, Kind: lockcheck.KindAcquire, Outcome: lockcheck.OK}
	rel := lockcheck.Op{Client: 1, Kind: lockcheck.KindRelease, Outcome: lockcheck.OK}
	refused := lockcheck.Op{Client: 2, Kind: lockcheck.KindAcquire, Outcome: lockcheck.Refused}
	write(acq, refused)
	if !holding(path) {
		t.Error("got not holding after an acquire, want holding")
	}
	write(acq, rel, refused)
	if holding(path) {
		t.Error("got holding after the release, want not")
	}
}
