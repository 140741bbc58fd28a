package launch

import (
	"path/filepath"
	"strconv"
	"strings"
)

// Mapped is a server argument or env value that names a host path in a form
// the cage cannot take as it is: "~/x" (the cage's HOME is the server's
// private one, not yours) or "." and "../x" (the cage's working directory is
// not the client's).
type Mapped struct {
	Where string `json:"where"` // "argument 2", "env NOTES_DIR"
	From  string `json:"from"`  // as written
	To    string `json:"to"`    // the host path it means
}

// ExpandPath returns the host path a value means when it is written as "~",
// "~/x", ".", "..", "./x" or "../x": home is the user's home directory, dir
// the directory the client started the server in. Anything else, an absolute
// path included, is returned unchanged with ok=false.
//
// Bare relative names ("docs") are left alone: an argument such as "memory"
// or "stdio" is a word more often than a folder, and mounting a folder that
// happens to share its name would show it to the server unasked.
func ExpandPath(v, home, dir string) (string, bool) {
	if strings.ContainsRune(v, 0) {
		return v, false
	}
	switch {
	case v == "~" || strings.HasPrefix(v, "~/"):
		if home == "" {
			return v, false
		}
		return filepath.Join(home, v[1:]), true
	case v == "." || v == ".." || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../"):
		if dir == "" {
			return v, false
		}
		return filepath.Join(dir, v), true
	}
	return v, false
}

// ExpandArgs rewrites the arguments that name host paths in a relative or
// "~" form to the absolute host path (see ExpandPath), including the value of
// "--opt=~/x", and says which it rewrote. The cage shows each such folder at
// the same absolute path, so the server then finds it.
func ExpandArgs(args []string, home, dir string) ([]string, []Mapped) {
	out := make([]string, len(args))
	var mapped []Mapped
	for i, a := range args {
		out[i] = a
		prefix, v := "", a
		if strings.HasPrefix(a, "-") {
			k := strings.IndexByte(a, '=')
			if k < 0 {
				continue
			}
			prefix, v = a[:k+1], a[k+1:]
		}
		if p, ok := ExpandPath(v, home, dir); ok {
			out[i] = prefix + p
			mapped = append(mapped, Mapped{Where: "argument " + strconv.Itoa(i+1), From: v, To: p})
		}
	}
	return out, mapped
}
