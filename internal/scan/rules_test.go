package scan

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	"github.com/mcpcage/mcpcage/rules"
)

// exampleSiblings are the other tools the examples of the cross-tool rule
// are scanned against.
var exampleSiblings = []string{"send_email", "read_file", "list_files", "search", "upload_file", "create_conversation"}

func scanExample(r *Rule, s string) []Finding {
	sc := newScanner()
	sc.keepAll = true
	if r.Check == "known-name" || r.Check == "lookalike-name" {
		// "origin|name": the package of the offering server, then the tool's name.
		pkg, name, _ := strings.Cut(s, "|")
		sc.checkName(name, Origin{Package: pkg})
		return sc.result()
	}
	if r.Check == "scan-limit" {
		// A JSON document, walked as a definition is.
		sc.walkJSON([]byte(s), "")
		return sc.result()
	}
	if r.frameSpec != nil || r.Check == "encoded-prose" || r.Check == "encoded" {
		// A sentence of a definition: the tool is example_tool, among the
		// example siblings.
		sc.defn = true
		sc.self, sc.selfLow = "example_tool", "example_tool"
	}
	if strings.HasPrefix(r.Check, "cross-tool") || r.frameSpec != nil {
		for _, n := range exampleSiblings {
			sc.addSibling(n)
		}
	}
	path := "description"
	if r.In == "schema" {
		path = "inputSchema.properties.x.description"
	}
	sc.pb = append(sc.pb[:0], path...)
	sc.text(s)
	return sc.result()
}

func has(fs []Finding, id string) bool {
	for _, f := range fs {
		if f.Rule == id {
			return true
		}
	}
	return false
}

// TestRuleExamples runs every rule's own examples: each "match" must produce
// the rule and each "nomatch" must not.
func TestRuleExamples(t *testing.T) {
	rs := Rules()
	if len(rs) < 20 {
		t.Fatalf("only %d rules loaded", len(rs))
	}
	for _, r := range rs {
		for _, ex := range r.Match {
			if fs := scanExample(r, ex); !has(fs, r.ID) {
				t.Errorf("%s: must match %q; got %v", r.ID, ex, ids(fs))
			}
		}
		for _, ex := range r.NoMatch {
			if fs := scanExample(r, ex); has(fs, r.ID) {
				t.Errorf("%s: must not match %q; got %+v", r.ID, ex, fs)
			}
		}
	}
}

func ids(fs []Finding) string {
	var s []string
	for _, f := range fs {
		s = append(s, f.Rule+"/"+f.Severity.String())
	}
	return strings.Join(s, ",")
}

// TestLiteralGateSound: a pattern is never skipped on text it matches. Every
// example of every rule is tried against every pattern with and without the
// literal gate.
func TestLiteralGateSound(t *testing.T) {
	set := loadedRules()
	var texts []string
	for _, r := range Rules() {
		texts = append(texts, r.Match...)
		texts = append(texts, r.NoMatch...)
	}
	var nt normText
	marks := make([]bool, set.nmarks)
	gated := 0
	for _, s := range texts {
		normalize(s, &nt, false)
		clear(marks)
		set.pre.candidates(nt.lower, marks, nil, nil)
		for _, r := range set.text {
			for pi, lre := range r.patterns {
				if len(r.gates[pi]) == 0 {
					continue
				}
				re := lre.get()
				gated++
				target := nt.lower
				if r.On == "cased" {
					target = nt.norm
				}
				if re.Match(target) && !allMarked(marks, r.gates[pi]) {
					t.Errorf("%s pattern %d matches %q but not all its literal sets %v were seen", r.ID, pi, s, requiredLiteralSets(re.String()))
				}
				if re.Match(target) && !r.nearIn(pi, target) {
					t.Errorf("%s pattern %d matches %q but lacks a character of its punctuation sets %q", r.ID, pi, s, r.near[pi])
				}
			}
		}
	}
	if gated == 0 {
		t.Fatal("no pattern is gated")
	}
}

