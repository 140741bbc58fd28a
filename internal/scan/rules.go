package scan

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"regexp"
	"regexp/syntax"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/mcpcage/mcpcage/rules"
)

// ruleFile is the format of a rules/*.json file (documented in doc.go).
type ruleFile struct {
	Category   string              `json:"category"`
	Rules      []ruleSpec          `json:"rules"`
	KnownTools []knownServer       `json:"known_tools"`
	Lexicon    map[string][]string `json:"lexicon"` // categories of words, for frames (frames.go)
}

type ruleSpec struct {
	ID          string     `json:"id"`
	Severity    string     `json:"severity"`
	Explanation string     `json:"explanation"`
	On          string     `json:"on"` // "lower" (default), "cased" or "raw"
	Check       string     `json:"check"`
	In          string     `json:"in"`     // "schema": only strings inside inputSchema or outputSchema
	Except      []string   `json:"except"` // paths where the rule does not apply, e.g. "instructions"
	Keywords    []string   `json:"keywords"`
	Also        []string   `json:"also"`
	Patterns    []string   `json:"patterns"`
	Unless      []string   `json:"unless"`
	Frame       *frameSpec `json:"frame"`
	Match       []string   `json:"match"`
	NoMatch     []string   `json:"nomatch"`
}

// Rule is one compiled rule.
type Rule struct {
	ID          string
	Category    string
	Severity    Severity
	Explanation string
	On          string
	Check       string
	In          string
	Except      []string // paths where the rule does not apply
	Keywords    []string
	Also        []string // with Keywords: one of these must appear too
	Match       []string // examples that must produce this rule
	NoMatch     []string // examples that must not
	patterns    []*lazyRE
	unless      []*lazyRE
	snip        []int       // per pattern: index of the submatch "s", or 0
	gates       [][]int32   // per pattern: its literal sets' gate numbers (none: it always runs)
	near        [][]string  // per pattern: literal sets of one common punctuation character each, looked for in the text a pattern would read instead of by the automaton
	reach       []int       // per pattern: longest match in bytes (maxMatchLen), for windows
	lineStart   []bool      // per pattern: it has a ^ or \A, so windows start at a line start
	short       []*shortcut // per pattern: how it answers "does it match" (lead.go)
	cased       [][]string  // per pattern of a rule on the cased text: strings in the pattern's case one of which every match holds (casedLiterals), or nil
	frameSpec   *frameSpec
	frame       *frame
}

type ruleSet struct {
	rules  []*Rule
	byID   map[string]*Rule
	text   []*Rule // phrase rules, on normalized text
	raw    []*Rule // rules on raw text
	always []int   // indexes in text of rules without keywords
	pre    *acMachine
	checks map[string]*Rule
	npat   int   // literal sets that gate patterns
	before []int // per literal set: how far a match reaches before a literal's end
	after  []int // and after it
	nmarks int   // size of the marks slice candidates fills
	known  knownTools
	lex    *lexicon
	frames []*Rule // rules on what a sentence is about (frames.go)
	// labelFrames: a frame reads fenced labels (checkFrames finds them)
	labelFrames bool
	loadErr     error
}

// loadGCPercent is the GC target while the rules load (see loadedRules).
const loadGCPercent = 25

var (
	setOnce sync.Once
	theSet  *ruleSet
)

func loadedRules() *ruleSet {
	setOnce.Do(func() {
		// Loading allocates about 36 MB, nearly all of it garbage within
		// a few milliseconds, while what stays grows to 4 MB: with the
		// default GC target the heap doubles past that before each
		// collection, and the pages it took stay in the process's
		// resident set for the whole session (the peak of `mcpcage run`
		// was set here). A low target while loading keeps the heap near
		// what is live; the caller's target comes back after.
		defer debug.SetGCPercent(debug.SetGCPercent(loadGCPercent))
		theSet = compileRules(rules.Files, true)
		if theSet.loadErr != nil {
			// The rules are embedded and tested; a broken rule file is a
			// build defect, not a runtime condition.
			panic("scan: " + theSet.loadErr.Error())
		}
	})
	return theSet
}

// Rules returns every rule, in file order.
func Rules() []*Rule { return loadedRules().rules }

var builtinChecks = map[string]bool{
	"tag-chars": true, "bidi": true, "mixed-script": true, "encoded": true, "encoded-prose": true, "cross-tool": true, "cross-tool-prefer": true,
	"known-name": true, "lookalike-name": true, "scan-limit": true,
}

