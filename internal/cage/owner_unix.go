//go:build unix

package cage

import (
	"errors"
	"syscall"
)

func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	// EPERM: it exists but belongs to someone else.
	return err == nil || errors.Is(err, syscall.EPERM)
}
