//go:build !linux

package testbed

import "syscall"

func ChildAttr() *syscall.SysProcAttr { return nil }