func parseSeverity(s string) (Severity, error) {
	switch strings.ToLower(s) {
	case "low":
		return Low, nil
	case "medium":
		return Medium, nil
	case "high":
		return High, nil
	}
	return 0, fmt.Errorf("unknown severity %q (want low, medium or high)", s)
}

// ParseSeverity reads "low", "medium" or "high".
func ParseSeverity(s string) (Severity, error) { return parseSeverity(s) }

// compileRules reads the rule files of fsys. forLife says the set lives as
// long as the process (loadedRules): its automaton's tables then go outside
// the collected heap and are never freed (newTable).
func compileRules(fsys fs.FS, forLife bool) *ruleSet {
	set := &ruleSet{byID: map[string]*Rule{}, checks: map[string]*Rule{}, lex: newLexicon()}
	names, err := fs.Glob(fsys, "*.json")
	if err != nil {
		set.loadErr = err
		return set
	}
	sort.Strings(names)
	var kw []string
	var kwRule []int // automaton outputs: see marks
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			set.loadErr = err
			return set
		}
		var f ruleFile
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			set.loadErr = fmt.Errorf("rules/%s: %v", name, err)
			return set
		}
		if err := set.lex.add(f.Lexicon); err != nil {
			set.loadErr = fmt.Errorf("rules/%s: %v", name, err)
			return set
		}
		if f.Category == "" && (len(f.Rules) > 0 || len(f.Lexicon) == 0) {
			set.loadErr = fmt.Errorf("rules/%s: no category", name)
			return set
		}
		if err := set.known.add(f.KnownTools); err != nil {
			set.loadErr = fmt.Errorf("rules/%s: known_tools: %v", name, err)
			return set
		}
		for _, sp := range f.Rules {
			r, err := compileRule(f.Category, sp)
			if err != nil {
				set.loadErr = fmt.Errorf("rules/%s: rule %q: %v", name, sp.ID, err)
				return set
			}
			if set.byID[r.ID] != nil {
				set.loadErr = fmt.Errorf("rules/%s: rule %q defined twice", name, r.ID)
				return set
			}
			set.byID[r.ID] = r
			set.rules = append(set.rules, r)
			switch {
			case r.frameSpec != nil:
				set.frames = append(set.frames, r)
			case r.Check != "":
				if set.checks[r.Check] != nil {
					set.loadErr = fmt.Errorf("rules/%s: check %q used by two rules", name, r.Check)
					return set
				}
				set.checks[r.Check] = r
			case r.On == "raw":
				set.raw = append(set.raw, r)
			default:
				idx := len(set.text)
				set.text = append(set.text, r)
				if len(r.Keywords) == 0 {
					set.always = append(set.always, idx)
				}
				for _, k := range r.Keywords {
					kw = append(kw, k)
					kwRule = append(kwRule, markRule(idx))
				}
				for _, k := range r.Also {
					kw = append(kw, k)
					kwRule = append(kwRule, markAlso(idx))
				}
				for pi, p := range sp.Patterns {
					for _, ls := range literalSets(p) {
						ls.strs = minimalSet(ls.strs)
						if commonGate(ls.strs) {
							if punctSet(ls.strs) {
								r.near[pi] = append(r.near[pi], strings.Join(ls.strs, ""))
							}
							continue
						}
						r.gates[pi] = append(r.gates[pi], int32(set.npat))
						set.before = append(set.before, ls.before)
						set.after = append(set.after, ls.after)
						for _, l := range ls.strs {
							kw = append(kw, l)
							kwRule = append(kwRule, markPattern(set.npat))
						}
						set.npat++
					}
				}
			}
		}
	}
	if err := set.lex.finish(); err != nil {
		set.loadErr = fmt.Errorf("rules: %v", err)
		return set
	}
	for _, r := range set.frames {
		f, err := set.lex.compileFrame(r.frameSpec)
		if err != nil {
			set.loadErr = fmt.Errorf("rule %q: %v", r.ID, err)
			return set
		}
		r.frame = f
		set.labelFrames = set.labelFrames || f.label
	}
	for c := range builtinChecks {
		if set.checks[c] == nil && forLife {
			set.loadErr = fmt.Errorf("no rule uses the built-in check %q", c)
			return set
		}
	}
	set.pre = newAC(kw, kwRule, forLife)
	set.nmarks = 3 * max(len(set.text), set.npat)
	return set
}

