package clients

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestWriteBackupNames: each Write leaves a backup named after the time,
// with -2, -3, ... when that name is taken; an older backup is never
// overwritten, and past 999 names Write refuses rather than lose one.
func TestWriteBackupNames(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "config.toml")
	now := time.Date(2026, 12, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600))
	base := p + ".mcpcage-backup-20261202T020405Z"
	content := func(i int) []byte { return []byte("version " + strconv.Itoa(i) + "\n") }
	if err := os.WriteFile(p, content(0), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{base, base + "-2", base + "-3"} {
		got, err := Write(p, content(i), content(i+1), now, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("backup %d named %s, want %s", i+1, filepath.Base(got), filepath.Base(want))
		}
		if b, _ := os.ReadFile(got); string(b) != string(content(i)) {
			t.Errorf("backup %s holds %q, want %q", filepath.Base(got), b, content(i))
		}
	}
	for n := 4; n <= 999; n++ {
		if err := os.WriteFile(base+"-"+strconv.Itoa(n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, err = Write(p, content(3), content(4), now, nil)
	if err == nil || !strings.Contains(err.Error(), "too many backups") {
		t.Fatalf("with 999 backups of that second: %v, want too many backups", err)
	}
	if b, _ := os.ReadFile(p); string(b) != string(content(3)) {
		t.Errorf("the file was written without a backup: %q", b)
	}
	if _, err := os.Stat(base + "-1000"); err == nil {
		t.Error("a 1000th backup was written")
	}
}

// TestLedgerOrder: the ledger file lists its entries by file, then by
// where, whatever order they were caged in.
func TestLedgerOrder(t *testing.T) {
	l, err := OpenLedger(filepath.Join(t.TempDir(), "caged.json"))
	if err != nil {
		t.Fatal(err)
	}
	l.Set("/x/b.json", []string{"mcpServers", "a"}, true)
	l.Set("/x/a.json", []string{"mcpServers", "z"}, true)
	l.Set("/x/b.json", []string{"mcpServers", "b"}, true)
	l.Set("/x/a.json", []string{"mcpServers", "c"}, true)
	var got []string
	for _, e := range l.Caged {
		got = append(got, e.File+" "+e.Where[1])
	}
	if want := []string{"/x/a.json c", "/x/a.json z", "/x/b.json a", "/x/b.json b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ledger order %q, want %q", got, want)
	}
}
