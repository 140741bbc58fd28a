//go:build unix

package audit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gofrs/flock"
)

// TestWriteLockFollowsTheFile: the Log keeps its lock file open across
// commits; once that file is removed or replaced, its next Lock must lock
// the file now at the path, the one every other writer opens.
func TestWriteLockFollowsTheFile(t *testing.T) {
	for _, how := range []string{"removed", "replaced"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, lockName)
			w := newWriteLock(p)
			defer w.Close()
			if err := w.Lock(); err != nil {
				t.Fatal(err)
			}
			if err := w.Unlock(); err != nil {
				t.Fatal(err)
			}
			switch how {
			case "removed":
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			case "replaced":
				if err := os.WriteFile(p+".new", nil, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(p+".new", p); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Lock(); err != nil {
				t.Fatal(err)
			}
			other := flock.New(p)
			defer other.Close()
			got, err := other.TryLock()
			if err != nil {
				t.Fatal(err)
			}
			if got {
				t.Fatalf("another writer could take %s while this one held it: the held-open descriptor still locks the %s file", lockName, how)
			}
			if err := w.Unlock(); err != nil {
				t.Fatal(err)
			}
			if got, err := other.TryLock(); err != nil || !got {
				t.Fatalf("after Unlock another writer cannot lock: %v %v", got, err)
			}
		})
	}
}