func TestRequiredLiterals(t *testing.T) {
	for expr, want := range map[string]string{
		`\bbefore\s+calling`:                    "before calling",
		`(?:before|prior)\s+x`:                  "before x,prior x",
		`(?:read|reads)\s+~/\.ssh`:              "read ~/.ssh,reads ~/.ssh",
		`\bid_(?:rsa|dsa)\b`:                    "id_rsa,id_dsa",
		`a?b*`:                                  "",
		`(?P<s>ignore|x*)`:                      "",
		`(?i)SYSTEM\s+OVERRIDE`:                 "system override",
		`send\s+\w+\s+to`:                       "send ",
		`(?:[A-Z]{3,}\s+)+(?:NOTICE|ALERT)\s*:`: "notice:,notice :,alert:,alert :",
		// Characters of other scripts stand in literal sets when the
		// pattern matches them exactly: the text is lowered in ASCII only.
		`for\s+ai\s*[:\x{2013}]\s`: "for ai: ,for ai– ,for ai : ,for ai – ",
		`(?i)caf\x{E9}`:            "",
		`(?i)\x{2014}x`:            "—x",
	} {
		got := strings.Join(requiredLiterals(expr), ",")
		if got != want {
			t.Errorf("%s: got %q, want %q", expr, got, want)
		}
	}
	if got := fmt.Sprint(requiredLiteralSets(`\bsend\s+\w+\s+to\s+(?:http|ftp)://`)); got != "[[send ] [ to http://  to ftp://]]" {
		t.Errorf("sets: %s", got)
	}
}