// commonGate reports a literal set holding a single character that is in
// nearly every description (a space, a letter, a colon, a quote): it never
// keeps a pattern from running, and following it cost the automaton most of
// its time (a window around every space). Without the set, the pattern reads
// the text as its other sets allow, or whole: never less than before. Rare
// characters ("<", "@", "#") still gate.
func commonGate(set []string) bool {
	for _, x := range set {
		if len(x) == 1 && (wordByte(x[0]) || strings.IndexByte(" .,:;!?'\"`-()/", x[0]) >= 0) {
			return true
		}
	}
	return false
}

// punctSet reports a literal set of single punctuation characters (":",
// the three quotes): too common to follow through the automaton, but rare
// enough in the few dozen characters around a pattern's other literals that
// looking for one there (a byte search, no regular expression) turns most
// windows away.
func punctSet(set []string) bool {
	for _, x := range set {
		if len(x) != 1 || wordByte(x[0]) || x[0] == ' ' || x[0] == '\n' {
			return false
		}
	}
	return len(set) > 0
}

// hasAnchor reports a pattern that can look at where a line or the text
// begins.
func hasAnchor(p *syntax.Regexp) bool {
	if p.Op == syntax.OpBeginLine || p.Op == syntax.OpBeginText {
		return true
	}
	for _, sub := range p.Sub {
		if hasAnchor(sub) {
			return true
		}
	}
	return false
}

// lazyRE is a rule's regular expression, compiled the first time a scan
// runs it. Loading the rules only parses them (the one step of
// regexp.Compile that can fail; TestPatternsCompile compiles them all): the
// automaton keeps most patterns of a session from ever
// running, and their compiled programs were half of what the loaded rules
// held (5 of 10 MB) and a quarter of what loading allocated.
type lazyRE struct {
	src  string
	once sync.Once
	re   *regexp.Regexp
}

func (l *lazyRE) get() *regexp.Regexp {
	l.once.Do(func() { l.re = regexp.MustCompile(l.src) })
	return l.re
}

// minimalSet drops the strings that contain another string of the set:
// wherever the longer one occurs, the shorter one does too, so it adds
// nothing to the gate but outputs for the automaton to report.
func minimalSet(set []string) []string {
	out := make([]string, 0, len(set))
	for i, x := range set {
		covered := false
		for j, y := range set {
			if i != j && len(y) <= len(x) && strings.Contains(x, y) && (len(y) < len(x) || j < i) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, x)
		}
	}
	return out
}

var ruleID = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

func compileRule(category string, sp ruleSpec) (*Rule, error) {
	if !ruleID.MatchString(sp.ID) {
		return nil, fmt.Errorf("id must be lower-case words joined by '-'")
	}
	sev, err := parseSeverity(sp.Severity)
	if err != nil {
		return nil, err
	}
	if sp.Explanation == "" || strings.Contains(sp.Explanation, "\n") {
		return nil, fmt.Errorf("needs a one-line explanation")
	}
	if len(sp.Match) == 0 || len(sp.NoMatch) == 0 {
		return nil, fmt.Errorf("needs examples that must match and must not match")
	}
	r := &Rule{ID: sp.ID, Category: category, Severity: sev, Explanation: sp.Explanation,
		On: sp.On, Check: sp.Check, In: sp.In, Except: sp.Except, Match: sp.Match, NoMatch: sp.NoMatch}
	if r.In != "" && r.In != "schema" {
		return nil, fmt.Errorf(`in must be "schema" or absent`)
	}
	switch r.On {
	case "":
		r.On = "lower"
	case "lower", "cased", "raw":
	default:
		return nil, fmt.Errorf("on must be lower, cased or raw")
	}
	if sp.Frame != nil {
		if r.Check != "" || len(sp.Patterns) > 0 || len(sp.Keywords) > 0 || len(sp.Unless) > 0 || r.On != "lower" {
			return nil, fmt.Errorf("a frame rule has no check, patterns, keywords, unless or on")
		}
		r.frameSpec = sp.Frame
		return r, nil
	}
	if r.Check != "" {
		if !builtinChecks[r.Check] {
			return nil, fmt.Errorf("unknown check %q", r.Check)
		}
		if len(sp.Patterns) > 0 || len(sp.Keywords) > 0 {
			return nil, fmt.Errorf("a check rule has no patterns or keywords")
		}
		return r, nil
	}
	if len(sp.Patterns) == 0 {
		return nil, fmt.Errorf("no patterns")
	}
	for _, k := range sp.Keywords {
		if k == "" || k != strings.ToLower(k) {
			return nil, fmt.Errorf("keyword %q must be non-empty lower case", k)
		}
		r.Keywords = append(r.Keywords, k)
	}
	for _, k := range sp.Also {
		if k == "" || k != strings.ToLower(k) {
			return nil, fmt.Errorf("also-keyword %q must be non-empty lower case", k)
		}
		r.Also = append(r.Also, k)
	}
	if len(r.Also) > 0 && len(r.Keywords) == 0 {
		return nil, fmt.Errorf("also needs keywords")
	}
	if r.On == "raw" && (len(r.Keywords) > 0 || len(sp.Unless) > 0) {
		return nil, fmt.Errorf("raw rules have no keywords and no unless")
	}
	for _, p := range sp.Patterns {
		re, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			return nil, err
		}
		r.patterns = append(r.patterns, &lazyRE{src: p})
		r.snip = append(r.snip, slices.Index(re.CapNames(), "s"))
		r.gates = append(r.gates, nil)
		r.near = append(r.near, nil)
		r.reach = append(r.reach, maxMatchLen(p))
		r.lineStart = append(r.lineStart, hasAnchor(re))
		r.short = append(r.short, &shortcut{src: p})
		var cased []string
		if r.On == "cased" {
			cased = casedLiterals(re.Simplify())
		}
		r.cased = append(r.cased, cased)
	}
	for _, p := range sp.Unless {
		if _, err := syntax.Parse(p, syntax.Perl); err != nil {
			return nil, err
		}
		r.unless = append(r.unless, &lazyRE{src: p})
	}
	return r, nil
}

