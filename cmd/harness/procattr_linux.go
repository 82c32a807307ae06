package main

import "syscall"

// childAttr makes the kernel stop an instance when the harness dies.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM} }
