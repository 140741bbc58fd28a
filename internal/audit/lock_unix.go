//go:build unix

package audit

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// writeLock is the log's lock file, held open by the Log across commits: a
// commit costs a flock, an fstat and an unlock instead of also
// opening and closing the file each time (gofrs/flock closes it on Unlock).
type writeLock struct {
	path string
	f    *os.File
	fd   int
}

func newWriteLock(path string) *writeLock { return &writeLock{path: path} }

func (w *writeLock) Path() string { return w.path }

// Lock takes the exclusive lock. Since the file stays open, a lock file
// removed or replaced since it was opened would lock a file no other writer
// opens: after the flock, the open file is checked to still be the one at
// the path, and opened anew when it is not.
func (w *writeLock) Lock() error {
	for try := 0; ; try++ {
		if w.f == nil {
			f, err := os.OpenFile(w.path, os.O_CREATE|os.O_RDWR, 0o600)
			if err != nil {
				return err
			}
			w.f, w.fd = f, int(f.Fd())
		}
		if err := flockRetry(w.fd, syscall.LOCK_EX); err != nil {
			return err
		}
		same, err := w.current()
		if err != nil || same {
			if err != nil {
				_ = flockRetry(w.fd, syscall.LOCK_UN)
			}
			return err
		}
		w.Close()
		if try == 3 {
			return fmt.Errorf("%s keeps being replaced", w.path)
		}
	}
}

// current says whether the open file is still the file at the path: a
// file removed, or replaced by a rename over it, has no links left. (One
// fstat; a stat of the path would cost a lookup on every commit. A lock
// file hard-linked elsewhere and then replaced is not seen.)
func (w *writeLock) current() (bool, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(w.fd, &st); err != nil {
		return false, err
	}
	return st.Nlink > 0, nil
}

// Unlock releases the lock and keeps the file open for the next commit.
func (w *writeLock) Unlock() error {
	if w.f == nil {
		return nil
	}
	return flockRetry(w.fd, syscall.LOCK_UN)
}

// Close releases the file (and with it the lock, if held).
func (w *writeLock) Close() error {
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

func flockRetry(fd, how int) error {
	for {
		err := syscall.Flock(fd, how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
