//go:build linux

package clients

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadFileNeverBlocks: a FIFO, a device and a file of procfs whose read
// blocks (/proc/kmsg) are refused at once with one line, not read.
func TestReadFileNeverBlocks(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "mcp.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		fifo:                "not a regular file",
		"/dev/zero":         "not a regular file",
		"/proc/kmsg":        "a file of procfs",
		"/proc/self/status": "a file of procfs",
		"/sys/kernel/notes": "a file of sysfs",
	} {
		done := make(chan error, 1)
		go func() { _, err := ReadFile(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: %v, want one line with %q", path, err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the read blocked", path)
		}
	}
}

// TestNestingBound: brackets past MaxNesting are refused before parsing,
// in JSON and TOML alike; brackets in strings and comments do not count.
func TestNestingBound(t *testing.T) {
	deep := strings.Repeat("[", MaxNesting+1)
	if _, err := Read(JSON, []byte(`{"a":`+deep), nil); err == nil || !strings.Contains(err.Error(), "nested deeper than") {
		t.Errorf("JSON: %v", err)
	}
	if _, err := Read(TOML, []byte("x = "+deep), nil); err == nil || !strings.Contains(err.Error(), "nested deeper than") {
		t.Errorf("TOML: %v", err)
	}
	for _, ok := range []struct {
		f    Format
		data string
	}{
		{JSON, `{"mcpServers":{"a":{"command":"npx","args":["` + deep + `"]}}} // ` + deep + "\n/* " + deep + " */"},
		{JSON, `{"a":"\"` + deep + `"}`},
		{TOML, "[mcp_servers.a]\ncommand = \"npx\"\nargs = ['" + deep + "', \"\"\"" + deep + "\n\"\"\"]\n# " + deep + "\n"},
	} {
		if _, err := Read(ok.f, []byte(ok.data), nil); err != nil {
			t.Errorf("%.60q: %v", ok.data, err)
		}
	}
}
