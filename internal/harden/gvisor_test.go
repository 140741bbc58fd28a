package harden

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestGVisorSeccompProfile: under gVisor the profile is the cage's with
// clone3 allowed, and nothing else changed.
func TestGVisorSeccompProfile(t *testing.T) {
	base, err := SeccompProfile()
	if err != nil {
		t.Fatal(err)
	}
	gv, err := GVisorSeccompProfile()
	if err != nil {
		t.Fatal(err)
	}
	var a, b struct {
		DefaultAction string           `json:"defaultAction"`
		Syscalls      []map[string]any `json:"syscalls"`
	}
	if json.Unmarshal([]byte(base), &a) != nil || json.Unmarshal([]byte(gv), &b) != nil {
		t.Fatal("a profile is not JSON")
	}
	key := func(r map[string]any) string { k, _ := json.Marshal(r); return string(k) }
	inA := map[string]bool{}
	for _, r := range a.Syscalls {
		inA[key(r)] = true
	}
	var added, removed []string
	inB := map[string]bool{}
	for _, r := range b.Syscalls {
		inB[key(r)] = true
		if !inA[key(r)] {
			added = append(added, key(r))
		}
	}
	for _, r := range a.Syscalls {
		if !inB[key(r)] {
			removed = append(removed, key(r))
		}
	}
	if a.DefaultAction != b.DefaultAction || len(added) != 1 || !strings.Contains(added[0], `"clone3"`) || !strings.Contains(added[0], "SCMP_ACT_ALLOW") ||
		len(removed) != 1 || !strings.Contains(removed[0], `"clone3"`) || !strings.Contains(removed[0], `"errnoRet":38`) {
		t.Errorf("added %v, removed %v", added, removed)
	}
}
