// Command corpusbench measures the scanner against a labelled corpus of tool
// definitions (../shared/corpus, read at run time and never copied): per
// category and in total, the share of core_poisoning records flagged at
// medium or high, the share of all malicious records flagged, and the share
// of benign tools with a high-severity finding and with any finding.
//
//	go run ./internal/scan/corpusbench -corpus ../shared/corpus [-v]
//
// Benign tools are scanned together with the other tools of their server, as
// mcpcage scans a tools/list; malicious records have no list and are scanned
// alone.
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/mcpcage/mcpcage/internal/scan"
	"github.com/mcpcage/mcpcage/internal/secrets"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

type record struct {
	ID       string          `json:"id"`
	Label    string          `json:"label"`
	Category string          `json:"category"`
	Core     bool            `json:"core_poisoning"`
	Server   string          `json:"server"`
	Source   string          `json:"source"`
	Tricky   []string        `json:"tricky"`
	Tool     json.RawMessage `json:"tool"`
	file     string
	findings []scan.Finding
}

type tally struct{ n, med, any, high int }

func (t *tally) add(fs []scan.Finding) {
	t.n++
	m := scan.Max(fs)
	if m >= scan.Medium {
		t.med++
	}
	if m >= scan.Low {
		t.any++
	}
	if m >= scan.High {
		t.high++
	}
}

func pct(a, n int) string {
	if n == 0 {
		return "     -"
	}
	return fmt.Sprintf("%5.1f%%", 100*float64(a)/float64(n))
}

func main() {
	dir := flag.String("corpus", "../shared/corpus", "folder with malicious.jsonl, benign.jsonl and benign_tricky_strings.jsonl")
	verbose := flag.Bool("v", false, "list missed malicious records and flagged benign ones")
	flag.Parse()
	if err := run(os.Stdout, *dir, *verbose); err != nil {
		fmt.Fprintf(os.Stderr, "corpusbench: error: %v\n", err)
		os.Exit(1)
	}
}

