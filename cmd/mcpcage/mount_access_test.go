package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpcage/mcpcage/internal/cage"
	"github.com/mcpcage/mcpcage/internal/cage/cagetest"
)

// runFails runs `mcpcage run ARGS` with no client and returns its stderr,
// failing the test unless it exits with want.
func runFails(t *testing.T, dir string, env []string, want int, args ...string) string {
	t.Helper()
	cmd := exec.Command("mcpcage", append([]string{"run"}, args...)...)
	cmd.Env = testEnv(dir, env...)
	var errOut bytes.Buffer
	cmd.Stdin, cmd.Stderr = strings.NewReader(""), &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != want {
		t.Fatalf("mcpcage run %q: %v, want exit %d\n%s", args, err, want, errOut.String())
	}
	return errOut.String()
}

// TestRunMountAccess: a folder the cage's user cannot read (root's 0700
// folder when mcpcage runs as root, and the server as uid 1000), named in
// the arguments or with --mount, or one it cannot write given with :rw, is
// refused in one line before the container starts, with the fix.
func TestRunMountAccess(t *testing.T) {
	probeEngine(t)
	dir := stateDir(t)
	closed := filepath.Join(dir, "root-only")
	open := filepath.Join(dir, "read-only-for-others")
	for d, mode := range map[string]os.FileMode{closed: 0o700, open: 0o755} {
		if err := os.Mkdir(d, mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, mode)
	}
	if os.Geteuid() != 0 {
		os.Chmod(closed, 0o300) // the cage runs as us: no read bit for the owner either
		os.Chmod(open, 0o555)
	}
	uid, _, _ := strings.Cut(cage.User(), ":")
	for _, c := range []struct {
		args []string
		path string
		what string
		hint string
	}{
		{[]string{"--image", cagetest.ProbeImage, "--", closed}, closed, "read", "o+rX"},
		{[]string{"--mount", closed, "--image", cagetest.ProbeImage}, closed, "read", "o+rX"},
		{[]string{"--mount", open + ":rw", "--image", cagetest.ProbeImage}, open, "write", "o+rwX"},
	} {
		stderr := runFails(t, dir, nil, exitUsage, c.args...)
		want := "mcpcage: error: cannot mount " + c.path + ": the cage's user (uid " + uid + ") cannot " + c.what + " it (owner uid "
		if !strings.Contains(stderr, want) {
			t.Errorf("%q: no %q in:\n%s", c.args, want, stderr)
		}
		if !strings.Contains(stderr, "mcpcage: hint: give the cage's user access (chown -R "+cage.User()+" "+c.path+", or chmod -R "+c.hint+" "+c.path+")") {
			t.Errorf("%q: no hint naming chown and chmod in:\n%s", c.args, stderr)
		}
	}
	// Opened to the cage's user, the same mount starts.
	os.Chmod(closed, 0o755)
	cs, stderr := caged(t, dir, nil, "--image", cagetest.ProbeImage, "--", closed)
	if out, _ := call(t, cs, "probe", map[string]any{"check": "read", "target": closed}); !strings.Contains(out, `"escaped":true`) {
		t.Errorf("the opened folder should be readable: %s\n%s", out, stderr.String())
	}
}

// TestRunArgPathEscaped: a server argument that names a path with an escape
// sequence and a newline in it reaches the terminal escaped, in the
// "not mounting" warning of a socket folder and in a mount's error.
func TestRunArgPathEscaped(t *testing.T) {
	probeEngine(t)
	dir := stateDir(t)
	evil := "run\x1b]0;owned\x07\x1b[2J\nmcpcage: forged line"
	runDir := filepath.Join(dir, evil)
	sub := filepath.Join(runDir, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	closed := filepath.Join(dir, "closed\x1b[31m\n")
	if err := os.Mkdir(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		os.Chmod(closed, 0o300)
	}
	stderr := runFails(t, dir, []string{"XDG_RUNTIME_DIR=" + runDir}, exitUsage, "--image", cagetest.ProbeImage, "--", sub, closed)
	for _, raw := range []string{"\x1b", "\x07", "forged line\n", "\n\n"} {
		if strings.Contains(stderr, raw) {
			t.Errorf("raw %q reached the terminal:\n%q", raw, stderr)
		}
	}
	if !strings.Contains(stderr, "mcpcage: warning: not mounting "+filepath.Join(dir, "run<U+001B>]0;owned<U+0007><U+001B>[2J<U+000A>mcpcage: forged line", "sub")) {
		t.Errorf("no escaped warning in:\n%q", stderr)
	}
	if !strings.Contains(stderr, "mcpcage: error: cannot mount "+filepath.Join(dir, "closed<U+001B>[31m<U+000A>")+": ") {
		t.Errorf("no escaped error in:\n%q", stderr)
	}
	if n := strings.Count(stderr, "\n"); n != 3 {
		t.Errorf("%d lines, want 3 (warning, error, hint):\n%q", n, stderr)
	}
}

// TestRunServerStderrEscaped: a caged server's stderr reaches mcpcage's
// stderr with every C1 control (as a rune or a raw byte), bidi control,
// zero-width character and invalid byte escaped.
func TestRunServerStderrEscaped(t *testing.T) {
	probeEngine(t)
	dir := stateDir(t)
	cs, stderr := caged(t, dir, nil, "--image", cagetest.ProbeImage, "--", "stderr")
	toolNames(t, cs, stderr)
	cs.Close()
	want := []string{"csi <U+009B>2J osc <U+009D>0;owned<U+0007>", "raw <0x9B>2J <0x9D>0;owned", "file <U+202E>txt.exe <U+2066>x<U+2069>", "zw d<U+200B>o <0xFF> end"}
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(stderr.String(), want[len(want)-1]) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	log := stderr.String()
	for _, w := range want {
		if !strings.Contains(log, w) {
			t.Errorf("stderr lacks %q:\n%q", w, log)
		}
	}
	for _, bad := range []string{"\u009b", "\u009d", "\x9b", "\u202e", "\u2066", "\u200b", "\xff"} {
		if strings.Contains(log, bad) {
			t.Errorf("ESCAPE: the server's stderr reached the terminal with %q raw:\n%q", bad, log)
		}
	}
}
