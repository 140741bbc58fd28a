package scan

import (
	"os"
	"regexp"
	"sort"
	"testing"
)

// TestRuleTableInDocs: docs/scan.md's table of rules names every rule the
// scanner loads, and no rule it does not have: the reference stays the
// code's.
func TestRuleTableInDocs(t *testing.T) {
	b, err := os.ReadFile("../../docs/scan.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| [a-z-]+ \\| `([a-z0-9-]+)` \\| (LOW|MEDIUM|HIGH) \\|")
	inDocs := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		inDocs[m[1]] = true
	}
	var missing, extra []string
	have := map[string]bool{}
	for _, r := range Rules() {
		have[r.ID] = true
		if !inDocs[r.ID] {
			missing = append(missing, r.ID)
		}
	}
	for id := range inDocs {
		if !have[id] {
			extra = append(extra, id)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("docs/scan.md's rule table: missing %v, names rules the scanner does not have %v", missing, extra)
	}
}