func load(path string) ([]*record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []*record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		r := &record{file: filepath.Base(path)}
		if err := json.Unmarshal(sc.Bytes(), r); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, line, err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

func run(w io.Writer, dir string, verbose bool) error {
	mal, err := load(filepath.Join(dir, "malicious.jsonl"))
	if err != nil {
		return fmt.Errorf("%v (is -corpus the corpus folder?)", err)
	}
	var ben []*record
	for _, name := range []string{"benign.jsonl", "benign_tricky_strings.jsonl"} {
		rs, err := load(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		ben = append(ben, rs...)
	}

	// Malicious tools: one list each, from a server nobody knows (the
	// records do not say which package offered them).
	for _, r := range mal {
		r.findings = scan.Tools([]json.RawMessage{r.Tool})[0]
	}
	// Benign tools: each server's tools as one list.
	byServer := map[string][]*record{}
	for _, r := range ben {
		if r.Server == "" {
			r.findings = scan.Tools([]json.RawMessage{r.Tool})[0]
			continue
		}
		byServer[r.Server] = append(byServer[r.Server], r)
	}
	for _, rs := range byServer {
		tools := make([]json.RawMessage, len(rs))
		for i, r := range rs {
			tools[i] = r.Tool
		}
		for i, fs := range scan.ToolsFrom(scan.Origin{Package: rs[0].Server}, tools, nil) {
			rs[i].findings = fs
		}
	}

	cats := map[string]*tally{}
	var core, all tally
	coreCats := map[string]bool{}
	for _, r := range mal {
		t := cats[r.Category]
		if t == nil {
			t = &tally{}
			cats[r.Category] = t
		}
		t.add(r.findings)
		all.add(r.findings)
		if r.Core {
			core.add(r.findings)
			coreCats[r.Category] = true
		}
	}
	names := make([]string, 0, len(cats))
	for c := range cats {
		names = append(names, c)
	}
	sort.Strings(names)
	fmt.Fprintf(w, "malicious (%d records): share flagged\n", len(mal))
	fmt.Fprintf(w, "  %-32s %5s %5s %8s %8s\n", "category", "n", "core", "medium+", "any")
	for _, c := range names {
		t := cats[c]
		mark := ""
		if coreCats[c] {
			mark = "yes"
		}
		fmt.Fprintf(w, "  %-32s %5d %5s %8s %8s\n", c, t.n, mark, pct(t.med, t.n), pct(t.any, t.n))
	}
	fmt.Fprintf(w, "  %-32s %5d %5s %8s %8s\n", "TOTAL core_poisoning", core.n, "", pct(core.med, core.n), pct(core.any, core.n))
	fmt.Fprintf(w, "  %-32s %5d %5s %8s %8s\n", "TOTAL malicious", all.n, "", pct(all.med, all.n), pct(all.any, all.n))

	bcats := map[string]*tally{}
	var btot tally
	for _, r := range ben {
		key := r.file
		if r.file == "benign.jsonl" {
			key = "benign.jsonl (real servers)"
		}
		for _, k := range append([]string{key}, prefixed("tricky:", r.Tricky)...) {
			t := bcats[k]
			if t == nil {
				t = &tally{}
				bcats[k] = t
			}
			t.add(r.findings)
		}
		btot.add(r.findings)
	}
	bnames := make([]string, 0, len(bcats))
	for c := range bcats {
		bnames = append(bnames, c)
	}
	sort.Strings(bnames)
	fmt.Fprintf(w, "\nbenign (%d tools): share with a finding\n", len(ben))
	fmt.Fprintf(w, "  %-32s %5s %8s %8s %8s\n", "group", "n", "high", "medium+", "any")
	for _, c := range bnames {
		t := bcats[c]
		fmt.Fprintf(w, "  %-32s %5d %8s %8s %8s\n", c, t.n, pct(t.high, t.n), pct(t.med, t.n), pct(t.any, t.n))
	}
	fmt.Fprintf(w, "  %-32s %5d %8s %8s %8s\n", "TOTAL benign", btot.n, pct(btot.high, btot.n), pct(btot.med, btot.n), pct(btot.any, btot.n))

	splits(w, mal, ben)

	rules := map[string][2]int{}
	for _, r := range mal {
		for _, id := range uniqueRules(r.findings) {
			v := rules[id]
			v[0]++
			rules[id] = v
		}
	}
	for _, r := range ben {
		for _, id := range uniqueRules(r.findings) {
			v := rules[id]
			v[1]++
			rules[id] = v
		}
	}
	rnames := make([]string, 0, len(rules))
	for id := range rules {
		rnames = append(rnames, id)
	}
	sort.Strings(rnames)
	fmt.Fprintf(w, "\nrecords flagged per rule\n  %-26s %9s %7s\n", "rule", "malicious", "benign")
	for _, id := range rnames {
		fmt.Fprintf(w, "  %-26s %9d %7d\n", id, rules[id][0], rules[id][1])
	}

	// The argument check of a session on the examples of the benign tools:
	// each tool's schema examples, defaults and enum values, as the
	// arguments a model would pass.
	calls, hits := 0, 0
	for _, r := range ben {
		args := exampleArguments(r.Tool)
		if args == nil {
			continue
		}
		calls++
		if fs := secrets.Arguments(args, nil); len(fs) > 0 {
			hits++
			if verbose {
				fmt.Fprintf(w, "  secret in example arguments of %s: %s at %s\n", r.ID, fs[0].Kind, fs[0].Path)
			}
		}
	}
	fmt.Fprintf(w, "\nargument check on the benign tools' example arguments: %d of %d tools with a secret found\n", hits, calls)
	// And on each whole definition passed as an argument: real prose about
	// tokens, keys and their prefixes, as a model might pass it on.
	whole := 0
	for _, r := range ben {
		if fs := secrets.Arguments(r.Tool, nil); len(fs) > 0 {
			whole++
			if verbose {
				fmt.Fprintf(w, "  secret in the definition of %s: %s at %s\n", r.ID, fs[0].Kind, fs[0].Path)
			}
		}
	}
	fmt.Fprintf(w, "argument check on the benign tools' whole definitions as arguments: %d of %d with a secret found\n", whole, len(ben))

	if verbose {
		fmt.Fprintf(w, "\ncore_poisoning records not flagged at medium or high:\n")
		for _, r := range mal {
			if r.Core && scan.Max(r.findings) < scan.Medium {
				fmt.Fprintf(w, "  %s [%s] %s\n", r.ID, r.Category, describe(r))
			}
		}
		fmt.Fprintf(w, "\nbenign tools with a finding:\n")
		for _, r := range ben {
			if len(r.findings) > 0 {
				fmt.Fprintf(w, "  %s (%s)\n", r.ID, r.Server)
				scan.Format(w, "    ", r.findings)
			}
		}
	}
	return nil
}

// The held-out measure. A split puts every record in one of two parts by
// a key, so that no key is on both sides: the part rules may be written
// from, and the part held out, whose figures are the honest ones.
//
//	source-disjoint  the repository a record comes from (owner/repo of its
//	                 source; for a benign tool its server's)
//	server-disjoint  the server: a benign tool's server, a malicious
//	                 record's source file (the demo server it is in)
//
// A key goes to a part by the parity of the first byte of its SHA-256:
// fixed, so that a rule written from one part can be measured on the other
// in any later run.
var splitKeys = []struct {
	name string
	key  func(*record) string
}{
	{"source-disjoint", func(r *record) string {
		if r.Label == "benign" && r.Server != "" {
			return "server:" + r.Server
		}
		parts := strings.SplitN(cutSource(r.Source), "/", 3)
		if len(parts) >= 2 {
			return parts[0] + "/" + parts[1]
		}
		return r.Source
	}},
	{"server-disjoint", func(r *record) string {
		if r.Label == "benign" && r.Server != "" {
			return "server:" + r.Server
		}
		return cutSource(r.Source)
	}},
}

// cutSource is a source without its commit and anchor.
func cutSource(s string) string {
	s, _, _ = strings.Cut(s, "#")
	s, _, _ = strings.Cut(s, "@")
	return s
}

// heldOut says whether key falls in the held-out part.
func heldOut(key string) bool {
	sum := sha256.Sum256([]byte(key))
	return sum[0]&1 == 1
}

// classes are the families of issue 33 and the corpus categories each
// gathers.
var classes = []struct {
	name string
	cats []string
}{
	{"tool shadowing", []string{"tool_shadowing", "tool_redirection", "function_overlapping", "preference_manipulation"}},
	{"markers", []string{"fake_system_marker", "hidden_instruction_tag"}},
	{"exfiltration by parameter", []string{"exfil_via_parameter", "conversation_exfiltration", "credential_harvesting", "hidden_data_collection"}},
	{"encoded payload", []string{"encoded_payload"}},
	{"concealment", []string{"concealment"}},
}

func splits(w io.Writer, mal, ben []*record) {
	fmt.Fprintf(w, "\nsplits (no key on both sides; rules are written from one part, the held-out part's figures are the honest ones)\n")
	fmt.Fprintf(w, "  %-16s %-9s %6s %9s %8s %12s\n", "split", "part", "core n", "medium+", "benign n", "benign high")
	for _, sp := range splitKeys {
		for _, part := range []bool{false, true} {
			var core, bt tally
			for _, r := range mal {
				if r.Core && heldOut(sp.key(r)) == part {
					core.add(r.findings)
				}
			}
			for _, r := range ben {
				if heldOut(sp.key(r)) == part {
					bt.add(r.findings)
				}
			}
			name := "written"
			if part {
				name = "held-out"
			}
			fmt.Fprintf(w, "  %-16s %-9s %6d %9s %8d %12s\n", sp.name, name, core.n, pct(core.med, core.n), bt.n, pct(bt.high, bt.n))
		}
	}
	fmt.Fprintf(w, "\nper class, core_poisoning flagged medium+ (source-disjoint: written / held-out)\n")
	for _, c := range classes {
		var wr, ho tally
		for _, r := range mal {
			if !r.Core || !slices.Contains(c.cats, r.Category) {
				continue
			}
			if heldOut(splitKeys[0].key(r)) {
				ho.add(r.findings)
			} else {
				wr.add(r.findings)
			}
		}
		fmt.Fprintf(w, "  %-28s %4d %7s   %4d %7s\n", c.name, wr.n, pct(wr.med, wr.n), ho.n, pct(ho.med, ho.n))
	}
}

// exampleArguments builds an arguments object from a tool's schema: per
// property its examples, default or enum values (all of them, as an
// array); nil when the schema gives none.
func exampleArguments(tool json.RawMessage) json.RawMessage {
	var t struct {
		InputSchema struct {
			Properties map[string]struct {
				Examples []json.RawMessage `json:"examples"`
				Default  json.RawMessage   `json:"default"`
				Enum     []json.RawMessage `json:"enum"`
			} `json:"properties"`
		} `json:"inputSchema"`
	}
	if json.Unmarshal(tool, &t) != nil {
		return nil
	}
	args := map[string][]json.RawMessage{}
	for name, p := range t.InputSchema.Properties {
		vs := append(append([]json.RawMessage(nil), p.Examples...), p.Enum...)
		if len(p.Default) > 0 {
			vs = append(vs, p.Default)
		}
		if len(vs) > 0 {
			args[name] = vs
		}
	}
	if len(args) == 0 {
		return nil
	}
	b, _ := json.Marshal(args)
	return b
}

func prefixed(p string, xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = p + x
	}
	return out
}

func uniqueRules(fs []scan.Finding) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range fs {
		if !seen[f.Rule] {
			seen[f.Rule] = true
			out = append(out, f.Rule)
		}
	}
	return out
}

func describe(r *record) string {
	var t struct {
		Description string `json:"description"`
	}
	_ = json.Unmarshal(r.Tool, &t)
	d := untrusted.Line(t.Description)
	if len([]rune(d)) > 300 {
		d = string([]rune(d)[:300]) + "…"
	}
	return d
}
