package testbed

import (
	"syscall"
)

// ChildAttr makes the kernel stop an instance when the harness dies.
func ChildAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM} }
