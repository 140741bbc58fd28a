//go:build !unix

package cage

import "os"

func processExists(pid int) bool {
	// On Windows FindProcess opens the process and fails when it is gone.
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}