// TestLiteralGateRandom: on mutated examples, short and joined into long
// texts, scanning with the literal gate and its windows finds exactly what
// scanning without them finds.
func TestLiteralGateRandom(t *testing.T) {
	var texts []string
	for _, r := range Rules() {
		texts = append(texts, r.Match...)
		texts = append(texts, r.NoMatch...)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{" ", ",", ".", "\n", "the ", "user ", "tool ", "http://x.example/?q=", "~/.ssh/id_rsa", "before ", "must ", "send ", "<", ">", "'"}
	for i := 0; i < 1200; i++ {
		s := texts[rng.IntN(len(texts))]
		if i%3 == 0 {
			// Long texts, where patterns run on windows.
			for k := rng.IntN(12) + 4; k > 0; k-- {
				s += " " + texts[rng.IntN(len(texts))]
			}
		}
		for k := rng.IntN(4); k >= 0; k-- {
			at := rng.IntN(len(s) + 1)
			switch rng.IntN(3) {
			case 0:
				s = s[:at] + pieces[rng.IntN(len(pieces))] + s[at:]
			case 1:
				if at < len(s) {
					s = s[:at] + s[at+1:]
				}
			case 2:
				s = s + " " + texts[rng.IntN(len(texts))]
			}
		}
		gated := Text("description", s)
		sc := newScanner()
		sc.noGate = true
		sc.pb = append(sc.pb[:0], "description"...)
		sc.text(s)
		if a, b := ids(gated), ids(sc.result()); a != b {
			t.Fatalf("%q: gated [%s], ungated [%s]", s, a, b)
		}
	}
}

// TestCrossGateSound: the literal sets that turn sentences away from the
// cross-tool patterns never turn away one that matches. Every example of
// every rule is read with its snake_case words standing for tools, as
// checkCrossTool reads sentences.
func TestCrossGateSound(t *testing.T) {
	word := regexp.MustCompile("[`'\"]?[a-z0-9]+(?:_[a-z0-9]+)+[`'\"]?")
	var nt normText
	matched := 0
	for _, r := range Rules() {
		for _, ex := range append(append([]string(nil), r.Match...), r.NoMatch...) {
			normalize(ex, &nt, false)
			low := word.ReplaceAllString(string(nt.lower), "@t")
			for _, sent := range strings.FieldsFunc(low, func(c rune) bool { return c == '\n' || c == '!' || c == '?' }) {
				for _, c := range []crossPatterns{crossToolOrders, crossToolPrefer} {
					for i, re := range c.res {
						if !re.MatchString(sent) {
							continue
						}
						matched++
						if !c.mayMatch(i, sent, atOffsets(sent, nil)) {
							t.Errorf("cross-tool pattern %d matches %q but its literal sets %v turned it away", i, sent, c.gates[i])
						}
					}
				}
			}
		}
	}
	if matched < 3 {
		t.Fatalf("only %d sentences matched a cross-tool pattern: the test reads nothing", matched)
	}
}

// TestCrossGateAsContains: mayMatch, which looks for a set's "@t" strings
// only where the sentence holds "@t", answers as strings.Contains of every
// string of every set would, on the sentences checkCrossTool reads (they
// all hold "@t"): every example of every rule with its snake_case words as
// "@t", and the same with an address like "ops@team.example" in it, whose
// "@t" is the text's own.
func TestCrossGateAsContains(t *testing.T) {
	word := regexp.MustCompile("[`'\"]?[a-z0-9]+(?:_[a-z0-9]+)+[`'\"]?")
	contains := func(c crossPatterns, i int, sent string) bool {
		for _, set := range c.gates[i] {
			found := false
			for _, l := range set {
				found = found || strings.Contains(sent, l)
			}
			if !found {
				return false
			}
		}
		return true
	}
	var nt normText
	n, yes := 0, 0
	for _, r := range Rules() {
		for _, ex := range append(append([]string(nil), r.Match...), r.NoMatch...) {
			normalize(ex, &nt, false)
			low := word.ReplaceAllString(string(nt.lower), "@t")
			for _, sent := range strings.FieldsFunc(low, func(c rune) bool { return c == '\n' || c == '!' || c == '?' }) {
				if !strings.Contains(sent, "@t") {
					continue
				}
				for _, s := range []string{sent, "ops@team.example " + sent, strings.Replace(sent, "@t", "@tis @t", 1)} {
					for _, c := range []crossPatterns{crossToolOrders, crossToolPrefer} {
						for i := range c.res {
							want := contains(c, i, s)
							if got := c.mayMatch(i, s, atOffsets(s, nil)); got != want {
								t.Errorf("cross-tool pattern %d on %q: mayMatch %v, the strings of its sets %v", i, s, got, want)
							}
							n++
							if want {
								yes++
							}
						}
					}
				}
			}
		}
	}
	if yes < 10 || yes == n {
		t.Fatalf("%d of %d sentences held every set: the test tells nothing", yes, n)
	}
	t.Logf("%d of %d sentences held every set", yes, n)
}

// TestAutomatonTables: both table widths (16-bit entries while the states
// fit, 32-bit past that), on the collected heap and outside it (forLife),
// report exactly the keywords that occur, where they end.
func TestAutomatonTables(t *testing.T) {
	for _, forLife := range []bool{false, true} {
		t.Run(fmt.Sprintf("forLife=%v", forLife), func(t *testing.T) { testAutomatonTables(t, forLife) })
	}
}

func testAutomatonTables(t *testing.T, forLife bool) {
	rng := rand.New(rand.NewPCG(3, 4))
	letters := "abcdefgh .:_"
	var words []string
	var outs []int
	for len(words) < 6000 {
		n := 2 + rng.IntN(16)
		b := make([]byte, n)
		for i := range b {
			b[i] = letters[rng.IntN(len(letters))]
		}
		words = append(words, string(b))
		outs = append(outs, markPattern(len(words)-1))
	}
	for _, nw := range []int{300, len(words)} {
		m := newAC(words[:nw], outs[:nw], forLife)
		if wide := m.next == nil; wide != (m.nstate >= hasOut) {
			t.Fatalf("%d states: wide table %v", m.nstate, wide)
		}
		if nw == len(words) && m.next != nil {
			t.Fatalf("%d keywords made only %d states: the wide table is not tested", nw, m.nstate)
		}
		for k := 0; k < 8; k++ {
			b := make([]byte, 2000)
			for i := range b {
				b[i] = letters[rng.IntN(len(letters))]
			}
			marks := make([]bool, 3*nw)
			counts := make([]int32, nw)
			var hits []litHit
			m.candidates(b, marks, &hits, counts)
			got := map[litHit]bool{}
			for _, h := range hits {
				got[h] = true
			}
			want := 0
			for wi, w := range words[:nw] {
				for i := 0; i+len(w) <= len(b); i++ {
					if string(b[i:i+len(w)]) == w {
						want++
						if !got[litHit{gate: int32(wi), end: int32(i + len(w))}] {
							t.Fatalf("%d keywords: %q ending at %d not reported", nw, w, i+len(w))
						}
					}
				}
				if found := strings.Contains(string(b), w); marks[markPattern(wi)] != found {
					t.Fatalf("%d keywords: %q marked %v, occurs %v", nw, w, marks[markPattern(wi)], found)
				}
			}
			if len(hits) != want {
				t.Fatalf("%d keywords: %d hits, want %d", nw, len(hits), want)
			}
		}
	}
}

// TestLifelongTablesOutsideTheHeap: the rules a process loads once keep
// their automaton's tables outside the collected heap (what the collector
// sees live it lets the heap grow to twice), and read-only.
func TestLifelongTablesOutsideTheHeap(t *testing.T) {
	held := func(forLife bool) (uint64, *ruleSet) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		set := compileRules(rules.Files, forLife)
		runtime.GC()
		runtime.ReadMemStats(&after)
		return after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc), set
	}
	onHeap, _ := held(false)
	outside, set := held(true)
	m := set.pre
	tables := uint64(2*len(m.next) + 4*len(m.wide) + 4*(len(m.outAt)+len(m.outs)+len(m.gated)+len(m.setAt)+len(m.sets)))
	t.Logf("heap held by the rules: %d KiB on the heap, %d KiB with the tables outside; tables %d KiB", onHeap>>10, outside>>10, tables>>10)
	if outside+tables*9/10 > onHeap {
		t.Errorf("the lifelong rules hold %d KiB of heap, the others %d KiB: the %d KiB of tables are not outside it", outside>>10, onHeap>>10, tables>>10)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	for name, write := range map[string]func(){
		"table":   func() { m.next[len(m.next)-1] = 1 },
		"outputs": func() { m.outs[0] = 1 },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("writing the lifelong automaton's %s did not fault", name)
				}
			}()
			write()
		}()
	}
	runtime.KeepAlive(set)
}

