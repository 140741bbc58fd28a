package fuzz

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpcage/mcpcage/internal/clients"
)

const fuzzExe = "/opt/mcpcage/bin/mcpcage"

var fuzzTables = [][]string{{"mcpServers"}, {"projects", "*", "mcpServers"}, {"servers"}, {"context_servers"}}

func seedClientFiles(f *testing.F, pattern string) {
	ms, _ := filepath.Glob(filepath.Join("..", "internal", "clients", "testdata", pattern))
	for _, m := range ms {
		if b, err := os.ReadFile(m); err == nil {
			f.Add(b)
		}
	}
}

// checkEdits holds for any input: reading, caging and unwrapping never
// panic and never fail their own re-read check; caging twice is caging once; unwrap(fix(x)) == unwrap(x); and for
// a file with no caged entry, unwrap(fix(x)) == x byte for byte.
func checkEdits(t *testing.T, format clients.Format, tables [][]string, x []byte) {
	clients.Self = func() string { return "" }
	srvs, err := clients.Read(format, x, tables)
	if err != nil {
		return
	}
	anyCaged := false
	for _, s := range srvs {
		_ = s.Secrets()
		_ = s.Reach()
		if s.Caged() {
			anyCaged = true
		}
	}
	fixed, changes, err := clients.Edit(format, x, tables, clients.OpFix, fuzzExe, nil)
	if errors.Is(err, clients.ErrCheck) {
		t.Fatalf("fix failed its own check: %v\n%q", err, x)
	}
	if err != nil {
		return
	}
	if len(changes) == 0 && !bytes.Equal(fixed, x) {
		t.Fatal("fix changed bytes but reported no change")
	}
	again, changes2, err := clients.Edit(format, fixed, tables, clients.OpFix, fuzzExe, nil)
	if err != nil || len(changes2) != 0 || !bytes.Equal(again, fixed) {
		t.Fatalf("second fix changed something (err %v, %d changes)\n%s", err, len(changes2), fixed)
	}
	// Remote entries come back from what --fix replaced (the ledger's).
	originals := map[string]string{}
	for _, c := range changes {
		originals[strings.Join(c.Before.Where, "\x00")] = c.Original
	}
	restore := clients.Wrap{Original: func(s clients.Server) string { return originals[strings.Join(s.Where, "\x00")] }}
	back, _, err := clients.EditWith(format, fixed, tables, clients.OpUnwrap, restore, nil)
	if errors.Is(err, clients.ErrCheck) {
		t.Fatalf("unwrap failed its own check: %v\n%q", err, fixed)
	}
	if !anyCaged {
		if err != nil {
			t.Fatalf("unwrap(fix(x)) failed: %v\n%s", err, fixed)
		}
		if !bytes.Equal(back, x) {
			t.Fatalf("unwrap(fix(x)) != x\n x: %q\n got: %q", x, back)
		}
		return
	}
	direct, _, err2 := clients.EditWith(format, x, tables, clients.OpUnwrap, restore, nil)
	if err == nil && err2 == nil && !bytes.Equal(back, direct) {
		t.Fatalf("unwrap(fix(x)) != unwrap(x)\n x: %q", x)
	}
}

func FuzzClientsJSONC(f *testing.F) {
	seedClientFiles(f, "*.json")
	f.Add([]byte(`{"mcpServers":{"a":{"command":"npx","args":["-y","p"]}}}`))
	f.Add([]byte(`{"mcpServers":{"a":{"command":"/x/mcpcage","args":["run","--","npx","p"]},"b":{"command":"uvx","args":[/*c*/"q",]}}}`))
	f.Add([]byte(`{"context_servers":{"z":{"command":{"path":"npx","args":["p"]}}}}`))
	f.Fuzz(func(t *testing.T, x []byte) {
		checkEdits(t, clients.JSONC, fuzzTables, x)
	})
}

func FuzzClientsTOML(f *testing.F) {
	seedClientFiles(f, "*.toml")
	f.Add([]byte("[mcp_servers.a]\ncommand = \"npx\"\nargs = [\"-y\", \"p\"]\n"))
	f.Add([]byte("[mcp_servers.\"a/b\"]\ncommand = 'uvx'\nargs = [ # c\n 'q', ]\n[mcp_servers.a.env]\nK = \"v\"\n"))
	f.Fuzz(func(t *testing.T, x []byte) {
		checkEdits(t, clients.TOML, nil, x)
	})
}
