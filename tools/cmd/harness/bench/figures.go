package bench

import (
	"sync"
)

// figures holds the figures of every run and limit by name, the
// violations found and the commands run.
type figures struct {
	mu         sync.Mutex
	runs       map[string]benchFigures
	violations []string
	commands   []string
}

func (b *figures) get(run, k string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.runs[run][k]
}

func (b *figures) put(run, k, v string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.runs[run] == nil {
		b.runs[run] = benchFigures{}
	}
	b.runs[run][k] = v
}

func (b *figures) putAll(run string, f benchFigures) {
	for k, v := range f {
		b.put(run, k, v)
	}
}

func (b *figures) violate(run, msg string) {
	b.violations = append(b.violations, run+": "+msg)
	logf("VIOLATION %s: %s", run, msg)
}

func (b *figures) noteCmd(s string) { b.commands = append(b.commands, s) }
