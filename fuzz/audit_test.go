package fuzz

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpcage/mcpcage/internal/audit"
)

// auditSeedLog writes a small real log (with the key the fuzz targets use)
// and returns its bytes.
func auditSeedLog(t testing.TB, keyDir string, n int) []byte {
	dir := t.TempDir()
	l, err := audit.Open(audit.Options{Dir: dir, KeyDir: keyDir})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := l.Append("call", map[string]any{"server": "demo", "tool": "add_note", "n": i, "args": "ab"}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	b, err := os.ReadFile(filepath.Join(dir, audit.FileName(1)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// auditKeys makes the keys one fuzz target uses, in its own temporary
// directory (each fuzzing worker process makes its own).
func auditKeys(f *testing.F) string {
	d := f.TempDir()
	if _, err := audit.LoadOrCreateKeys(d); err != nil {
		f.Fatal(err)
	}
	return d
}

// FuzzAuditRecord: the strict record parser never panics, and what it
// accepts is one line with a JSON object for fields.
func FuzzAuditRecord(f *testing.F) {
	for _, line := range bytes.Split(auditSeedLog(f, auditKeys(f), 3), []byte("\n")) {
		f.Add(line)
	}
	f.Add([]byte(`{"v":1,"seq":1,"time":"2026-11-29T10:00:00.000000000Z","prev":"` + audit.GenesisPrev + `","kind":"x","fields":{},"mac":"` + audit.GenesisPrev + `"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		rec, err := audit.ParseLine(line)
		if err != nil {
			return
		}
		if rec.Seq == 0 || !json.Valid(rec.Fields) || rec.Fields[0] != '{' || bytes.IndexByte(line, '\n') >= 0 ||
			!bytes.Equal(rec.Line, line) || len(rec.Prev) != 64 || len(rec.MAC) != 64 {
			t.Fatalf("accepted a bad record: %q", line)
		}
	})
}

// FuzzAuditVerify: verify reads any bytes as a log file without panicking
// or failing to report, and whatever it calls intact parses strictly line
// by line (its fast path accepts nothing the strict parser refuses).
func FuzzAuditVerify(f *testing.F) {
	keys := auditKeys(f)
	good := auditSeedLog(f, keys, 4)
	f.Add(good)
	f.Add(good[:len(good)-7])
	f.Add(append(append([]byte(nil), good...), good...))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, audit.FileName(1)), data, 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := audit.Verify(audit.VerifyOptions{Dir: dir, KeyDir: keys})
		if err != nil {
			t.Fatal(err)
		}
		if r.OK == (r.Problem != nil) {
			t.Fatalf("ok=%v with problem %v", r.OK, r.Problem)
		}
		if r.Problem != nil && (r.Problem.Kind == "" || r.Problem.Message == "") {
			t.Fatalf("unexplained problem %+v", r.Problem)
		}
		if !r.OK {
			return
		}
		lines := bytes.Split(data, []byte("\n"))
		for _, l := range lines[:len(lines)-1] {
			if _, err := audit.ParseLine(l); err != nil {
				t.Fatalf("verify accepted a line the parser refuses: %q: %v", l, err)
			}
		}
	})
}

// FuzzAuditCheckpoint: checkpoint parsing never panics and accepts only
// notes signed by the log's key.
func FuzzAuditCheckpoint(f *testing.F) {
	keys := auditKeys(f)
	k, err := audit.LoadKeys(keys)
	if err != nil {
		f.Fatal(err)
	}
	dir := f.TempDir()
	l, _ := audit.Open(audit.Options{Dir: dir, KeyDir: keys})
	l.Append("call", nil)
	l.Close()
	cp, _ := os.ReadFile(filepath.Join(dir, audit.CheckpointName))
	f.Add(cp)
	f.Add([]byte("mcpcage audit checkpoint v1\nrecords 1\n"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		c, err := audit.OpenCheckpoint(msg, k.Public)
		if err == nil && !bytes.HasPrefix(msg, []byte("mcpcage audit checkpoint v1\n")) {
			t.Fatalf("accepted %q as %+v", msg, c)
		}
	})
}
