package redisproc

import "syscall"

// sysProcAttr makes the child die (SIGKILL) when the thread that started
// it dies, so that a crashed or timed-out test leaves no server behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