// acMachine is an Aho-Corasick automaton over the rules' keywords and the
// patterns' required literals: one pass over a string tells which rules and
// patterns can match, so the regular expressions of the others never run.
// This is what keeps the whole set fast. Bytes that occur in no keyword
// share one class, which keeps the table small. The pass reads one table
// entry per byte: states are numbered breadth-first, so the shallow states
// ordinary text stays in share a few cache lines, and an entry's sign bit
// says whether the state it leads to reports anything, so the outputs are
// only looked at where a keyword ends.
type acMachine struct {
	class   [256]uint8 // byte -> column; 0 for bytes in no keyword
	ncls    int
	next    []uint16 // state*ncls + class -> state, | hasOut when it has outputs
	wide    []int32  // the same, when there are too many states for next
	outAt   []int32  // outputs of state st: outs[outAt[st]:outAt[st+1]]
	outs    []int32  // marks (see markRule) of the keywords that end at a state
	gated   []int32  // per state: how many of its outputs are literals of gated patterns
	setAt   []int32  // literal sets of state st's gated outputs: sets[setAt[st]:setAt[st+1]]
	sets    []int32  // (markPattern's j of those outputs, in their order in outs)
	maxWord int      // the longest keyword, in bytes
	nstate  int
}

// hasOut is the top bit of a table entry. Entries are 16 bits while the
// states fit (halving the table keeps its busy rows in cache), 32 past that.
const (
	hasOut    = 1 << 15
	hasOutBig = -1 << 31
)

