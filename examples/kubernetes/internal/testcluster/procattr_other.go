//go:build unix && !linux

package testcluster

import "syscall"

// ownGroup starts a process in a process group of its own, so that it and
// anything it starts die together.
func ownGroup() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
