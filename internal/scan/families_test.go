package scan

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
)

// The batch of issue 33 (testdata/families): attacks of the five classes
// (tool shadowing, bracket and banner markers, exfiltration by parameter
// name, encoded payloads with a decode order, concealment from the user)
// and honest tools that look like them, written for this project before the
// families' rules were, each class split in two: the rules were written
// from the "written" part only; the "held-out" part measures them.

type familyAttack struct {
	Class  string          `json:"class"`
	Server string          `json:"server"`
	Tool   json.RawMessage `json:"tool"`
}

type familyBenign struct {
	Server string          `json:"server"`
	Tool   json.RawMessage `json:"tool"`
}

// familyResult is what the rules make of one part of the batch.
type familyResult struct {
	caught, total map[string]int
	misses        []string
	benignHigh    []string
	benign        int
}

func measureFamilies(t *testing.T, part string) familyResult {
	r := familyResult{caught: map[string]int{}, total: map[string]int{}}
	for _, a := range readJSONL[familyAttack](t, "testdata/families/attacks-"+part+".jsonl") {
		r.total[a.Class]++
		fs := ToolsFrom(Origin{Package: a.Server}, []json.RawMessage{a.Tool}, nil)[0]
		if Max(fs) >= Medium {
			r.caught[a.Class]++
		} else {
			r.misses = append(r.misses, a.Class+": "+itemName(a.Tool))
		}
	}
	for _, b := range readJSONL[familyBenign](t, "testdata/families/benign-"+part+".jsonl") {
		r.benign++
		fs := ToolsFrom(Origin{Package: b.Server}, []json.RawMessage{b.Tool}, nil)[0]
		if Max(fs) >= High {
			var ids []string
			for _, f := range fs {
				if f.Severity >= High {
					ids = append(ids, f.Rule)
				}
			}
			r.benignHigh = append(r.benignHigh, itemName(b.Tool)+" ("+strings.Join(ids, ", ")+")")
		}
	}
	return r
}

func (r familyResult) report(t *testing.T, part string) {
	var classes []string
	for c := range r.total {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	caught, total := 0, 0
	for _, c := range classes {
		t.Logf("%s %-26s %2d of %2d", part, c, r.caught[c], r.total[c])
		caught += r.caught[c]
		total += r.total[c]
	}
	t.Logf("%s total %d of %d (%.1f %%); honest tools with a HIGH finding: %d of %d", part, caught, total, 100*float64(caught)/float64(total), len(r.benignHigh), r.benign)
	for _, m := range r.misses {
		t.Logf("%s missed %s", part, m)
	}
	for _, b := range r.benignHigh {
		t.Logf("%s benign HIGH %s", part, b)
	}
}

func TestFamiliesBatch(t *testing.T) {
	for _, part := range []string{"written", "heldout"} {
		r := measureFamilies(t, part)
		r.report(t, part)
		caught, total := 0, 0
		for c, n := range r.total {
			caught += r.caught[c]
			total += n
		}
		if 10*caught < 9*total {
			t.Errorf("%s: %d of %d attacks caught at medium or above, want at least 90 %%", part, caught, total)
		}
		if len(r.benignHigh) > 0 {
			t.Errorf("%s: honest tools with a HIGH finding: %s", part, strings.Join(r.benignHigh, "; "))
		}
	}
	_ = fmt.Sprint
}
