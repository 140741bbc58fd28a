package fuzz

import (
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
