package launch

import (
	"os"
	"path/filepath"
	"strings"
)

// ArgPaths returns the server arguments that name existing absolute paths
// (server-filesystem's folders): they are mounted read-only at the same path
// unless a --mount already covers them. An argument "--opt=/path" counts too.
func ArgPaths(args []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, a := range args {
		cand := a
		if strings.HasPrefix(a, "-") {
			k := strings.IndexByte(a, '=')
			if k < 0 {
				continue
			}
			cand = a[k+1:]
		}
		if !filepath.IsAbs(cand) || strings.ContainsRune(cand, 0) {
			continue
		}
		cand = filepath.Clean(cand)
		if _, err := os.Stat(cand); err != nil {
			continue
		}
		if !seen[cand] {
			seen[cand] = true
			out = append(out, cand)
		}
	}
	return out
}
