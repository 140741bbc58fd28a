// Package known holds what well-known MCP servers need that a cage takes away
// (a store that must outlive the session, the network, folders to write),
// as data: servers.json, embedded so that what runs is what was reviewed and
// tested. mcpcage run sets the stores' variables; protect shows the rest in
// its plan.
package known

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"
	"sync"

	"github.com/mcpcage/mcpcage/internal/egress"
)

//go:embed servers.json
var data []byte

// Server is what is known of one package.
type Server struct {
	Kind    string  `json:"kind"`    // "npx" or "uvx"
	Package string  `json:"package"` // the registry name, without version
	State   []State `json:"state,omitempty"`
	Network string  `json:"network,omitempty"` // why it needs the network, "" when it does not
	// Hosts are the HOST[:PORT] it needs (--allow-host each); none with a
	// Network: it reaches hosts no list can name (a browser), --allow-net.
	Hosts  []string `json:"hosts,omitempty"`
	Writes string   `json:"writes,omitempty"` // what it writes that the cage keeps read-only, and how to allow it
}

// State is a variable that names a file the server keeps across sessions.
type State struct {
	Env string `json:"env"`
	// Default is the file's path relative to the server's private HOME,
	// used when the variable is not passed: the only place in the cage that
	// is writable and kept.
	Default string `json:"default"`
	What    string `json:"what"`
}

type table struct {
	Comment string   `json:"comment"`
	Servers []Server `json:"servers"`
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Parse reads and checks a table in the format of servers.json.
func Parse(b []byte) ([]Server, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var t table
	if err := dec.Decode(&t); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, s := range t.Servers {
		where := fmt.Sprintf("server %d (%s)", i+1, s.Package)
		if s.Kind != "npx" && s.Kind != "uvx" {
			return nil, fmt.Errorf("%s: kind %q: give npx or uvx", where, s.Kind)
		}
		if s.Package == "" || strings.ContainsAny(s.Package, " =<>") || strings.LastIndex(s.Package, "@") > 0 {
			return nil, fmt.Errorf("%s: give the package name without a version", where)
		}
		k := key(s.Kind, s.Package)
		if seen[k] {
			return nil, fmt.Errorf("%s: listed twice", where)
		}
		seen[k] = true
		if len(s.State) == 0 && s.Network == "" && s.Writes == "" {
			return nil, fmt.Errorf("%s: says nothing it needs", where)
		}
		if len(s.Hosts) > 0 && s.Network == "" {
			return nil, fmt.Errorf("%s: hosts without saying why it needs the network", where)
		}
		for _, h := range s.Hosts {
			if _, err := egress.ParseRule(h); err != nil {
				return nil, fmt.Errorf("%s: %v", where, err)
			}
		}
		for _, st := range s.State {
			if !envName.MatchString(st.Env) {
				return nil, fmt.Errorf("%s: %q is not a variable name", where, st.Env)
			}
			if st.Default == "" || path.IsAbs(st.Default) || path.Clean(st.Default) != st.Default || strings.HasPrefix(st.Default, "..") {
				return nil, fmt.Errorf("%s: default %q of %s: give a path inside the private HOME, relative to it", where, st.Default, st.Env)
			}
			if st.What == "" {
				return nil, fmt.Errorf("%s: say what %s holds", where, st.Env)
			}
		}
	}
	return t.Servers, nil
}

func key(kind, pkg string) string {
	if kind == "uvx" {
		// PEP 503: Mcp_Server.Fetch is mcp-server-fetch.
		pkg = strings.NewReplacer("_", "-", ".", "-").Replace(strings.ToLower(pkg))
	}
	return kind + " " + pkg
}

var all = sync.OnceValue(func() map[string]Server {
	ss, err := Parse(data)
	if err != nil {
		// servers.json is part of the build and tested: a broken one is a
		// bug in mcpcage, not an input.
		panic("known/servers.json: " + err.Error())
	}
	m := map[string]Server{}
	for _, s := range ss {
		m[key(s.Kind, s.Package)] = s
	}
	return m
})

// Lookup returns what is known of a package, ok=false for an unknown one.
func Lookup(kind, pkg string) (Server, bool) {
	s, ok := all()[key(kind, pkg)]
	return s, ok
}
