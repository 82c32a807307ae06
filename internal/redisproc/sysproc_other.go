//go:build !linux

package redisproc

import "syscall"

// sysProcAttr has no parent-death signal outside Linux: callers must Kill
// or Close what they start.
func sysProcAttr() *syscall.SysProcAttr { return nil }