// TestResultsGatedAsUngated: on long tool results (ordinary prose of the
// seed servers with rule examples set into it at random places), Result
// finds exactly what a scan without the literal gate, its windows and its
// punctuation sets finds: what makes long results cheap loses no finding.
func TestResultsGatedAsUngated(t *testing.T) {
	var examples []string
	for _, r := range Rules() {
		if r.Check == "" && r.In == "" {
			examples = append(examples, r.Match...)
		}
	}
	prose := []byte(gjsonText(t, result64KiB(t)))
	rng := rand.New(rand.NewPCG(5, 6))
	found := 0
	for i := 0; i < 12; i++ {
		at := rng.IntN(len(prose) - 8<<10)
		for at > 0 && prose[at]&0xC0 == 0x80 {
			at--
		}
		end := at + 8<<10
		for end < len(prose) && prose[end]&0xC0 == 0x80 {
			end++
		}
		text := string(prose[at:end])
		for k := 0; k < 3; k++ {
			from := rng.IntN(len(text))
			sp := strings.IndexByte(text[from:], ' ')
			if sp < 0 {
				continue
			}
			cut := from + sp
			text = text[:cut] + " " + examples[rng.IntN(len(examples))] + text[cut:]
		}
		res, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}})
		gated := Result(res)
		sc := newScanner()
		sc.noGate = true
		sc.binary = true
		sc.walkJSON(res, "")
		ungated := sc.result()
		if a, b := findingsKey(gated), findingsKey(ungated); a != b {
			t.Fatalf("result %d: gated\n%s\nungated\n%s", i, a, b)
		}
		found += len(gated)
	}
	t.Logf("%d findings", found)
	if found == 0 {
		t.Fatal("no finding in any result: the test compares nothing")
	}
}

func findingsKey(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "%s %s %s %q\n", f.Rule, f.Severity, f.Path, f.Snippet)
	}
	return b.String()
}

// gjsonText returns the text of the first content block of a result.
func gjsonText(t testing.TB, res json.RawMessage) string {
	var v struct {
		Content []struct{ Text string }
	}
	if err := json.Unmarshal(res, &v); err != nil || len(v.Content) == 0 {
		t.Fatalf("result: %v", err)
	}
	return v.Content[0].Text
}