func newAC(words []string, outputs []int, forLife bool) *acMachine {
	m := &acMachine{ncls: 1}
	for _, w := range words {
		m.maxWord = max(m.maxWord, len(w))
		for k := 0; k < len(w); k++ {
			if m.class[w[k]] == 0 {
				m.class[w[k]] = uint8(m.ncls)
				m.ncls++
			}
		}
	}
	// A newline reads as a space: literal sets then need no newline
	// variants (normalized text has one separator between words).
	m.class['\n'] = m.class[' ']
	// The trie first, as lists: each state's children in class order (the
	// breadth-first numbering below follows it) and its own outputs in
	// keyword order. That is a few int32 per state; the dense table is then
	// made once, at its final size and width, and filled in place. (A map
	// of edges and a full int32 table beside the final one were most of
	// what loading the rules held at its peak.)
	t := acTrie{child: []int32{-1}, sibling: []int32{-1}, cls: []uint8{0}, own: []int32{-1}, ownLast: []int32{-1}}
	ownNext := make([]int32, len(words)) // the next output of the same state, -1 at the end
	for wi, w := range words {
		st := int32(0)
		for k := 0; k < len(w); k++ {
			st = t.step(st, m.class[w[k]])
		}
		t.addOutput(st, int32(wi), outputs, ownNext)
	}
	// Breadth-first order; the states are numbered in it, so that the
	// shallow states ordinary text stays in share a few cache lines.
	order := make([]int32, 1, len(t.cls))
	for i := 0; i < len(order); i++ {
		for ch := t.child[order[i]]; ch >= 0; ch = t.sibling[ch] {
			order = append(order, ch)
		}
	}
	num := make([]int32, len(order)) // trie state -> its number
	for i, st := range order {
		num[st] = int32(i)
	}
	n, nc := len(order), m.ncls
	m.nstate = n
	var mapped bool
	if n < hasOut {
		m.next, mapped = newTable[uint16](n*nc, forLife)
	} else {
		m.wide, mapped = newTable[int32](n*nc, forLife)
	}
	// entry and target write and read the table of either width.
	entry := func(i, c int, st int32, out bool) {
		if m.next != nil {
			v := uint16(st)
			if out {
				v |= hasOut
			}
			m.next[i*nc+c] = v
		} else {
			v := st
			if out {
				v |= hasOutBig
			}
			m.wide[i*nc+c] = v
		}
	}
	target := func(i, c int) int32 {
		if m.next != nil {
			return int32(m.next[i*nc+c] &^ hasOut)
		}
		return m.wide[i*nc+c] &^ hasOutBig
	}
	// In breadth-first order a state's failure state (the longest proper
	// suffix of its keyword prefix that is a state) comes before it: its row
	// is complete, and the state's row is a copy of it with the state's own
	// children written over. A child's failure state is where the parent's
	// failure state goes on the child's class.
	fail := make([]int32, n)  // by number
	anyOut := make([]bool, n) // by number: the state reports something
	anyOut[0] = t.own[0] >= 0 // (only for an empty keyword)
	m.outAt = make([]int32, 0, n+1)
	for i, st := range order {
		f := int(fail[i])
		if i == 0 {
			for c := 0; c < nc; c++ {
				entry(0, c, 0, anyOut[0])
			}
		} else if m.next != nil {
			copy(m.next[i*nc:(i+1)*nc], m.next[f*nc:(f+1)*nc])
		} else {
			copy(m.wide[i*nc:(i+1)*nc], m.wide[f*nc:(f+1)*nc])
		}
		for ch := t.child[st]; ch >= 0; ch = t.sibling[ch] {
			c, k := int(t.cls[ch]), num[ch]
			if i > 0 {
				fail[k] = target(f, c)
			}
			anyOut[k] = t.own[ch] >= 0 || anyOut[fail[k]]
			entry(i, c, k, anyOut[k])
		}
		// Outputs: the state's own, then its failure state's (complete,
		// as it comes first), each once.
		start := int32(len(m.outs))
		m.outAt = append(m.outAt, start)
		for o := t.own[st]; o >= 0; o = ownNext[o] {
			m.outs = append(m.outs, int32(outputs[o]))
		}
		if i > 0 {
			for _, r := range m.outs[m.outAt[f]:m.outAt[f+1]] {
				if !slices.Contains(m.outs[start:], r) {
					m.outs = append(m.outs, r)
				}
			}
		}
	}
	m.outAt = append(m.outAt, int32(len(m.outs)))
	m.gated = make([]int32, n)
	m.setAt = make([]int32, 0, n+1)
	for st := range m.gated {
		m.setAt = append(m.setAt, int32(len(m.sets)))
		for _, r := range m.outs[m.outAt[st]:m.outAt[st+1]] {
			if r%3 == 2 {
				m.gated[st]++
				m.sets = append(m.sets, r/3)
			}
		}
	}
	m.setAt = append(m.setAt, int32(len(m.sets)))
	if forLife {
		m.moveLists()
	}
	if mapped {
		freezeTable(m.next)
		freezeTable(m.wide)
	}
	return m
}

// newTable makes a table of n entries; for an automaton that lives as long
// as the process, outside the collected heap when it can (tableMem), and
// then never freed.
func newTable[T uint16 | int32](n int, forLife bool) ([]T, bool) {
	if forLife {
		return tableMem[T](n)
	}
	return make([]T, n), false
}

// moveLists moves the outputs and the literal sets into one block from
// tableMem, beside the table (read-only once there, when mapped).
func (m *acMachine) moveLists() {
	lists := []*[]int32{&m.outAt, &m.outs, &m.gated, &m.setAt, &m.sets}
	n := 0
	for _, l := range lists {
		n += len(*l)
	}
	block, mapped := tableMem[int32](n)
	at := 0
	for _, l := range lists {
		k := copy(block[at:], *l)
		*l = block[at : at+k : at+k]
		at += k
	}
	if mapped {
		freezeTable(block)
	}
}

// acTrie is newAC's trie of the keywords: per state, its first child and
// next sibling (children kept in class order), the class of the edge into
// it, and the first and last of its own outputs (keyword indexes, -1 for
// none, chained by newAC's ownNext).
type acTrie struct {
	child, sibling, own, ownLast []int32
	cls                          []uint8
}

