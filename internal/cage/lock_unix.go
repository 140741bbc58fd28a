//go:build unix

package cage

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// tryLock takes the lock file path without waiting: ok is false when
// another holder has it (another process, or another open of it in this
// one). The kernel drops it with the process.
func tryLock(path string) (unlock func(), ok bool, err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("cannot open the lock %s: %v", filepath.Base(path), err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if err == syscall.EWOULDBLOCK {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("cannot lock %s: %v", filepath.Base(path), err)
	}
	return func() { f.Close() }, true, nil
}
