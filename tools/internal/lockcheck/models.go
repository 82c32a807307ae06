package lockcheck

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// free is the mutex state with no holder.
const free = -1

// mutexInput is what a mutex operation asks.
type mutexInput struct {
	Kind   string
	Client int
}

// MutexModel is the lock as a mutex: at most one holder at any moment, and
// a release that succeeds only for the holder. A refused acquire changes
// nothing. A refused release by the holder ends its hold (the lease lapsed
// and the backend noticed). An unknown operation may or may not have taken
// effect. One partition per key.
var MutexModel = porcupine.NondeterministicModel{
	Partition: partitionByKey,
	Init:      func() []interface{} { return []interface{}{free} },
	Step: func(state, input, output interface{}) []interface{} {
		holder, in, out := state.(int), input.(mutexInput), output.(string)
		switch in.Kind {
		case KindAcquire:
			switch out {
			case OK:
				if holder == free {
					return []interface{}{in.Client}
				}
				return nil
			case Unknown:
				if holder == free {
					return []interface{}{holder, in.Client}
				}
				return []interface{}{holder}
			default:
				return []interface{}{holder}
			}
		case KindRelease:
			switch out {
			case OK:
				if holder == in.Client {
					return []interface{}{free}
				}
				return nil
			case Unknown:
				if holder == in.Client {
					return []interface{}{holder, free}
				}
				return []interface{}{holder}
			default:
				if holder == in.Client {
					return []interface{}{free}
				}
				return []interface{}{holder}
			}
		}
		return nil
	},
	DescribeOperation: func(input, output interface{}) string {
		in := input.(mutexInput)
		return fmt.Sprintf("c%d %s -> %s", in.Client, in.Kind, output.(string))
	},
	DescribeState: func(state interface{}) string {
		if state.(int) == free {
			return "free"
		}
		return fmt.Sprintf("held by c%d", state.(int))
	},
}

// register is the guarded register's state: its value and the fencing
// token of the last write applied (0 before any tokened write).
type register struct {
	Value, Token int64
}

// registerInput is what a read-modify-write carries.
type registerInput struct {
	Client int
	Token  int64
}

// registerOutput is what it saw.
type registerOutput struct {
	Outcome     string
	Read, Wrote int64
}

// RegisterModel is the guarded register. A read-modify-write applies
// atomically in one real-time order: it read the value the previous applied
// write left. Writes carrying fencing tokens apply in token order. Otherwise
// it is refused and changes nothing. An unknown write may or may not have
// applied. One partition per key.
var RegisterModel = porcupine.NondeterministicModel{
	Partition: partitionByKey,
	Init:      func() []interface{} { return []interface{}{register{}} },
	Step: func(state, input, output interface{}) []interface{} {
		s, in, out := state.(register), input.(registerInput), output.(registerOutput)
		applies := s.Value == out.Read && (in.Token == 0 || in.Token > s.Token)
		next := register{Value: out.Wrote, Token: max(s.Token, in.Token)}
		switch out.Outcome {
		case OK:
			if applies {
				return []interface{}{next}
			}
			return nil
		case Unknown:
			if applies {
				return []interface{}{s, next}
			}
			return []interface{}{s}
		default:
			return []interface{}{s}
		}
	},
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(registerInput), output.(registerOutput)
		if out.Outcome == OK || out.Outcome == Unknown {
			return fmt.Sprintf("c%d t%d rmw %d->%d %s", in.Client, in.Token, out.Read, out.Wrote, out.Outcome)
		}
		return fmt.Sprintf("c%d t%d rmw %s", in.Client, in.Token, out.Outcome)
	},
	DescribeState: func(state interface{}) string {
		s := state.(register)
		return fmt.Sprintf("%d (t%d)", s.Value, s.Token)
	},
}

// partitionByKey splits a history into one sub-history per key. The key
// travels in each operation's Metadata.
func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	index := map[string]int{}
	var out [][]porcupine.Operation
	for _, op := range history {
		k := op.Metadata.(string)
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], op)
	}
	return out
}
