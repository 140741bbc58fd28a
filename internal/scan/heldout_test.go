package scan

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

// The held-out batch of round five (testdata/heldout): attacks and honest
// tools written for this project, per family of the misses reported in
// issue 15, before the rules of that round were written, and never used to
// tune them. The test measures what the rules catch of it per category; its
// figures before and after the round are in docs/scan.md. heldOutMin is what
// the rules catch of it: a change that catches less fails.

type heldOutAttack struct {
	Category string          `json:"category"`
	Server   string          `json:"server"`
	Tool     json.RawMessage `json:"tool"`
}

type heldOutServer struct {
	Server string            `json:"server"`
	Tools  []json.RawMessage `json:"tools"`
}

// heldOutMin: attacks caught at medium or above, per category.
var heldOutMin = map[string]int{
	"conversation_exfiltration": 5, "encoded_payload": 4, "exfil_via_parameter": 5,
	"fake_system_marker": 5, "hidden_instruction_tag": 6, "homoglyph": 5,
	"sleeper_hidden_tool": 5, "tool_shadowing": 5, "name_collision_impersonation": 5, "name_mimicry": 6,
	"overt_malicious_capability": 6,
}

// heldOutMaxBenignHigh: honest tools with a high-severity finding.
const heldOutMaxBenignHigh = 0

func readJSONL[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	return out
}

func TestHeldOutBatch(t *testing.T) {
	attacks := readJSONL[heldOutAttack](t, "testdata/heldout/attacks.jsonl")
	servers := readJSONL[heldOutServer](t, "testdata/heldout/benign.jsonl")
	caught, total := map[string]int{}, map[string]int{}
	var misses []string
	for _, a := range attacks {
		total[a.Category]++
		fs := ToolsFrom(Origin{Package: a.Server}, []json.RawMessage{a.Tool}, nil)[0]
		if Max(fs) >= Medium {
			caught[a.Category]++
		} else {
			misses = append(misses, a.Category+": "+itemName(a.Tool))
		}
	}
	var cats []string
	for c := range total {
		cats = append(cats, c)
	}
	sort.Strings(cats)
	var b strings.Builder
	sum, n := 0, 0
	for _, c := range cats {
		fmt.Fprintf(&b, "  %-30s %2d/%-2d\n", c, caught[c], total[c])
		sum += caught[c]
		n += total[c]
		if caught[c] < heldOutMin[c] {
			t.Errorf("%s: %d of %d caught, want at least %d", c, caught[c], total[c], heldOutMin[c])
		}
	}
	fmt.Fprintf(&b, "  %-30s %2d/%-2d\n", "TOTAL", sum, n)
	high, any, tools := 0, 0, 0
	for _, s := range servers {
		for i, fs := range ToolsFrom(Origin{Package: s.Server}, s.Tools, nil) {
			tools++
			if len(fs) > 0 {
				any++
				t.Logf("benign %s %s: %s", s.Server, itemName(s.Tools[i]), ids(fs))
			}
			if Max(fs) >= High {
				high++
			}
		}
	}
	fmt.Fprintf(&b, "  benign: %d of %d tools with a high finding, %d with any\n", high, tools, any)
	t.Logf("held-out batch, caught at medium or above:\n%s", b.String())
	for _, m := range misses {
		t.Logf("missed %s", m)
	}
	if high > heldOutMaxBenignHigh {
		t.Errorf("%d honest tools with a high-severity finding, want at most %d", high, heldOutMaxBenignHigh)
	}
}
