//go:build !unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"time"
)

// procbenchSupported is whether procbench runs here: it needs process
// groups and a child's rusage.
const procbenchSupported = false

func ownGroup(*exec.Cmd) {}

func interruptGroup(cmd *exec.Cmd) error { return errors.ErrUnsupported }

func processCPU(*os.ProcessState) (time.Duration, bool) { return 0, false }
