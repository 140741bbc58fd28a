package fuzz

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpcage/mcpcage/internal/pin"
)

// FuzzPinCanonical: canonicalization never panics, its output is valid JSON,
// and canonicalizing twice is canonicalizing once.
func FuzzPinCanonical(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","description":"d","inputSchema":{"type":"object","properties":{}}}`,
		`{"b":[1,2.50,-0,1e30,{"x":null}],"a":"\u200b\"\\"}`,
		`{"annotations":{},"icons":[],"n":9007199254740993}`,
		`[[[[{}]]]]`, `"s"`, `1E-7`, `{"a":1,"a":2}`,
	} {
		f.Add([]byte(s))
	}
	seedPinFiles(f, "../testdata/seed-servers/*.tools.json")
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := pin.Canonical(b)
		if err != nil {
			return
		}
		if !jsontext.Value(c).IsValid() {
			t.Fatalf("canonical form is not valid JSON: %q", c)
		}
		c2, err := pin.Canonical(c)
		if err != nil {
			t.Fatalf("canonical form %q rejected: %v", c, err)
		}
		if !bytes.Equal(c, c2) {
			t.Fatalf("not idempotent:\n%q\n%q", c, c2)
		}
	})
}

// FuzzPinFile: reading a pin file never panics, and anything accepted is
// written back to a file that reads the same (a fixpoint after one round).
func FuzzPinFile(f *testing.F) {
	seedPinFiles(f, "../internal/pin/testdata/*.json")
	f.Add([]byte(`{"format":"mcpcage-pins/1","server":"x","approved":{"time":"2026-01-01T00:00:00Z","launch":{"kind":"npx"},"tools":[{"name":"a"}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		pf, err := pin.Parse(b)
		if err != nil {
			return
		}
		_, _ = pin.Changes(pf)
		_, _ = pin.PendingHash(pf)
		out, err := pf.Marshal()
		if err != nil {
			t.Fatalf("accepted file cannot be written back: %v", err)
		}
		pf2, err := pin.Parse(out)
		if err != nil {
			t.Fatalf("written file does not read back: %v\n%s", err, out)
		}
		out2, err := pf2.Marshal()
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("not a fixpoint (%v):\n%s\n%s", err, out, out2)
		}
	})
}

// FuzzPinListResult: a server's list page never panics the reader, and what
// it accepts compares equal to itself (or is refused as a whole).
func FuzzPinListResult(f *testing.F) {
	seedPinFiles(f, "../testdata/seed-servers/*.tools.json")
	for _, s := range []string{
		`{"tools":[{"name":"a"},{"name":"b","annotations":{}}],"nextCursor":"p2"}`,
		`{"tools":[],"nextCursor":null,"_meta":{}}`,
		`{"tools":[{"name":"a"},{"name":"a"}]}`,
		`{"tools":[{"name":"\u0061","x":1e999}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		items, _, err := pin.ParsePage(b, pin.Tools)
		if err != nil {
			return
		}
		for _, it := range items {
			if !it.IsValid() || it.Kind() != '{' {
				t.Fatalf("accepted a non-object item %q", it)
			}
		}
		ch, err := pin.Compare(pin.Tools, items, items)
		if err == nil && len(ch) != 0 {
			t.Fatalf("a list differs from itself: %+v", ch)
		}
	})
}

func seedPinFiles(f *testing.F, pattern string) {
	ms, _ := filepath.Glob(pattern)
	if len(ms) == 0 {
		f.Fatalf("no seed files match %s", pattern)
	}
	for _, m := range ms {
		if b, err := os.ReadFile(m); err == nil {
			f.Add(b)
		}
	}
}
