//go:build unix

package cage

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockSpare takes the home's spare lock (a file in it), which every claim
// and every check of the spare holds; the kernel drops it with the process.
func lockSpare(home string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(home, "egress-spare.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cannot open the spare's lock: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("cannot lock the spare: %v", err)
	}
	return func() { f.Close() }, nil
}
