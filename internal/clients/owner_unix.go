//go:build unix

package clients

import (
	"io/fs"
	"os"
	"syscall"

	"github.com/mcpcage/mcpcage/internal/atomicfile"
)

// ownerToKeep is the owner and group a rewritten file and its backup must
// keep when mcpcage runs as root: fi's, when they are not root's. A user's
// own run writes files that are theirs anyway. nil when nothing is to be
// kept.
func ownerToKeep(fi fs.FileInfo) *atomicfile.Owner {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || os.Geteuid() != 0 {
		return nil
	}
	uid, gid := int(st.Uid), int(st.Gid)
	if uid == os.Geteuid() && gid == os.Getegid() {
		return nil
	}
	return &atomicfile.Owner{UID: uid, GID: gid}
}
