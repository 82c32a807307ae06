// Package kit serves the tool.
package kit

// Kit is the tool's helper.
type Kit struct{}

// Run runs it.
func (Kit) Run() {}

// Stop stops it.
func (Kit) Stop() {}

// Wait waits.
func (*Kit) Wait() {}
