package fuzz

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/mcpcage/mcpcage/internal/secrets"
)

// FuzzSecretArguments: any bytes as a tool call's arguments. The check
// finishes, reports only known kinds, and no finding (path or words) holds
// the credential it was told to watch for, whatever surrounds it.
func FuzzSecretArguments(f *testing.F) {
	const cred = "Zq81xLmW2vTr9cYp4bNa"
	f.Add([]byte(`{"a":"Zq81xLmW2vTr9cYp4bNa"}`))
	f.Add([]byte(`{"Zq81xLmW2vTr9cYp4bNa":{"b":["x"]}}`))
	f.Add([]byte(`{"k":"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA"}`))
	f.Add([]byte(`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["x"]]]]`))
	f.Add([]byte(`{"a":"gh` + `p_aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		creds := []secrets.Credential{{Env: "TOKEN", Server: "other", Value: cred}}
		fs := secrets.Arguments(b, creds)
		known := map[string]bool{}
		for _, k := range secrets.Kinds {
			known[k] = true
		}
		for _, f := range fs {
			if !known[f.Kind] {
				t.Fatalf("unknown kind %q", f.Kind)
			}
			if strings.Contains(f.Path, cred) || strings.Contains(f.Describe(), cred) {
				t.Fatalf("finding shows the credential: %+v", f)
			}
		}
		if strings.Contains(string(b), `"`+cred+`"`) && len(fs) == 0 {
			t.Fatalf("the credential as a whole string was not found in %q", b)
		}
	})
}

// FuzzSecretArgumentsAtDepth: a string nested at any depth the proxy lets
// through (up to 10,000 levels, in objects and arrays) holds exactly the
// kinds of secret it holds at the top: nesting hides nothing, and the walk
// needs no stack for it.
func FuzzSecretArgumentsAtDepth(f *testing.F) {
	f.Add(uint16(70), true, `gh`+`p_aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6`)
	f.Add(uint16(9000), false, "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA")
	f.Add(uint16(200), true, "\\u0067hp_aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6")
	f.Add(uint16(3), false, "plain words")
	f.Fuzz(func(t *testing.T, depth uint16, objects bool, s string) {
		d := int(depth) % 10000
		q, _ := json.Marshal(s)
		top := kinds(secrets.Arguments(q, nil))
		open, close := `[`, `]`
		if objects {
			open, close = `{"a":`, `}`
		}
		deep := strings.Repeat(open, d) + string(q) + strings.Repeat(close, d)
		if got := kinds(secrets.Arguments([]byte(deep), nil)); got != top {
			t.Fatalf("at depth %d: %s, at the top: %s", d, got, top)
		}
	})
}

func kinds(fs []secrets.ArgFinding) string {
	var k []string
	for _, f := range fs {
		k = append(k, f.Kind)
	}
	sort.Strings(k)
	return strings.Join(slices.Compact(k), ",")
}
