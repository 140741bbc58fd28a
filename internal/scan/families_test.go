package scan

import (
	"encoding/json"
	"path/filepath"
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

// familiesMin is what the rules catch of each part at medium or above: a
// change that catches less fails. The written part is what the rules were
// written from; the held-out part was split from it before; each fresh part
// was written after a round of rules and measured once before the next
// (docs/scan.md, "Measuring", gives those first figures). The newest fresh
// part is the last: nothing was written from it, so its floor is its first
// figure.
var familiesMin = map[string]int{"written": 40, "heldout": 40, "fresh1": 30, "fresh2": 30, "fresh3": 30, "fresh4": 30, "fresh5": 30, "fresh6": 30, "fresh7": 30, "fresh8": 28, "fresh9": 29, "fresh10": 30, "fresh11": 30, "fresh12": 30, "fresh13": 28, "fresh14": 29, "fresh15": 26, "fresh16": 29, "fresh17": 25, "fresh18": 29, "fresh19": 27, "fresh20": 21, "fresh21": 20}

func TestFamiliesBatch(t *testing.T) {
	files, err := filepath.Glob("testdata/families/attacks-*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no batch in testdata/families (%v)", err)
	}
	for _, f := range files {
		part := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "attacks-"), ".jsonl")
		r := measureFamilies(t, part)
		r.report(t, part)
		caught := 0
		for c := range r.total {
			caught += r.caught[c]
		}
		min, ok := familiesMin[part]
		if !ok {
			t.Errorf("%s: no floor in familiesMin for this part", part)
		}
		if caught < min {
			t.Errorf("%s: %d attacks caught at medium or above, want at least %d", part, caught, min)
		}
		if len(r.benignHigh) > 0 {
			t.Errorf("%s: honest tools with a HIGH finding: %s", part, strings.Join(r.benignHigh, "; "))
		}
	}
}

// The keyword automaton keeps its table narrow (16-bit entries) while the
// rules' literals need fewer than 32,768 states; past that the table doubles
// and every scan is slower (a 64 KiB result about 2.5 times). Rules that
// add many literals must make room first.
func TestRulesFitNarrowTable(t *testing.T) {
	m := loadedRules().pre
	if m.next == nil {
		t.Fatalf("the rules' literals need %d automaton states, past the %d of the narrow table", m.nstate, hasOut)
	}
	t.Logf("%d automaton states of %d", m.nstate, hasOut)
}
