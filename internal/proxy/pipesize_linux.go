package proxy

import (
	"os"

	"golang.org/x/sys/unix"
)

// pipeSize is what the proxy asks of every pipe it reads or writes: with
// the default 64 KiB, a message of 64 KiB or more cannot sit in the pipe
// whole, and each one costs extra wake-ups on both sides.
const pipeSize = 1 << 20

// growPipe enlarges f's pipe buffer when f is a pipe; anything else, or a
// refusal (the system's pipe-max-size), leaves it as it is.
func growPipe(v any) {
	f, ok := v.(*os.File)
	if !ok {
		return
	}
	sc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = sc.Control(func(fd uintptr) {
		var st unix.Stat_t
		if unix.Fstat(int(fd), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
			return
		}
		_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeSize)
	})
}
