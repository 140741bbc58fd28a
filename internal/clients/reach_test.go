package clients

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestReachAsRunReadsIt: the reach of a caged entry is what `mcpcage run`
// would show the server: --mount X as well as --mount=X, and a "~/x"
// argument as the folder of the user's home it names.
func TestReachAsRunReadsIt(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	if err := os.MkdirAll(filepath.Join(home, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := Server{Command: "/usr/local/bin/mcpcage", HasCommand: true,
		Args: []string{"run", "--mount", "/etc", "--mount=/srv:rw", "--", "npx", "-y", "@modelcontextprotocol/server-filesystem", "~/notes"}}
	got := s.Reach().Mounts
	for _, want := range []string{"/etc (read-only)", "/srv (read-write)", filepath.Join(home, "notes") + " (read-only)"} {
		if !slices.Contains(got, want) {
			t.Errorf("reach %q lacks %q", got, want)
		}
	}
}
