// Command corpusbench measures the scanner against a labelled corpus of tool
// definitions (../shared/corpus, read at run time and never copied): per
// category and in total, the share of core_poisoning records flagged at
// medium or high, the share of all malicious records flagged, and the share
// of benign tools with a high-severity finding and with any finding.
//
//	go run ./internal/scan/corpusbench -corpus ../shared/corpus [-v] [-before REV] [-batch DIR] [-extra FILE]
//
// With -before, the rules of commit REV (its rules/*.json, read with git)
// are measured beside today's, in the same run: the splits, the classes
// and the batch (-batch, default internal/scan/testdata/families) show
// both. -extra adds a JSON Lines file of attacks from outside the
// repository ({"class": ..., "tool": {...}}), measured the same way.
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
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing/fstest"
	"time"

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
	before   []scan.Finding // with the rules of -before
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
	before := flag.String("before", "", "also measure the rules of this git commit, beside today's")
	batch := flag.String("batch", "internal/scan/testdata/families", "the families batch (attacks-*.jsonl, benign-*.jsonl); empty: none")
	extra := flag.String("extra", "", "a JSON Lines file of attacks from outside the repository, each {\"class\", \"tool\"}")
	flag.Parse()
	o := options{dir: *dir, verbose: *verbose, batch: *batch, extra: *extra, after: scan.ToolsFrom}
	if *before != "" {
		set, err := rulesAt(*before)
		if err != nil {
			fmt.Fprintf(os.Stderr, "corpusbench: error: the rules of %s: %v\n", *before, err)
			os.Exit(1)
		}
		o.before, o.beforeSet, o.beforeRev = set.ToolsFrom, set, *before
	}
	if err := run(os.Stdout, o); err != nil {
		fmt.Fprintf(os.Stderr, "corpusbench: error: %v\n", err)
		os.Exit(1)
	}
}

// toolsFunc scans a list of tools with one set of rules.
type toolsFunc func(scan.Origin, []json.RawMessage, []json.RawMessage) [][]scan.Finding

type options struct {
	dir, batch, extra string
	verbose           bool
	after, before     toolsFunc // before: nil without -before
	beforeSet         *scan.Set // the rules of beforeRev
	beforeRev         string
}

// rulesAt compiles the rule files of commit rev, read with git from the
// repository the command runs in.
func rulesAt(rev string) (*scan.Set, error) {
	out, err := exec.Command("git", "ls-tree", "--full-tree", "--name-only", rev, "rules/").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-tree: %v (run from a clone that holds the commit)", err)
	}
	fsys := fstest.MapFS{}
	for _, name := range strings.Fields(string(out)) {
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		b, err := exec.Command("git", "show", rev+":"+name).Output()
		if err != nil {
			return nil, fmt.Errorf("git show %s:%s: %v", rev, name, err)
		}
		fsys[filepath.Base(name)] = &fstest.MapFile{Data: b}
	}
	return scan.Compile(fsys)
}

func load(path string) ([]*record, error) {
	rs, err := readJSONL[record](path)
	for _, r := range rs {
		r.file = filepath.Base(path)
	}
	return rs, err
}

