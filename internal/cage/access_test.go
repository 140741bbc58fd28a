package cage

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckAccess: a folder the cage's user cannot read, or for :rw write,
// is refused with the path, the user, the owner and the mode, and a hint
// that names chown and chmod; one it can use passes.
func TestCheckAccess(t *testing.T) {
	dir := t.TempDir()
	closed := filepath.Join(dir, "closed")
	open := filepath.Join(dir, "open")
	for d, mode := range map[string]os.FileMode{closed: 0o700, open: 0o755} {
		if err := os.Mkdir(d, mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, mode)
	}
	if os.Geteuid() != 0 {
		// The cage runs as this user, who owns both: take the owner's
		// read bit away from the closed one, and its write bit from open.
		os.Chmod(closed, 0o300)
		os.Chmod(open, 0o555)
	}
	err := CheckAccess(Mount{Source: closed, Target: closed})
	ae, ok := err.(*AccessError)
	if !ok {
		t.Fatalf("CheckAccess(%s) = %v, want an *AccessError", closed, err)
	}
	if msg := ae.Error(); !strings.HasPrefix(msg, "cannot mount "+closed+": the cage's user (uid ") || !strings.Contains(msg, "cannot read it (owner uid ") || strings.Contains(msg, "\n") {
		t.Errorf("message: %q", msg)
	}
	if h := ae.Hint(); !strings.Contains(h, "chown -R "+User()+" "+closed) || !strings.Contains(h, "chmod -R o+rX "+closed) {
		t.Errorf("hint: %q", h)
	}
	if err := CheckAccess(Mount{Source: open, Target: open}); err != nil {
		t.Errorf("CheckAccess(%s, read-only) = %v", open, err)
	}
	err = CheckAccess(Mount{Source: open, Target: open, Writable: true})
	if ae, ok := err.(*AccessError); !ok || !strings.Contains(ae.Error(), "cannot write it") || !strings.Contains(ae.Hint(), "o+rwX") {
		t.Errorf("CheckAccess(%s:rw) = %v", open, err)
	}
	os.Chmod(open, 0o777)
	if err := CheckAccess(Mount{Source: open, Target: open, Writable: true}); err != nil {
		t.Errorf("CheckAccess(%s:rw) on a 0777 folder = %v", open, err)
	}
}

// TestReadOnlyHintEscaped: the path a server's error line names is shown
// escaped in the cage's hint (a bidi override is not a control character
// to unicode.IsControl).
func TestReadOnlyHintEscaped(t *testing.T) {
	var log bytes.Buffer
	w := &roWatcher{next: io.Discard, log: &log, name: "s", seen: map[string]bool{}, writable: []string{"/tmp"}}
	w.Write([]byte("Error: EROFS: read-only file system, open '/data/\u202Etxt.exe'\n"))
	if !strings.Contains(log.String(), "/data/<U+202E>txt.exe") || strings.ContainsRune(log.String(), '\u202E') {
		t.Errorf("hint: %q", log.String())
	}
}
