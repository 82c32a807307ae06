//go:build !linux

package proc

import "syscall"

// DieWithParent is nil where the kernel has no parent-death signal.
func DieWithParent() *syscall.SysProcAttr { return nil }

// TermWithParent is nil where the kernel has no parent-death signal.
func TermWithParent() *syscall.SysProcAttr { return nil }
