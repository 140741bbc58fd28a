package main

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestRecordKindsInDocs: the audit record kinds the code writes are the
// rows of docs/audit.md's table ("What is recorded"), and those `audit show
// --kind` names in its help: a new kind is not written without its
// reference, and the reference names none that is not written.
func TestRecordKindsInDocs(t *testing.T) {
	write := regexp.MustCompile(`(?:Append|Event|event|record|Add|AddLazy|append|appendLocked\(h,|auditEvent\(opts\.IO,)\(?\s*"([a-z_]+)"`)
	written := map[string]bool{}
	for _, root := range []string{"../../internal", "."} {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range write.FindAllStringSubmatch(string(b), -1) {
				written[m[1]] = true
			}
			return nil
		})
	}
	if len(written) < 15 {
		t.Fatalf("found only %d kinds written: %v", len(written), written)
	}
	doc, err := os.ReadFile("../../docs/audit.md")
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(doc), "## What is recorded")
	j := strings.Index(string(doc), "## Format, byte for byte")
	if i < 0 || j < i {
		t.Fatal("docs/audit.md has no table of what is recorded")
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|")
	inDocs := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(doc[i:j]), -1) {
		inDocs[m[1]] = true
	}
	help := newAuditCmd(&IOStreams{}).Commands()
	var kindHelp string
	for _, c := range help {
		if c.Name() == "show" {
			kindHelp = c.Flags().Lookup("kind").Usage
		}
	}
	var missing, extra, noHelp []string
	for k := range written {
		if !inDocs[k] {
			missing = append(missing, k)
		}
		if !strings.Contains(kindHelp, k) {
			noHelp = append(noHelp, k)
		}
	}
	for k := range inDocs {
		if !written[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	sort.Strings(noHelp)
	if len(missing)+len(extra)+len(noHelp) > 0 {
		t.Errorf("record kinds: not in docs/audit.md %v; in it but never written %v; not in `audit show --kind`'s help %v", missing, extra, noHelp)
	}
}