// step is the child of st on class c, made if new.
func (t *acTrie) step(st int32, c uint8) int32 {
	prev, ch := int32(-1), t.child[st]
	for ch >= 0 && t.cls[ch] < c {
		prev, ch = ch, t.sibling[ch]
	}
	if ch >= 0 && t.cls[ch] == c {
		return ch
	}
	n := int32(len(t.cls))
	t.child = append(t.child, -1)
	t.sibling = append(t.sibling, ch)
	t.cls = append(t.cls, c)
	t.own = append(t.own, -1)
	t.ownLast = append(t.ownLast, -1)
	if prev < 0 {
		t.child[st] = n
	} else {
		t.sibling[prev] = n
	}
	return n
}

// addOutput gives state st keyword wi's output, unless it has that output.
func (t *acTrie) addOutput(st, wi int32, outputs []int, ownNext []int32) {
	for o := t.own[st]; o >= 0; o = ownNext[o] {
		if outputs[o] == outputs[wi] {
			return
		}
	}
	ownNext[wi] = -1
	if t.ownLast[st] < 0 {
		t.own[st] = wi
	} else {
		ownNext[t.ownLast[st]] = wi
	}
	t.ownLast[st] = wi
}

// reachedStates returns what visits keeps per state, for no text yet:
// the epoch of the last text that reached the state (the high 32 bits,
// 0) and the state's gated outputs (m.gated, the low 32 bits). Both are
// read at every visit; in one word they cost one cache miss, not two.
func (m *acMachine) reachedStates() []uint64 {
	r := make([]uint64, m.nstate)
	for st, g := range m.gated {
		r[st] = uint64(uint32(g))
	}
	return r
}

