//go:build unix

package proxy

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"
)

// interruptible returns a reader of in whose blocked Read can be ended by
// interrupt, and restore, which undoes what it changed. A blocking *os.File
// (os.Stdin on a pipe or a terminal) ignores Close while a Read waits, so
// the proxy reads a duplicate of its descriptor in non-blocking mode instead,
// through Go's poller, where a read deadline wakes it.
//
// O_NONBLOCK belongs to the open file, which the duplicate shares with the
// original and with whoever else holds it (the shell, for a terminal), so
// restore puts the original mode back.
func interruptible(in io.Reader) (r io.Reader, interrupt func(), restore func()) {
	f, ok := in.(*os.File)
	if !ok {
		return in, func() {}, func() {}
	}
	if err := f.SetReadDeadline(time.Time{}); !errors.Is(err, os.ErrNoDeadline) {
		// Already read through the poller: a deadline works on f itself.
		return f, func() { _ = f.SetReadDeadline(time.Now()) }, func() { _ = f.SetReadDeadline(time.Time{}) }
	}
	raw, err := f.SyscallConn()
	if err != nil {
		return in, func() {}, func() {}
	}
	var dup int
	var dupErr error
	_ = raw.Control(func(fd uintptr) {
		dup, dupErr = syscall.Dup(int(fd))
		if dupErr == nil {
			syscall.CloseOnExec(dup)
			dupErr = syscall.SetNonblock(dup, true)
			if dupErr != nil {
				syscall.Close(dup)
			}
		}
	})
	if dupErr != nil {
		return in, func() {}, func() {}
	}
	nf := os.NewFile(uintptr(dup), f.Name())
	if err := nf.SetReadDeadline(time.Time{}); err != nil {
		// Not pollable after all (a regular file): reads never block long.
		nf.Close()
		_ = raw.Control(func(fd uintptr) { _ = syscall.SetNonblock(int(fd), false) })
		return in, func() {}, func() {}
	}
	return nf, func() { _ = nf.SetReadDeadline(time.Now()) }, func() {
		nf.Close()
		_ = raw.Control(func(fd uintptr) { _ = syscall.SetNonblock(int(fd), false) })
	}
}
