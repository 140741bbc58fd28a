//go:build !unix

package proxytest

import (
	"os"
	"os/exec"
)

func ownGroup(cmd *exec.Cmd) {}

// killGroup kills the child; without process groups, what it started
// itself is not reached.
func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }

func signaled(ps *os.ProcessState) (int, bool) { return 0, false }
