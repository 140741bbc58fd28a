package audit

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// Test vectors in testdata/vectors, made with the fixed keys in
// testdata/vectors/keys (never used anywhere else). good_NAME.jsonl must
// verify; fail_KIND.jsonl must fail with problem KIND at the line named in
// its .want file. NAME.checkpoint, when present, is the checkpoint beside it.
// AUDIT_WRITE_VECTORS=1 rewrites them from the code below.
const vectorDir = "testdata/vectors"

type countingReader byte

func (c *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(*c)
		*c++
	}
	return len(p), nil
}

func vectorKeys(t *testing.T) string {
	dir := filepath.Join(vectorDir, "keys")
	if os.Getenv("AUDIT_WRITE_VECTORS") == "" {
		return dir
	}
	os.MkdirAll(dir, 0o755)
	seed := countingReader(0x40)
	skey, vkey, err := note.GenerateKey(&seed, KeyName)
	if err != nil {
		t.Fatal(err)
	}
	mk, ak := make([]byte, 32), make([]byte, 32)
	for i := range mk {
		mk[i], ak[i] = byte(i), byte(0x20+i)
	}
	text := fmt.Sprintf("%s\nmac-key: %x\narg-key: %x\nsigner: %s\nverifier: %s\n", keyHeader, mk, ak, skey, vkey)
	if err := os.WriteFile(KeyPath(dir), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeVectors(t *testing.T, keyDir string) {
	tmp := t.TempDir()
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	opts := Options{Dir: tmp, KeyDir: keyDir, Now: func() time.Time { clock = clock.Add(1500 * time.Millisecond); return clock }}
	l, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	k := l.Keys()
	recs := []struct {
		kind   string
		fields any
	}{
		{"session_start", map[string]any{"session": "0011223344556677", "server": "demo-notes", "launch": map[string]any{"kind": "npx", "package": "demo-notes", "version": "1.0.0", "argc": 0}, "mcpcage": "0.1.0", "protocol": "2025-06-18"}},
		{"pin", map[string]any{"server": "demo-notes", "kind": "tools", "items": 2}},
		{"call", map[string]any{"session": "0011223344556677", "server": "demo-notes", "tool": "add_note", "args": Fingerprint(k.Args, "demo-notes", "add_note", []byte(`{"text":"hello"}`)), "outcome": "ok", "by": "server", "dur_us": 812, "findings": 0}},
		{"call", map[string]any{"session": "0011223344556677", "server": "demo-notes", "tool": "add_note", "args": Fingerprint(k.Args, "demo-notes", "add_note", []byte(`{"text":"bye"}`)), "outcome": "is_error", "by": "server", "dur_us": 95, "findings": 1}},
		{"session_end", map[string]any{"session": "0011223344556677", "server": "demo-notes", "exit": 0, "calls": 2}},
	}
	for _, r := range recs {
		if _, err := l.Append(r.kind, r.fields); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	good, _ := os.ReadFile(filepath.Join(tmp, FileName(1)))
	cp, _ := os.ReadFile(filepath.Join(tmp, CheckpointName))
	put := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(vectorDir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put("good_session.jsonl", good)
	put("good_session.checkpoint", cp)
	put("good_torn.jsonl", append(append([]byte(nil), good...), good[:57]...))
	lines := bytes.SplitAfter(good, []byte("\n"))[:5]
	join := func(ls ...[]byte) []byte { return bytes.Join(ls, nil) }
	mod := bytes.Replace(lines[2], []byte(`"add_note"`), []byte(`"rm_notes"`), 1)
	put("fail_modified.jsonl", join(lines[0], lines[1], mod, lines[3], lines[4]))
	put("fail_modified.want", []byte("3\n"))
	put("fail_deleted.jsonl", join(lines[0], lines[1], lines[3], lines[4]))
	put("fail_deleted.want", []byte("3\n"))
	put("fail_inserted.jsonl", join(lines[0], lines[1], mod, lines[2], lines[3], lines[4]))
	put("fail_inserted.want", []byte("3\n"))
	put("fail_reordered.jsonl", join(lines[0], lines[2], lines[1], lines[3], lines[4]))
	put("fail_reordered.want", []byte("2\n"))
	put("fail_truncated.jsonl", join(lines[0], lines[1], lines[2]))
	put("fail_truncated.checkpoint", cp)
	put("fail_truncated.want", []byte("3\n"))
	// Rewritten with a guessed key, chain recomputed.
	m := newMAC(make([]byte, 32))
	prev := GenesisPrev
	var rw [][]byte
	for _, ln := range lines {
		r, _ := ParseLine(bytes.TrimSuffix(ln, []byte("\n")))
		nl, _ := encodeLine(m, r.Seq, r.Time, prev, r.Kind, r.Fields)
		rw = append(rw, nl)
		prev = LineHash(nl[:len(nl)-1])
	}
	put("fail_rewritten.jsonl", join(rw...))
	put("fail_rewritten.want", []byte("1\n"))
}

func TestVectors(t *testing.T) {
	keyDir := vectorKeys(t)
	if os.Getenv("AUDIT_WRITE_VECTORS") != "" {
		writeVectors(t, keyDir)
	}
	ents, err := os.ReadDir(vectorDir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok {
			continue
		}
		n++
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			copyFile(t, filepath.Join(vectorDir, e.Name()), filepath.Join(dir, FileName(1)))
			if _, err := os.Stat(filepath.Join(vectorDir, name+".checkpoint")); err == nil {
				copyFile(t, filepath.Join(vectorDir, name+".checkpoint"), filepath.Join(dir, CheckpointName))
			}
			r, err := Verify(VerifyOptions{Dir: dir, KeyDir: keyDir})
			if err != nil {
				t.Fatal(err)
			}
			if kind, ok := strings.CutPrefix(name, "good_"); ok {
				// Without the checkpoint only the chain can be judged.
				if !r.OK && !(r.Problem.Kind == CheckpointMissing) {
					t.Fatalf("%s: %v", kind, r.Problem)
				}
				return
			}
			kind, _ := strings.CutPrefix(name, "fail_")
			want, _ := os.ReadFile(filepath.Join(vectorDir, name+".want"))
			if r.OK || r.Problem.Kind != kind || fmt.Sprint(r.Problem.Line) != strings.TrimSpace(string(want)) {
				t.Fatalf("want %s at line %s, got %+v", kind, want, r.Problem)
			}
		})
	}
	if n < 8 {
		t.Fatalf("only %d vectors", n)
	}
}

// TestDocumentedVector checks the byte-for-byte example of the package doc
// and docs/audit.md: the first record of good_session.jsonl, its MAC and
// hash, and one argument fingerprint, all under the fixed vector keys.
func TestDocumentedVector(t *testing.T) {
	k, err := LoadKeys(vectorKeys(t))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(vectorDir, "good_session.jsonl"))
	first := b[:bytes.IndexByte(b, '\n')]
	h := header{}
	if err := splitLine(first, &h); err != nil {
		t.Fatal(err)
	}
	m := newMAC(k.MAC)
	gotMAC := string(m.of(h.body))
	fp := Fingerprint(k.Args, "demo-notes", "add_note", []byte(`{"text":"hello"}`))
	facts := []string{string(first), gotMAC, LineHash(first), fp}
	doc, _ := os.ReadFile("doc.go")
	md, _ := os.ReadFile("../../docs/audit.md")
	for _, f := range facts {
		if !bytes.Contains(doc, []byte(f)) {
			t.Errorf("doc.go lacks %s", f)
		}
		if !bytes.Contains(md, []byte(f)) {
			t.Errorf("docs/audit.md lacks %s", f)
		}
	}
	if t.Failed() {
		t.Logf("vector facts:\n%s", strings.Join(facts, "\n"))
	}
}
