package cage

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// AccessError says that the cage's user could not use a mount: a folder of
// root's (0700) mounted while mcpcage runs as root, when the server runs as
// uid 1000. Without the check the server fails later with a bare
// "permission denied".
type AccessError struct {
	Path  string
	Write bool   // the mount is :rw and the user cannot write it
	User  string // uid:gid the server runs as
	Owner int    // the path's owner uid; -1 when unknown
	Mode  os.FileMode
	Dir   bool
}

func (e *AccessError) Error() string {
	what := "read"
	if e.Write {
		what = "write"
	}
	uid, _, _ := strings.Cut(e.User, ":")
	return fmt.Sprintf("cannot mount %s: the cage's user (uid %s) cannot %s it (owner uid %d, mode %04o)", e.Path, uid, what, e.Owner, e.Mode.Perm())
}

// Hint says what to do about it.
func (e *AccessError) Hint() string {
	r, bits := "", "o+r"
	if e.Dir {
		r, bits = "-R ", "o+rX"
	}
	if e.Write {
		bits = strings.Replace(bits, "r", "rw", 1)
	}
	why := "the server runs as your uid and gid, without your other groups"
	if os.Geteuid() == 0 {
		why = "mcpcage runs as root, so the server runs as uid 1000; run mcpcage as the folder's owner and the server runs as that user"
	}
	return fmt.Sprintf("give the cage's user access (chown %s%s %s, or chmod %s%s %s): %s", r, e.User, e.Path, r, bits, e.Path, why)
}

// CheckAccess returns an *AccessError when the cage's user (User) could not
// read m.Source, or, for a writable mount, write it, as the kernel decides
// from the owner, group and mode bits for a process with that uid and gid,
// no other groups and no capabilities. It is checked before the container
// is created. ACLs are not read: a folder open to the user only through one
// is reported too.
func CheckAccess(m Mount) error {
	st, err := os.Stat(m.Source)
	if err != nil {
		return fmt.Errorf("cannot mount %s: %v", m.Target, err)
	}
	uidS, gidS, _ := strings.Cut(User(), ":")
	uid, _ := strconv.Atoi(uidS)
	gid, _ := strconv.Atoi(gidS)
	owner, group, ok := fileOwner(st)
	if !ok {
		return nil
	}
	perm := uint32(st.Mode().Perm())
	var bits uint32
	switch {
	case owner == uid:
		bits = perm >> 6
	case group == gid:
		bits = perm >> 3
	default:
		bits = perm
	}
	need := uint32(4) // read
	if m.Writable {
		need |= 2
	}
	if st.IsDir() {
		need |= 1 // search
	}
	if bits&need == need {
		return nil
	}
	return &AccessError{Path: m.Target, Write: m.Writable && bits&4 != 0 && (!st.IsDir() || bits&1 != 0), User: User(), Owner: owner, Mode: st.Mode(), Dir: st.IsDir()}
}
