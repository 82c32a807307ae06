package lockcheck

import (
	"math"
	"os"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// Verdict is one model's judgement of one history.
type Verdict struct {
	// Operations is how many operations the model checked.
	Operations int
	// Violations is how many keys have a sub-history that is not
	// linearizable.
	Violations int
	// TimedOut is how many keys the checker could not decide in time.
	TimedOut int
	// Shortest is the shortest violating sub-history found (a closed
	// prefix of one key's operations); nil without violations.
	Shortest []porcupine.Operation
	model    porcupine.Model
}

// CheckMutex checks the acquires and releases of ops against MutexModel,
// giving each key at most timeout.
func CheckMutex(ops []Op, timeout time.Duration) Verdict {
	return check(MutexModel.ToModel(), mutexOps(ops), timeout)
}

// CheckRegister checks the read-modify-writes of ops against
// RegisterModel, giving each key at most timeout.
func CheckRegister(ops []Op, timeout time.Duration) Verdict {
	return check(RegisterModel.ToModel(), registerOps(ops), timeout)
}

// WritePage saves the checker's HTML page of v.Shortest at path.
func (v Verdict) WritePage(path string, timeout time.Duration) error {
	_, info := porcupine.CheckOperationsVerbose(v.model, v.Shortest, timeout)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := porcupine.Visualize(v.model, info, f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// end returns a time after every known time of ops: the return time of
// the operations whose completion was not seen.
func end(ops []Op) int64 {
	var last int64
	for _, op := range ops {
		last = max(last, op.Call, op.Return)
	}
	return last + 1
}

func mutexOps(ops []Op) []porcupine.Operation {
	var out []porcupine.Operation
	inf := end(ops)
	for _, op := range ops {
		if op.Kind != KindAcquire && op.Kind != KindRelease {
			continue
		}
		out = append(out, porcupine.Operation{
			ClientId: op.Client, Metadata: op.Key, Call: op.Call, Return: returnOf(op, inf),
			Input: mutexInput{Kind: op.Kind, Client: op.Client}, Output: op.Outcome,
		})
	}
	return out
}

func registerOps(ops []Op) []porcupine.Operation {
	var out []porcupine.Operation
	inf := end(ops)
	for _, op := range ops {
		if op.Kind != KindRMW {
			continue
		}
		out = append(out, porcupine.Operation{
			ClientId: op.Client, Metadata: op.Key, Call: op.Call, Return: returnOf(op, inf),
			Input:  registerInput{Client: op.Client, Token: op.Token},
			Output: registerOutput{Outcome: op.Outcome, Read: op.Read, Wrote: op.Wrote},
		})
	}
	return out
}

// returnOf is op's return time, or inf when its completion is unknown.
func returnOf(op Op, inf int64) int64 {
	if op.Outcome == Unknown || op.Return == 0 {
		return inf
	}
	return op.Return
}

func check(m porcupine.Model, ops []porcupine.Operation, timeout time.Duration) Verdict {
	v := Verdict{Operations: len(ops), model: m}
	for _, part := range m.Partition(ops) {
		switch porcupine.CheckOperationsTimeout(m, part, timeout) {
		case porcupine.Ok:
			continue
		case porcupine.Unknown:
			v.TimedOut++
			continue
		}
		v.Violations++
		if v.Violations > 3 {
			continue // the shortest of the first three is short enough
		}
		if s := shortest(m, part, timeout); v.Shortest == nil || len(s) < len(v.Shortest) {
			v.Shortest = s
		}
	}
	return v
}

// shortest returns the shortest closed prefix of part (one key's
// operations, not linearizable) that is still not linearizable. A closed
// prefix keeps every operation called before a known return of a kept
// one, so every dropped operation was called after all kept ones
// completed: a linearizable history has only linearizable closed prefixes,
// and a violating prefix proves the whole history violates.
func shortest(m porcupine.Model, part []porcupine.Operation, timeout time.Duration) []porcupine.Operation {
	ops := append([]porcupine.Operation(nil), part...)
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	inf := int64(0)
	for _, op := range ops {
		inf = max(inf, op.Return)
	}
	prefix := func(n int) []porcupine.Operation {
		horizon := int64(math.MinInt64)
		for i := 0; i < len(ops); i++ {
			if i >= n && ops[i].Call > horizon {
				return ops[:i]
			}
			if ops[i].Return < inf {
				horizon = max(horizon, ops[i].Return)
			}
		}
		return ops
	}
	illegal := func(h []porcupine.Operation) bool {
		return porcupine.CheckOperationsTimeout(m, h, timeout) == porcupine.Illegal
	}
	lo, hi := 1, len(ops) // the prefix of hi violates
	for lo < hi {
		mid := (lo + hi) / 2
		if illegal(prefix(mid)) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if p := prefix(hi); illegal(p) {
		return p
	}
	return ops
}
