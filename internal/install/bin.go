package install

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// withBin points the result at the command the command line named (`npx -p
// PKG CMD`, `uvx --from PKG CMD`), found in the installed entry's own bin
// folder: node_modules/.bin (the package's commands and its dependencies')
// or the virtualenv's bin. The cache entry is the package's, whichever
// command runs, so the command is looked up on every start, never recorded.
func withBin(r *Result, bin string) (*Result, error) {
	if bin == "" {
		if len(r.Command) == 0 {
			return nil, fmt.Errorf("%s declares no single command to run: name it (`npx -p %s COMMAND`, `uvx --from %s COMMAND`)", r.Package, r.Package, r.Package)
		}
		return r, nil
	}
	if strings.ContainsAny(bin, `/\`) || bin == "." || bin == ".." {
		return nil, fmt.Errorf("%q is not a command name", bin)
	}
	rel := path.Join("node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(r.CacheDir, "venv")); err == nil {
		rel = path.Join("venv", "bin")
	}
	host := filepath.Join(r.CacheDir, filepath.FromSlash(rel), bin)
	fi, err := os.Stat(host)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s@%s has no command %q; it has: %s", r.Package, r.Version, bin, strings.Join(binsIn(filepath.Join(r.CacheDir, filepath.FromSlash(rel))), ", "))
	}
	// A link out of the package (a planted absolute symlink) would run a
	// file of the image, not of the package.
	if real, err := filepath.EvalSymlinks(host); err != nil || !strings.HasPrefix(real, filepath.Clean(r.CacheDir)+string(filepath.Separator)) {
		return nil, fmt.Errorf("%s@%s: command %q points outside the package", r.Package, r.Version, bin)
	}
	inCage := path.Join(r.MountPoint, rel, bin)
	cmd := []string{inCage}
	if rel != path.Join("venv", "bin") {
		// npm's bins are JavaScript more often than not, and not always
		// executable: node runs them as the default command is run.
		if real, _ := filepath.EvalSymlinks(host); isNodeScript(real) {
			cmd = []string{"node", inCage}
		}
	}
	out := *r
	out.Command = cmd
	return &out, nil
}

func isNodeScript(p string) bool {
	if strings.HasSuffix(p, ".js") || strings.HasSuffix(p, ".mjs") || strings.HasSuffix(p, ".cjs") {
		return true
	}
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 200)
	n, _ := f.Read(head)
	line, _, _ := strings.Cut(string(head[:n]), "\n")
	return strings.HasPrefix(line, "#!") && strings.Contains(line, "node")
}

func binsIn(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") && !strings.HasPrefix(e.Name(), "python") && !strings.HasPrefix(e.Name(), "pip") && !strings.HasPrefix(e.Name(), "activate") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}
