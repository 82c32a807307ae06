package proc

import "syscall"

// DieWithParent makes the kernel kill the child when the thread that
// started it exits, so a crashed caller leaves no server behind.
func DieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// TermWithParent asks the child to stop (SIGTERM) when the thread that
// started it exits: a server that shuts down cleanly.
func TermWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
