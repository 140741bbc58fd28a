//go:build unix

package cage

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

func fileOwner(st os.FileInfo) (uid, gid int, ok bool) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(s.Uid), int(s.Gid), true
}

// mayConnect reports whether this user may connect to the socket at p (write
// permission on it).
func mayConnect(p string) bool { return unix.Access(p, unix.W_OK) == nil }
