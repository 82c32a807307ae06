// Package lockcheck checks recorded histories of the lock family with a
// linearizability checker (porcupine). Two models know the promises: the
// lock as a mutex, and the register its holders update. The workload and
// the faults live in tools/cmd/harness/lockrun. This package only reads histories.
package lockcheck

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Kinds of operation.
const (
	KindAcquire = "acquire" // Locker.Obtain
	KindRelease = "release" // Lock.Release
	KindRMW     = "rmw"     // the guarded read-modify-write of the register
)

// Outcomes of an operation.
const (
	// OK means the operation took effect.
	OK = "ok"
	// Refused means it did not: the lock was held, the release was by a
	// non-holder, or the register refused a stale token.
	Refused = "refused"
	// Failed means it failed before it could take effect (the register's
	// read failed, so no write was sent).
	Failed = "error"
	// Unknown means its completion was not seen (a timeout, a lost
	// reply): it may or may not have taken effect.
	Unknown = "unknown"
)

// Op is one recorded operation. Times are nanoseconds of one clock shared
// by every process of the run (CLOCK_MONOTONIC of the machine).
type Op struct {
	Process int    `json:"process"`
	Client  int    `json:"client"` // unique across processes
	Key     string `json:"key"`
	Kind    string `json:"kind"`
	Call    int64  `json:"call"`
	Return  int64  `json:"return"` // 0 when the outcome is unknown
	Outcome string `json:"outcome"`
	// Token is the fencing token of the grant (acquire) or the one the
	// write carried (rmw). 0 when the backend mints none.
	Token int64 `json:"token,omitempty"`
	// Read and Wrote are the register's value before and after an rmw.
	Read  int64  `json:"read,omitempty"`
	Wrote int64  `json:"wrote,omitempty"`
	Err   string `json:"err,omitempty"`
}

// Recorder appends operations to a JSON-lines writer. It is not safe for
// concurrent use. Wrap it in a mutex or give each client its own.
type Recorder struct {
	w   *bufio.Writer
	enc *json.Encoder
}

// NewRecorder writes to w.
func NewRecorder(w io.Writer) *Recorder {
	bw := bufio.NewWriter(w)
	return &Recorder{w: bw, enc: json.NewEncoder(bw)}
}

// Record appends op.
func (r *Recorder) Record(op Op) error { return r.enc.Encode(op) }

// Flush writes what is buffered.
func (r *Recorder) Flush() error { return r.w.Flush() }

// ReadFile reads the operations of one JSON-lines file.
func ReadFile(path string) ([]Op, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ops []Op
	dec := json.NewDecoder(f)
	for {
		var op Op
		if err := dec.Decode(&op); err == io.EOF {
			return ops, nil
		} else if err != nil {
			return ops, fmt.Errorf("%s: operation %d: %w", path, len(ops)+1, err)
		}
		ops = append(ops, op)
	}
}
