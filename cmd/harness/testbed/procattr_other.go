//go:build !linux

package testbed

import "syscall"

// ChildAttr is nil where the kernel has no parent-death signal.
func ChildAttr() *syscall.SysProcAttr { return nil }
