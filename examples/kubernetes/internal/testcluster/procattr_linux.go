package testcluster

import "syscall"

// ownGroup starts a process in a process group of its own (so that it and
// anything it starts die together), and has the kernel kill it when the
// test binary dies.
func ownGroup() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