// TestVisitsAsCandidates: the long-text walk (parts at once, marks set once
// per state, hits expanded afterwards for the sets needed) reports the same
// marks and, for every needed literal set, the same hits in the same order
// as candidates, on texts around the length where it starts to split them.
func TestVisitsAsCandidates(t *testing.T) {
	set := loadedRules()
	m := set.pre
	prose := []byte(gjsonText(t, result64KiB(t)))
	var nt normText
	normalize(string(prose), &nt, false)
	rng := rand.New(rand.NewPCG(9, 10))
	reached := m.reachedStates()
	all := make([]bool, set.npat)
	for i := range all {
		all[i] = true
	}
	for k := 0; k < 60; k++ {
		n := 4000 + rng.IntN(200)
		switch k % 4 {
		case 0:
			n = rng.IntN(len(nt.lower))
		case 2:
			n = 16<<10 + rng.IntN(64) // eight parts of 2 KiB
		}
		at := rng.IntN(len(nt.lower) - n + 1)
		s := nt.lower[at : at+n]
		want, got := make([]bool, set.nmarks), make([]bool, set.nmarks)
		wc, gc := make([]int32, set.npat), make([]int32, set.npat)
		var allHits, wantHits []litHit
		m.candidates(s, want, &allHits, make([]int32, set.npat))
		// Half the sets needed, or all of them.
		need := all
		if k%2 == 1 {
			need = make([]bool, set.npat)
			for g := range need {
				need[g] = rng.IntN(2) == 0
			}
		}
		for _, h := range allHits {
			if need[h.gate] {
				wantHits = append(wantHits, h)
				wc[h.gate]++
			}
		}
		var wb walkBufs
		vs, total := m.visits(s, got, reached, uint32(k+1), nil, &wb)
		gotHits := m.hitsFor(vs, need, nil, gc, &wb)
		if total != len(allHits) {
			t.Fatalf("%d bytes: visits count %d hits, candidates %d", n, total, len(allHits))
		}
		if fmt.Sprint(want) != fmt.Sprint(got) || fmt.Sprint(wantHits) != fmt.Sprint(gotHits) || fmt.Sprint(wc) != fmt.Sprint(gc) {
			t.Fatalf("%d bytes at %d: visits and candidates differ", n, at)
		}
	}
}

// TestPatternsCompile: every rule's patterns and unless patterns compile
// (loading only parses them, and a scan compiles one the first time it runs
// it), and what loading read from the parse is what the compiled pattern
// says: the snippet's group.
func TestPatternsCompile(t *testing.T) {
	n := 0
	for _, r := range Rules() {
		for pi, p := range r.patterns {
			re, err := regexp.Compile(p.src)
			if err != nil {
				t.Fatalf("%s pattern %d: %v", r.ID, pi, err)
			}
			if got, want := r.snip[pi], re.SubexpIndex("s"); got != want {
				t.Errorf("%s pattern %d: snippet group %d, compiled %d", r.ID, pi, got, want)
			}
			if p.get().String() != p.src {
				t.Errorf("%s pattern %d: compiled %q from %q", r.ID, pi, p.get(), p.src)
			}
			n++
		}
		for ui, u := range r.unless {
			if _, err := regexp.Compile(u.src); err != nil {
				t.Fatalf("%s unless %d: %v", r.ID, ui, err)
			}
			n++
		}
	}
	if n < 300 {
		t.Fatalf("only %d patterns", n)
	}
}

// TestPatternCompiledOnce: scans that run a pattern first at the same time
// share one compiled program (each compiling its own would hold the memory
// the lazy compile saves, and race on the pointer).
func TestPatternCompiledOnce(t *testing.T) {
	set := compileRules(rules.Files, false) // its patterns not compiled yet
	var pats []*lazyRE
	for _, r := range set.rules {
		pats = append(pats, r.patterns...)
	}
	const workers = 8
	got := make([][]*regexp.Regexp, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, p := range pats {
				got[w] = append(got[w], p.get())
			}
		}()
	}
	wg.Wait()
	for w := 1; w < workers; w++ {
		for i := range pats {
			if got[w][i] != got[0][i] {
				t.Fatalf("pattern %q compiled more than once", pats[i].src)
			}
		}
	}
}

