//go:build unix

package proxy

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/term"
)

// interruptible returns a reader of in whose blocked Read can be ended by
// interrupt, and restore, which undoes what it changed. A blocking *os.File
// (os.Stdin on a pipe or a terminal) ignores Close while a Read waits, so
// the proxy reads a duplicate of its descriptor in non-blocking mode instead,
// through Go's poller, where a read deadline wakes it.
//
// O_NONBLOCK belongs to the open file, which the duplicate shares with the
// original and with whoever else holds it, so restore puts the original mode
// back. A terminal is left alone: it is shared with the shell, which would
// meet a non-blocking terminal if mcpcage were killed before restoring it.
// Its read is not interrupted (a person typing, not a client), and closeIn
// is false: closing a blocking file waits for that read.
func interruptible(in io.Reader) (r io.Reader, interrupt func(), restore func(), closeIn bool) {
	f, ok := in.(*os.File)
	if !ok {
		return in, func() {}, func() {}, true
	}
	if err := f.SetReadDeadline(time.Time{}); !errors.Is(err, os.ErrNoDeadline) {
		// Already read through the poller: a deadline works on f itself.
		return f, func() { _ = f.SetReadDeadline(time.Now()) }, func() { _ = f.SetReadDeadline(time.Time{}) }, true
	}
	if term.IsTerminal(int(f.Fd())) {
		return in, func() {}, func() {}, false
	}
	raw, err := f.SyscallConn()
	if err != nil {
		return in, func() {}, func() {}, true
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
		return in, func() {}, func() {}, true
	}
	nf := os.NewFile(uintptr(dup), f.Name())
	if err := nf.SetReadDeadline(time.Time{}); err != nil {
		// Not pollable after all (a regular file): reads never block long.
		nf.Close()
		_ = raw.Control(func(fd uintptr) { _ = syscall.SetNonblock(int(fd), false) })
		return in, func() {}, func() {}, true
	}
	return nf, func() { _ = nf.SetReadDeadline(time.Now()) }, func() {
		nf.Close()
		_ = raw.Control(func(fd uintptr) { _ = syscall.SetNonblock(int(fd), false) })
	}, true
}
