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
	// Shortest is the shortest violating sub-history found (a window of
	// one key's operations). nil without violations.
	Shortest []porcupine.Operation
	// shortestModel checks Shortest: the model, started in any state.
	shortestModel porcupine.Model
}

// CheckMutex checks the acquires and releases of ops against MutexModel,
// giving each key at most timeout.
func CheckMutex(ops []Op, timeout time.Duration) Verdict {
	return check(MutexModel, mutexStarts, mutexOps(ops), timeout)
}

// CheckRegister checks the read-modify-writes of ops against
// RegisterModel, giving each key at most timeout.
func CheckRegister(ops []Op, timeout time.Duration) Verdict {
	return check(RegisterModel, registerStarts, registerOps(ops), timeout)
}

// mutexStarts lists every state a window of ops may start in: free, or
// held by one of its clients (any other holder acts as one of none).
func mutexStarts(ops []porcupine.Operation) []interface{} {
	states := []interface{}{free}
	seen := map[int]bool{}
	for _, op := range ops {
		if c := op.Input.(mutexInput).Client; !seen[c] {
			seen[c] = true
			states = append(states, c)
		}
	}
	return states
}

// registerStarts lists the start states of a window of ops that can matter.
// Each is a value one of them read, or one none read, with token 0. The
// lowest token refuses nothing a higher one would allow.
func registerStarts(ops []porcupine.Operation) []interface{} {
	states := []interface{}{register{Value: -1}}
	seen := map[int64]bool{}
	for _, op := range ops {
		if v := op.Output.(registerOutput).Read; !seen[v] {
			seen[v] = true
			states = append(states, register{Value: v})
		}
	}
	return states
}

// WritePage saves the checker's HTML page of v.Shortest at path.
func (v Verdict) WritePage(path string, timeout time.Duration) error {
	_, info := porcupine.CheckOperationsVerbose(v.shortestModel, v.Shortest, timeout)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := porcupine.Visualize(v.shortestModel, info, f); err != nil {
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

func check(nm porcupine.NondeterministicModel, starts func([]porcupine.Operation) []interface{},
	ops []porcupine.Operation, timeout time.Duration) Verdict {
	m := nm.ToModel()
	v := Verdict{Operations: len(ops)}
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
		p := shortest(m, part, timeout)
		if w, wm := window(nm, starts, p, timeout); v.Shortest == nil || len(w) < len(v.Shortest) {
			v.Shortest, v.shortestModel = w, wm
		}
	}
	return v
}

// shortest returns the shortest closed prefix of part that is still not
// linearizable. part is one key's operations, not linearizable. A closed
// prefix keeps every operation called before a known return of a kept one. So
// every dropped operation was called after all kept ones completed. A
// linearizable history has only linearizable closed prefixes. So a violating
// prefix proves the whole history violates.
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

// window cuts the front of a violating closed prefix. It returns the shortest
// suffix that is not linearizable from any state it could start in. The
// suffix starts at a quiet moment: every earlier operation with a known
// outcome had returned. It comes with the model that starts there. Operations
// of unknown outcome called earlier stay in the window, as if called at its
// start. Illegal from every start, the window proves the violation.
func window(nm porcupine.NondeterministicModel, starts func([]porcupine.Operation) []interface{},
	p []porcupine.Operation, timeout time.Duration) ([]porcupine.Operation, porcupine.Model) {
	inf := int64(0)
	for _, op := range p {
		inf = max(inf, op.Return)
	}
	at := func(s int) ([]porcupine.Operation, porcupine.Model) {
		var w []porcupine.Operation
		for _, op := range p[:s] {
			if op.Return == inf {
				op.Call = p[s].Call
				w = append(w, op)
			}
		}
		w = append(w, p[s:]...)
		wm := nm
		states := starts(w)
		wm.Init = func() []interface{} { return states }
		return w, wm.ToModel()
	}
	horizon := make([]int64, len(p)+1) // horizon[s]: latest known return in p[:s]
	horizon[0] = math.MinInt64
	for i, op := range p {
		horizon[i+1] = horizon[i]
		if op.Return < inf {
			horizon[i+1] = max(horizon[i], op.Return)
		}
	}
	for s := len(p) - 1; s > 0; s-- {
		if horizon[s] >= p[s].Call {
			continue // an operation spans the cut
		}
		w, wm := at(s)
		if porcupine.CheckOperationsTimeout(wm, w, timeout) == porcupine.Illegal {
			return w, wm
		}
	}
	return p, nm.ToModel()
}