// readJSONL reads a JSON Lines file, one T a line; blank lines are skipped.
func readJSONL[T any](path string) ([]*T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []*T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		v := new(T)
		if err := json.Unmarshal(sc.Bytes(), v); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, line, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

func run(w io.Writer, o options) error {
	dir, verbose := o.dir, o.verbose
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

	scanRecords(o.after, mal, ben, func(r *record, fs []scan.Finding) { r.findings = fs })
	if o.before != nil {
		scanRecords(o.before, mal, ben, func(r *record, fs []scan.Finding) { r.before = fs })
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

	splits(w, mal, ben, o.beforeRev)
	cost(w, o, ben)
	if o.batch != "" {
		if err := familyBatch(w, o); err != nil {
			return err
		}
	}
	if o.extra != "" {
		if err := extraAttacks(w, o); err != nil {
			return err
		}
	}

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
				fmt.Fprintf(w, "  %s [%s] %s\n", r.ID, r.Category, describe(r.Tool))
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

// scanRecords scans the records with f: a malicious record alone (the
// records do not say which package offered them), a benign tool with the
// other tools of its server, as mcpcage scans a tools/list.
func scanRecords(f toolsFunc, mal, ben []*record, set func(*record, []scan.Finding)) {
	for _, r := range mal {
		set(r, f(scan.Origin{}, []json.RawMessage{r.Tool}, nil)[0])
	}
	byServer := map[string][]*record{}
	for _, r := range ben {
		if r.Server == "" {
			set(r, f(scan.Origin{}, []json.RawMessage{r.Tool}, nil)[0])
			continue
		}
		byServer[r.Server] = append(byServer[r.Server], r)
	}
	for _, rs := range byServer {
		tools := make([]json.RawMessage, len(rs))
		for i, r := range rs {
			tools[i] = r.Tool
		}
		for i, fs := range f(scan.Origin{Package: rs[0].Server}, tools, nil) {
			set(rs[i], fs)
		}
	}
}

// cost prints what a 64 KiB tool result of the benign tools' prose costs
// to scan, with the rules of -before and with today's: the least of 7
// rounds of 50 scans each, alternating, so that both see the same machine.
func cost(w io.Writer, o options, ben []*record) {
	var text []byte
	for _, r := range ben {
		var d struct {
			Description string `json:"description"`
		}
		_ = json.Unmarshal(r.Tool, &d)
		text = append(append(text, d.Description...), '\n')
		if len(text) >= 64<<10 {
			break
		}
	}
	text = []byte(strings.ToValidUTF8(string(text[:min(len(text), 64<<10)]), ""))
	block, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": string(text)}}})
	after := func() { scan.Result(block) }
	var before func()
	if o.beforeSet != nil {
		before = func() { o.beforeSet.Result(block) }
	}
	best := func(f func(), cur time.Duration) time.Duration {
		t0 := time.Now()
		for range 50 {
			f()
		}
		d := time.Since(t0) / 50
		if cur == 0 || d < cur {
			return d
		}
		return cur
	}
	var tb, ta time.Duration
	after() // compiles the patterns this text runs
	if before != nil {
		before()
	}
	for range 7 {
		if before != nil {
			tb = best(before, tb)
		}
		ta = best(after, ta)
	}
	fmt.Fprintf(w, "\ncost: a 64 KiB tool result of benign prose, least of 7 rounds of 50 (one run; compare within it)\n")
	if before != nil {
		fmt.Fprintf(w, "  rules of %s: %d us a result; today's: %d us (%.2fx)\n", o.beforeRev, tb.Microseconds(), ta.Microseconds(), float64(ta)/float64(tb))
	} else {
		fmt.Fprintf(w, "  today's rules: %d us a result\n", ta.Microseconds())
	}
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
	name  string
	cats  []string
	rules []string // the family's rules (docs/scan.md, "Rule families")
}{
	{"tool shadowing", []string{"tool_shadowing", "tool_redirection", "function_overlapping", "preference_manipulation"},
		[]string{"steer-between-tools", "disparage-other-tools", "drive-other-server", "steer-clause", "other-tool-verdict", "cross-tool", "cross-tool-prefer", "use-instead", "other-tool-behavior", "other-tool-trigger",
			"self-route-frame", "other-verdict-frame", "drive-other-frame", "self-trigger-frame", "every-turn-frame"}},
	{"markers", []string{"fake_system_marker", "hidden_instruction_tag"},
		[]string{"bracket-to-model", "bracket-urgency", "symbol-label", "hidden-tag", "bracket-tag", "fake-system-marker", "caps-notice", "agent-heading", "model-rules-frame", "role-order-frame", "model-label-frame"}},
	{"exfiltration by parameter", []string{"exfil_via_parameter", "conversation_exfiltration", "credential_harvesting", "hidden_data_collection"},
		[]string{"param-wants-secret", "param-wants-personal-secret", "param-wants-context", "param-wants-reach", "param-secret-harvest", "exfil-parameter", "conversation-parameter", "sensitive-path", "param-context-frame", "param-secretvar-frame", "param-secret-contents-frame"}},
	{"encoded payload", []string{"encoded_payload"},
		[]string{"decode-then-obey", "decode-and-proceed", "rot13-text", "reversed-text", "decode-and-follow", "encoded-payload", "decode-order-frame", "encoded-prose"}},
	{"concealment", []string{"concealment"},
		[]string{"keep-from-user", "stay-unnoticed", "conceal-clause", "keep-unknown", "behind-the-scenes", "conceal-from-user", "withhold-from-user", "covert-action", "cover-tracks", "conceal-frame", "evade-frame", "answer-limit-frame", "upset-frame", "scripted-answer-frame", "needless-tell-frame", "selective-report-frame", "internal-detail-frame", "not-their-concern-frame"}},
}

// familyAlarm reports whether fs holds a finding of one of rules at or
// above min.
func familyAlarm(fs []scan.Finding, rules []string, min scan.Severity) bool {
	for _, f := range fs {
		if f.Severity >= min && slices.Contains(rules, f.Rule) {
			return true
		}
	}
	return false
}

func splits(w io.Writer, mal, ben []*record, beforeRev string) {
	fmt.Fprintf(w, "\nsplits (no key on both sides; rules are written from one part, the held-out part's figures are the honest ones)\n")
	if beforeRev != "" {
		fmt.Fprintf(w, "  before: the rules of %s; after: today's\n", beforeRev)
	}
	fmt.Fprintf(w, "  %-16s %-9s %6s %9s %9s %8s %12s %12s\n", "split", "part", "core n", "before", "medium+", "benign n", "before high", "benign high")
	for _, sp := range splitKeys {
		for _, part := range []bool{false, true} {
			var core, bt, coreB, btB tally
			for _, r := range mal {
				if r.Core && heldOut(sp.key(r)) == part {
					core.add(r.findings)
					coreB.add(r.before)
				}
			}
			for _, r := range ben {
				if heldOut(sp.key(r)) == part {
					bt.add(r.findings)
					btB.add(r.before)
				}
			}
			name := "written"
			if part {
				name = "held-out"
			}
			fmt.Fprintf(w, "  %-16s %-9s %6d %9s %9s %8d %12s %12s\n", sp.name, name, core.n, maybe(beforeRev, coreB.med, coreB.n), pct(core.med, core.n), bt.n, maybe(beforeRev, btB.high, btB.n), pct(bt.high, bt.n))
		}
	}
	fmt.Fprintf(w, "\nper class and split: core_poisoning of the class flagged medium+, and benign tools with a finding of the class's rules (any / HIGH), before -> after\n")
	fmt.Fprintf(w, "  %-16s %-9s %-26s %4s %17s %5s %17s %17s\n", "split", "part", "class", "n", "detected", "ben n", "benign any", "benign high")
	for _, sp := range splitKeys {
		for _, part := range []bool{false, true} {
			name := "written"
			if part {
				name = "held-out"
			}
			for _, c := range classes {
				var det, detB tally
				for _, r := range mal {
					if r.Core && slices.Contains(c.cats, r.Category) && heldOut(sp.key(r)) == part {
						det.add(r.findings)
						detB.add(r.before)
					}
				}
				var bn, anyA, anyB, highA, highB int
				for _, r := range ben {
					if heldOut(sp.key(r)) != part {
						continue
					}
					bn++
					if familyAlarm(r.findings, c.rules, scan.Low) {
						anyA++
					}
					if familyAlarm(r.before, c.rules, scan.Low) {
						anyB++
					}
					if familyAlarm(r.findings, c.rules, scan.High) {
						highA++
					}
					if familyAlarm(r.before, c.rules, scan.High) {
						highB++
					}
				}
				fmt.Fprintf(w, "  %-16s %-9s %-26s %4d %7s -> %6s %5d %7s -> %6s %7s -> %6s\n", sp.name, name, c.name,
					det.n, maybe(beforeRev, detB.med, detB.n), pct(det.med, det.n), bn,
					maybe(beforeRev, anyB, bn), pct(anyA, bn), maybe(beforeRev, highB, bn), pct(highA, bn))
			}
		}
	}
}

// maybe is pct when there is a before to show.
func maybe(beforeRev string, a, n int) string {
	if beforeRev == "" {
		return "     -"
	}
	return pct(a, n)
}

type batchAttack struct {
	Class  string          `json:"class"`
	Server string          `json:"server"`
	Tool   json.RawMessage `json:"tool"`
}

// familyBatch measures the families batch: per class and part, attacks
// caught at medium or above, and honest look-alikes with a HIGH finding and
// with any.
func familyBatch(w io.Writer, o options) error {
	parts, err := filepath.Glob(filepath.Join(o.batch, "attacks-*.jsonl"))
	if err != nil || len(parts) == 0 {
		return fmt.Errorf("no attacks-*.jsonl in %s (-batch)", o.batch)
	}
	// written first, then held-out, then the fresh batches in order.
	sort.Slice(parts, func(i, j int) bool { return partOrder(parts[i]) < partOrder(parts[j]) })
	fmt.Fprintf(w, "\nthe families batch (%s), caught at medium or above, before -> after\n", o.batch)
	fmt.Fprintf(w, "  written: the rules were written from it; held-out: split from it before the rules, measured only; fresh*: written after a round of rules, measured once before the next\n")
	count := func(rs []*batchAttack, f toolsFunc, class string, min scan.Severity) (hit, n int) {
		for _, a := range rs {
			if class != "" && a.Class != class {
				continue
			}
			n++
			if f != nil && scan.Max(f(scan.Origin{Package: a.Server}, []json.RawMessage{a.Tool}, nil)[0]) >= min {
				hit++
			}
		}
		return hit, n
	}
	for _, path := range parts {
		part := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "attacks-"), ".jsonl")
		rs, err := readJSONL[batchAttack](path)
		if err != nil {
			return err
		}
		ben, err := readJSONL[batchAttack](filepath.Join(o.batch, "benign-"+part+".jsonl"))
		if err != nil {
			return err
		}
		var names []string
		for _, a := range rs {
			if !slices.Contains(names, a.Class) {
				names = append(names, a.Class)
			}
		}
		fmt.Fprintf(w, "  %s\n", part)
		for _, c := range append(names, "") {
			label := c
			if c == "" {
				label = "TOTAL"
			}
			a, n := count(rs, o.after, c, scan.Medium)
			b, _ := count(rs, o.before, c, scan.Medium)
			fmt.Fprintf(w, "    %-28s %4d %7s -> %6s\n", label, n, maybe(o.beforeRev, b, n), pct(a, n))
		}
		for _, sev := range []scan.Severity{scan.High, scan.Low} {
			a, n := count(ben, o.after, "", sev)
			b, _ := count(ben, o.before, "", sev)
			label := "honest look-alikes, HIGH"
			if sev == scan.Low {
				label = "honest look-alikes, any"
			}
			fmt.Fprintf(w, "    %-28s %4d %7s -> %6s\n", label, n, maybe(o.beforeRev, b, n), pct(a, n))
		}
	}
	return nil
}

// partOrder sorts the batch's parts: written, heldout, then the rest.
func partOrder(path string) string {
	switch filepath.Base(path) {
	case "attacks-written.jsonl":
		return "0"
	case "attacks-heldout.jsonl":
		return "1"
	}
	// fresh2 before fresh10: the number, padded
	name := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	digits := len(name) - len(strings.TrimRight(name, "0123456789"))
	return "2" + name[:len(name)-digits] + fmt.Sprintf("%06s", name[len(name)-digits:])
}

// extraAttacks measures attacks from a file outside the repository.
func extraAttacks(w io.Writer, o options) error {
	rs, err := readJSONL[batchAttack](o.extra)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nattacks from %s, caught at medium or above, before -> after\n", o.extra)
	byClass := map[string][2]tally{}
	var names, missed []string
	for _, a := range rs {
		v, ok := byClass[a.Class]
		if !ok {
			names = append(names, a.Class)
		}
		fs := o.after(scan.Origin{Package: a.Server}, []json.RawMessage{a.Tool}, nil)[0]
		v[1].add(fs)
		if scan.Max(fs) < scan.Medium {
			missed = append(missed, fmt.Sprintf("  [%s] %s", a.Class, describe(a.Tool)))
		}
		if o.before != nil {
			v[0].add(o.before(scan.Origin{Package: a.Server}, []json.RawMessage{a.Tool}, nil)[0])
		}
		byClass[a.Class] = v
	}
	var tb, ta tally
	for _, c := range names {
		v := byClass[c]
		fmt.Fprintf(w, "  %-28s %4d %7s -> %6s\n", c, v[1].n, maybe(o.beforeRev, v[0].med, v[0].n), pct(v[1].med, v[1].n))
		tb.n, tb.med, ta.n, ta.med = tb.n+v[0].n, tb.med+v[0].med, ta.n+v[1].n, ta.med+v[1].med
	}
	fmt.Fprintf(w, "  %-28s %4d %7s -> %6s\n", "TOTAL", ta.n, maybe(o.beforeRev, tb.med, tb.n), pct(ta.med, ta.n))
	if o.verbose && len(missed) > 0 {
		fmt.Fprintf(w, "\nattacks from %s not caught at medium or above:\n%s\n", o.extra, strings.Join(missed, "\n"))
	}
	return nil
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

func describe(tool json.RawMessage) string {
	var t struct {
		Description string `json:"description"`
	}
	_ = json.Unmarshal(tool, &t)
	d := untrusted.Line(t.Description)
	if len([]rune(d)) > 300 {
		d = string([]rune(d)[:300]) + "…"
	}
	return d
}