// visits is candidates for long texts, in two steps: it sets marks as
// candidates does, but a state's outputs only the first time the text
// reaches it (the epoch in seen[st] (reachedStates) is epoch after), and instead of every literal hit it
// records where the text reached a state with outputs (litHit.gate is the
// state). It returns how many literal hits those visits hold; hitsFor then
// expands the visits into the hits of the literal sets that matter.
//
// A text of 4 KiB or more is read as eight parts at once (walks): each step of the
// automaton waits for its table entry, and independent walks wait
// together. A walk but the first starts from the initial state a longest
// keyword before its part, so from the part's start on it is in the state a
// walk from the start of the text would be in (that state's keyword prefix
// is at most a longest keyword long); what it reaches before its part is
// the previous walk's to record. Every step writes a visit and keeps it only
// when the state has outputs: about one byte in four reaches one, at random,
// and a branch on it was mispredicted that often. The parts' visits are
// joined in text order, and the marks and the count are taken from them
// afterwards (the same as taking them step by step: a state's keywords
// occur in the text read).
func (m *acMachine) visits(s []byte, marks []bool, seen []uint64, epoch uint32, vs []litHit, more *walkBufs) ([]litHit, int) {
	nc := uint32(m.ncls)
	next, class := m.next, &m.class
	// walk reads s[i:end] from state st, recording from from on.
	walk := func(st uint32, i, from, end int, vs []litHit) (uint32, []litHit) {
		for ; i < end; i++ {
			v := next[st*nc+uint32(class[s[i]])]
			st = uint32(v &^ hasOut)
			if v&hasOut != 0 && i >= from {
				vs = append(vs, litHit{gate: int32(st), end: int32(i + 1)})
			}
		}
		return st, vs
	}
	start := len(vs)
	if len(s) >= 4096 {
		q, w := len(s)/walks, m.maxWord
		t := &more.block
		for p := range more.parts {
			more.parts[p] = more.parts[p][:0]
		}
		st0 := uint32(0)
		st1, _ := walk(0, 1*q-w, 1*q, 1*q, nil)
		st2, _ := walk(0, 2*q-w, 2*q, 2*q, nil)
		st3, _ := walk(0, 3*q-w, 3*q, 3*q, nil)
		st4, _ := walk(0, 4*q-w, 4*q, 4*q, nil)
		st5, _ := walk(0, 5*q-w, 5*q, 5*q, nil)
		st6, _ := walk(0, 6*q-w, 6*q, 6*q, nil)
		st7, _ := walk(0, 7*q-w, 7*q, 7*q, nil)
		for base := 0; base < q; base += walkBlock {
			n := min(walkBlock, q-base)
			n0, n1, n2, n3, n4, n5, n6, n7 := 0, 0, 0, 0, 0, 0, 0, 0
			for k := 0; k < n; k++ {
				i := base + k
				v0 := next[st0*nc+uint32(class[s[0*q+i]])]
				v1 := next[st1*nc+uint32(class[s[1*q+i]])]
				v2 := next[st2*nc+uint32(class[s[2*q+i]])]
				v3 := next[st3*nc+uint32(class[s[3*q+i]])]
				v4 := next[st4*nc+uint32(class[s[4*q+i]])]
				v5 := next[st5*nc+uint32(class[s[5*q+i]])]
				v6 := next[st6*nc+uint32(class[s[6*q+i]])]
				v7 := next[st7*nc+uint32(class[s[7*q+i]])]
				st0 = uint32(v0 &^ hasOut)
				st1 = uint32(v1 &^ hasOut)
				st2 = uint32(v2 &^ hasOut)
				st3 = uint32(v3 &^ hasOut)
				st4 = uint32(v4 &^ hasOut)
				st5 = uint32(v5 &^ hasOut)
				st6 = uint32(v6 &^ hasOut)
				st7 = uint32(v7 &^ hasOut)
				t[0][n0&(walkBlock-1)] = litHit{gate: int32(st0), end: int32(0*q + i + 1)}
				t[1][n1&(walkBlock-1)] = litHit{gate: int32(st1), end: int32(1*q + i + 1)}
				t[2][n2&(walkBlock-1)] = litHit{gate: int32(st2), end: int32(2*q + i + 1)}
				t[3][n3&(walkBlock-1)] = litHit{gate: int32(st3), end: int32(3*q + i + 1)}
				t[4][n4&(walkBlock-1)] = litHit{gate: int32(st4), end: int32(4*q + i + 1)}
				t[5][n5&(walkBlock-1)] = litHit{gate: int32(st5), end: int32(5*q + i + 1)}
				t[6][n6&(walkBlock-1)] = litHit{gate: int32(st6), end: int32(6*q + i + 1)}
				t[7][n7&(walkBlock-1)] = litHit{gate: int32(st7), end: int32(7*q + i + 1)}
				n0 += int(v0 / hasOut)
				n1 += int(v1 / hasOut)
				n2 += int(v2 / hasOut)
				n3 += int(v3 / hasOut)
				n4 += int(v4 / hasOut)
				n5 += int(v5 / hasOut)
				n6 += int(v6 / hasOut)
				n7 += int(v7 / hasOut)
			}
			vs = append(vs, t[0][:n0]...)
			more.parts[0] = append(more.parts[0], t[1][:n1]...)
			more.parts[1] = append(more.parts[1], t[2][:n2]...)
			more.parts[2] = append(more.parts[2], t[3][:n3]...)
			more.parts[3] = append(more.parts[3], t[4][:n4]...)
			more.parts[4] = append(more.parts[4], t[5][:n5]...)
			more.parts[5] = append(more.parts[5], t[6][:n6]...)
			more.parts[6] = append(more.parts[6], t[7][:n7]...)
		}
		_, more.parts[6] = walk(st7, 8*q, 0, len(s), more.parts[6])
		for _, b := range more.parts {
			vs = append(vs, b...)
		}
	} else {
		_, vs = walk(0, 0, 0, len(s), vs)
	}
	total := 0
	more.distinct = more.distinct[:0]
	for _, v := range vs[start:] {
		st := v.gate
		x := seen[st]
		total += int(uint32(x))
		if uint32(x>>32) != epoch {
			seen[st] = uint64(epoch)<<32 | uint64(uint32(x))
			more.distinct = append(more.distinct, st)
			for _, r := range m.outs[m.outAt[st]:m.outAt[st+1]] {
				marks[r] = true
			}
		}
	}
	return vs, total
}

// walkBlock is how many steps each of visits' walks takes between
// copies of their visits out of walkBufs.block.
const walkBlock = 512

// walkBufs is the scratch of visits and hitsFor: the visits of the parts
// of a text after the first, a block of each walk's steps, the states the
// text reached, and per state the literal sets hitsFor keeps.
type walkBufs struct {
	parts    [walks - 1][]litHit
	block    [walks][walkBlock]litHit
	distinct []int32 // the states visits reached, each once
	pos      []int32 // per state of distinct: where its needed sets are in kept
	kept     []int32 // per state of distinct: how many sets, then the sets
}

const walks = 8