// TestWindowsAsPlain: the windows a pattern reads around the hits of its
// rarest set, taken with window's cursors (one per pattern, hits in text
// order), are those of counting the characters out and searching every
// other set's hits afresh at each hit, on long texts of prose with rule
// examples, characters outside ASCII and upper case set in at random.
func TestWindowsAsPlain(t *testing.T) {
	set := loadedRules()
	var examples []string
	for _, r := range Rules() {
		examples = append(examples, r.Match...)
	}
	odd := []string{"é", "—", "о", "ﬁ", "\u200b", "ＩＧＮＯＲＥ", "\n", "  "}
	prose := []byte(gjsonText(t, result64KiB(t)))
	rng := rand.New(rand.NewPCG(17, 18))
	sc := newScanner()
	sc.more = new(walkBufs)
	all := make([]bool, set.npat)
	for i := range all {
		all[i] = true
	}
	windows, read := 0, 0
	for i := 0; i < 40; i++ {
		n := 1<<10 + rng.IntN(12<<10)
		at := rng.IntN(len(prose) - n)
		text := string(prose[at : at+n])
		for k := rng.IntN(30); k > 0; k-- {
			cut := rng.IntN(len(text))
			bit := examples[rng.IntN(len(examples))]
			if rng.IntN(2) == 0 {
				bit = odd[rng.IntN(len(odd))]
			}
			text = text[:cut] + " " + bit + " " + text[cut:]
		}
		if i%4 == 0 {
			text = strings.Repeat("é", rng.IntN(maxWide)) + text // many bytes outside ASCII, or past the index
		}
		nt := &sc.nt
		normalize(text, nt, false)
		s := nt.lower
		marks := make([]bool, set.nmarks)
		counts := make([]int32, set.npat)
		vs, _ := set.pre.visits(s, marks, sc.seenState(set), sc.epoch, nil, sc.more)
		sc.hits = set.pre.hitsFor(vs, all, sc.hits[:0], counts, sc.more)
		sc.counts = counts
		sc.bucketHits(set.npat)
		near := &sc.byGate
		near.ascii = &nt.ascii
		plain := &hitIndex{start: near.start, ends: near.ends, ascii: &asciiIndex{}}
		for _, r := range set.text {
			for pi := range r.patterns {
				gates := r.gates[pi]
				if len(gates) == 0 || !allMarked(marks, gates) {
					continue
				}
				before, after := set.before, set.after
				for _, g := range gates {
					var cur winCursor
					for _, end := range near.of(g) {
						a, b, ok := r.window(pi, s, g, gates, near, before[g], after[g], int(end), &cur)
						wa := windowStart(s, backChars(s, int(end), before[g], plain.ascii), r.lineStart[pi])
						wb := forwardChars(s, int(end), after[g], plain.ascii)
						wok := plain.allWithin(gates, g, wa, wb) && r.nearIn(pi, s[wa:wb])
						if ok != wok || ok && (a != wa || b != wb) {
							t.Fatalf("%s pattern %d, set %d, hit ending at %d: window %d,%d %v; plain %d,%d %v", r.ID, pi, g, end, a, b, ok, wa, wb, wok)
						}
						windows++
						if ok {
							read++
						}
					}
				}
			}
		}
	}
	t.Logf("%d windows, %d read", windows, read)
	if read == 0 {
		t.Fatal("no window read: the test compares nothing")
	}
}

// TestLongGapRead: a pattern whose gap can hold any number of words reads
// the whole of a long text, not windows sized for a gap of 32 characters:
// a hidden tag closed 400 characters after it opened is found.
func TestLongGapRead(t *testing.T) {
	filler := strings.Repeat("This text is ordinary and long. ", 12)
	for _, s := range []string{
		"Returns data. <secret>" + filler + "</secret> done.",
		"Returns data. <admin>" + filler + "</admin>" + filler,
		filler + "<mandatory>" + filler + "</mandatory>",
	} {
		if fs := Text("description", s); !has(fs, "hidden-tag") {
			t.Errorf("a hidden tag around %d characters in a %d-character text: %s", len(filler), len(s), ids(fs))
		}
	}
}
