//go:build unix

package main

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// procbenchSupported is whether procbench runs here.
const procbenchSupported = true

// ownGroup puts cmd's process in a process group of its own, so an
// interrupt (or a kill) reaches it and what it runs (perf's workload)
// together, and a Ctrl-C at the terminal does not reach it before the
// parent has measured it.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// interruptGroup sends SIGINT to cmd's process group.
func interruptGroup(cmd *exec.Cmd) error {
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
}

// processCPU returns the user+system CPU time of an exited child, from
// the rusage wait4 returned for it.
func processCPU(ps *os.ProcessState) (time.Duration, bool) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