// hitsFor appends to hits, in text order, the literal hits of the sets
// need names among the visits, and counts them per set. The sets of each
// state the text reached are sifted once (wb.distinct, from visits): most
// of the states reached have none that is needed, at random, and a branch
// on that was mispredicted about as often as not. So every visit writes a
// hit and keeps it only when its state has a needed set (a state with none
// has the set 0, not kept); a second set is rare.
func (m *acMachine) hitsFor(vs []litHit, need []bool, hits []litHit, counts []int32, wb *walkBufs) []litHit {
	if len(wb.pos) < m.nstate {
		wb.pos = make([]int32, m.nstate)
	}
	pos := wb.pos
	kept := append(wb.kept[:0], 0, 0) // at 0: no set (then set 0, not kept)
	for _, st := range wb.distinct {
		k := int32(len(kept))
		kept = append(kept, 0)
		for _, g := range m.sets[m.setAt[st]:m.setAt[st+1]] {
			if need[g] {
				kept = append(kept, g)
			}
		}
		if n := int32(len(kept)) - k - 1; n > 0 {
			kept[k], pos[st] = n, k
		} else {
			kept, pos[st] = kept[:k], 0
		}
	}
	wb.kept = kept
	n := len(hits)
	h := slices.Grow(hits, len(vs)+1)
	h = h[:cap(h)]
	for vi, v := range vs {
		k := pos[v.gate]
		c, g := kept[k], kept[k+1]
		one := min(c, 1)
		h[n] = litHit{gate: g, end: v.end}
		n += int(one)
		if c > 1 {
			for _, g := range kept[k+2 : k+1+c] {
				if n == len(h) {
					h = slices.Grow(h[:n], len(vs)-vi+1)
					h = h[:cap(h)]
				}
				h[n] = litHit{gate: g, end: v.end}
				n++
			}
			if len(h)-n < len(vs)-vi {
				h = slices.Grow(h[:n], len(vs)-vi)
				h = h[:cap(h)]
			}
		}
	}
	// Counted afterwards: counting set 0 by 0 at every visit without one
	// made each visit wait for the last one's store.
	for _, x := range h[len(hits):n] {
		counts[x.gate]++
	}
	return h[:n]
}

// The automaton's outputs are marks in one slice: "a keyword of phrase
// rule i", "an also-keyword of rule i", "a required literal of gated
// pattern j", interleaved so one slice of 3*max(rules, patterns) holds all.
func markRule(i int) int    { return 3 * i }
func markAlso(i int) int    { return 3*i + 1 }
func markPattern(j int) int { return 3*j + 2 }

// candidates sets marks[k] for every output k of a keyword found in s. With
// hits not nil, it also records where the required literals of gated
// patterns end, for running those patterns only near them in long texts.
func (m *acMachine) candidates(s []byte, marks []bool, hits *[]litHit, counts []int32) {
	if m.next == nil {
		m.candidatesWide(s, marks, hits, counts)
		return
	}
	// The hits are kept in a local slice while the text is read: appending
	// through the pointer would store the slice back to the heap on every
	// literal.
	var h []litHit
	record := hits != nil
	if record {
		h = *hits
	}
	st := uint32(0)
	nc := uint32(m.ncls)
	next, class := m.next, &m.class
	for i := 0; i < len(s); i++ {
		v := next[st*nc+uint32(class[s[i]])]
		st = uint32(v &^ hasOut)
		if v&hasOut == 0 {
			continue
		}
		for _, r := range m.outs[m.outAt[st]:m.outAt[st+1]] {
			marks[r] = true
			if record && r%3 == 2 && len(h) < maxLitHits {
				h = append(h, litHit{gate: r / 3, end: int32(i + 1)})
				counts[r/3]++
			}
		}
	}
	if record {
		*hits = h
	}
}

func (m *acMachine) candidatesWide(s []byte, marks []bool, hits *[]litHit, counts []int32) {
	st := int32(0)
	nc := int32(m.ncls)
	for i := 0; i < len(s); i++ {
		v := m.wide[st*nc+int32(m.class[s[i]])]
		st = v &^ hasOutBig
		if v >= 0 {
			continue
		}
		for _, r := range m.outs[m.outAt[st]:m.outAt[st+1]] {
			marks[r] = true
			if hits != nil && r%3 == 2 && len(*hits) < maxLitHits {
				*hits = append(*hits, litHit{gate: r / 3, end: int32(i + 1)})
				counts[r/3]++
			}
		}
	}
}

// litHit is where a literal of literal set gate ends.
type litHit struct{ gate, end int32 }

// maxLitHits bounds the recorded literal positions of one string; past it,
// patterns run on the whole text.
const maxLitHits = 1 << 17
