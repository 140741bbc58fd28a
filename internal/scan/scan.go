package scan

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// Bounds that keep a scan linear in its input, whatever a server sends.
// What lies beyond one is never skipped in silence: it is itself a finding
// (rule unscanned-text), once per bound and item.
const (
	maxDepth       = 128     // JSON nesting followed, the pins' own limit (pin.MaxDepth)
	maxStrings     = 20000   // strings scanned per item
	maxStringBytes = 1 << 20 // bytes of one string scanned
	maxSiblings    = 2000    // other tools considered by the cross-tool check
)

// Item scans one definition the model will read: kind is "tool", "prompt",
// "resource", "resourceTemplate" or "instructions" (item is then a JSON
// string). siblings are the other definitions of the same list (and of other
// caged servers), used to notice a description that talks about another tool.
// Every string of the item is scanned with its JSON path: name, title,
// description, every nested string and property name of inputSchema and
// outputSchema, annotations, arguments. Findings come sorted by path, then
// severity (highest first).
func Item(kind string, item json.RawMessage, siblings []json.RawMessage) []Finding {
	sc := newScanner()
	sc.self, sc.item = itemName(item), item
	sc.selfLow = strings.ToLower(sc.self)
	sc.defn = true
	for _, s := range siblings {
		if len(sc.siblings) >= maxSiblings {
			break
		}
		sc.addSibling(itemName(s))
	}
	if kind == "instructions" {
		var s string
		if json.Unmarshal(item, &s) == nil {
			sc.pb = append(sc.pb[:0], "instructions"...)
			sc.text(s)
			return sc.result()
		}
	}
	sc.walkJSON(item, "")
	return sc.result()
}

// Tools scans every tool of a list, each against all the others, and returns
// the findings of tools[i] at index i.
func Tools(tools []json.RawMessage) [][]Finding { return ToolsAmong(tools, nil) }

// ToolsAmong is Tools where others are tools of other servers (the caged
// ones): a description that gives orders about one of them is reported too.
func ToolsAmong(tools, others []json.RawMessage) [][]Finding {
	return ToolsFrom(Origin{}, tools, others)
}

// ToolsFrom is ToolsAmong for the tools of a server whose origin is known:
// a tool named like a well-known tool of another server is reported too
// (rules/impersonation.json).
func ToolsFrom(origin Origin, tools, others []json.RawMessage) [][]Finding {
	sc := getScanner()
	defer putScanner(sc)
	return sc.toolsFrom(origin, tools, others)
}

// Set is a set of rules read from files other than the embedded ones:
// corpusbench measures the rules of an earlier commit beside today's with
// it. Sessions use the embedded rules (ToolsFrom).
type Set struct{ set *ruleSet }

// Compile reads and compiles the rule files (*.json) of fsys. Rules of an
// earlier commit may lack a built-in check added since: that check then
// reports nothing (the embedded rules must use every one).
func Compile(fsys fs.FS) (*Set, error) {
	set := compileRules(fsys, false)
	if set.loadErr != nil {
		return nil, set.loadErr
	}
	return &Set{set}, nil
}

// ToolsFrom is the package's ToolsFrom with the rules of s.
func (s *Set) ToolsFrom(origin Origin, tools, others []json.RawMessage) [][]Finding {
	return newScannerWith(s.set).toolsFrom(origin, tools, others)
}

// Result is the package's Result with the rules of s.
func (s *Set) Result(result json.RawMessage) []Finding {
	return newScannerWith(s.set).message(result, "")
}

func (sc *scanner) toolsFrom(origin Origin, tools, others []json.RawMessage) [][]Finding {
	names := make([]string, len(tools))
	var nr nameReader
	for i, t := range tools {
		names[i] = nr.name(t)
	}
	all := &scanner{} // holds only the names
	for _, n := range names {
		if len(all.siblings) >= maxSiblings {
			break
		}
		all.addSibling(n)
	}
	for _, o := range others {
		if len(all.siblings) >= maxSiblings {
			break
		}
		all.addOther(nr.name(o))
	}
	out := make([][]Finding, len(tools))
	for i, t := range tools {
		sc.reset()
		sc.self, sc.item = names[i], t
		sc.selfLow = strings.ToLower(sc.self)
		sc.defn = true
		sc.siblings = all.siblings
		sc.sibShape = all.sibShape
		sc.walkJSON(t, "")
		sc.checkName(names[i], origin)
		out[i] = sc.result()
	}
	return out
}

// Text scans one string that the model will read, reported under path.
func Text(path, s string) []Finding {
	sc := newScanner()
	sc.pb = append(sc.pb[:0], path...)
	sc.text(s)
	return sc.result()
}

// Result scans a tools/call (prompts/get, resources/read) result: every
// string and member name at any depth, content blocks, structuredContent
// and all. Only binary data is not read: a base64 "data" of a content block
// of type image or audio, and a base64 "blob" of resource contents (an
// object with a "uri"); a "data" or "blob" anywhere else is text.
func Result(result json.RawMessage) []Finding {
	return scanMessage(result, "")
}

// Error scans a JSON-RPC error a server answered with: clients hand its
// message and data to the model as the failure of what it asked for.
func Error(message string, data json.RawMessage) []Finding {
	sc := getScanner()
	defer putScanner(sc)
	sc.binary = true
	sc.pb = append(sc.pb[:0], "error.message"...)
	sc.text(message)
	if len(data) > 0 {
		sc.walkJSON(data, "error.data")
	}
	return sc.result()
}

// Params scans the params of a request or notification the server sends
// (sampling/createMessage, elicitation/create, notifications/message,
// notifications/progress), under the path "params", binary data as Result
// leaves it.
func Params(params json.RawMessage) []Finding {
	return scanMessage(params, "params")
}

func scanMessage(b json.RawMessage, path string) []Finding {
	// Pooled: the proxy scans every result, and a large one's buffers are
	// most of what a scan allocates.
	sc := getScanner()
	defer putScanner(sc)
	return sc.message(b, path)
}

// message scans a message b reported under path, binary data left out.
func (sc *scanner) message(b json.RawMessage, path string) []Finding {
	sc.binary = true
	sc.walkJSON(b, path)
	return sc.result()
}

// Count returns how many findings have at least severity min.
func Count(fs []Finding, min Severity) int {
	n := 0
	for _, f := range fs {
		if f.Severity >= min {
			n++
		}
	}
	return n
}

// Max returns the highest severity among fs, 0 when fs is empty.
func Max(fs []Finding) Severity {
	var m Severity
	for _, f := range fs {
		if f.Severity > m {
			m = f.Severity
		}
	}
	return m
}

type sibling struct {
	name  string // as the tool names itself
	lower string // normalized, lower case, for matching
	other bool   // a tool of another server, not of the list scanned
}

type scanner struct {
	set      *ruleSet
	self     string
	siblings map[string]sibling // by normalized lower-case name; may include self
	sibShape *sibFilter         // the siblings' names, hashed by shape: most words are no name, and this says so without a map look-up
	binary   bool               // leave out the binary data of content blocks and resource contents
	limits   uint8              // the bounds already reported for this item (limit bits)
	out      []Finding
	order    map[string]int // path -> order first seen, for sorting
	seen     map[[2]string]bool
	spans    map[string][]span // raw spans of findings per path (one string per path)
	pb       []byte            // the JSON path of the string being scanned
	pstr     string            // pb as a string, once needed for the current string
	pok      bool
	nstrings int
	decoded  int      // nesting of encoded-payload rescans
	ident    bool     // the string being scanned is an identifier (a name)
	keepAll  bool     // report findings that another one covers (tests of single rules)
	noGate   bool     // run every pattern of a candidate rule (tests of the literal gate)
	marks    []bool   // what the keyword automaton found in the current string
	hits     []litHit // where required literals end in the current string (long ones)
	counts   []int32  // hits per literal set
	byGate   hitIndex // hits grouped by literal set
	fill     []int32
	leet     []byte // the lower-case text with leet digits read as letters
	nt       normText
	dec      *jsontext.Decoder // reused across items
	str      []byte            // a JSON string being read, unquoted
	visited  []litHit          // states with outputs a long text reached, and where (acMachine.visits)
	more     *walkBufs         // the scratch of visits and hitsFor, made for the first long text
	reached  []uint64          // per state: the epoch of the last text that reached it, and the state's gated outputs (acMachine.reachedStates)
	epoch    uint32
	need     []bool        // per literal set: a pattern that can run needs its hits
	rd       *bytes.Buffer // the message walkJSON reads (the decoder reads it in place)
	defn     bool          // scanning a definition (tool, prompt, resource, instructions): frames run
	selfLow  string        // self in lower case (checkFrames)
	fwords   []frameWord   // checkFrames' scratch
	fsents   []frameSent
	flabels  []frameSent
	item     []byte  // the item being scanned (descWords reads its description for @unrelated)
	descIDs  []int32 // the lexicon's words of the item's name and description, once read (descRead)
	descRead bool
	dnt      normText // descWords' scratch
	dwords   []frameWord
	dnr      nameReader

	// onSentence, when set, is told each sentence checkFrames read and its
	// categories (the measurement of notes/measurements/categories only).
	onSentence func(cat catMask, sent []byte)
}

// scanners keeps the buffers of finished list scans: a proxy scans every
// tools/list it forwards, and the buffers of a long description are most of
// what a scan allocates.
var scanners sync.Pool

func getScanner() *scanner {
	if sc, ok := scanners.Get().(*scanner); ok {
		return sc
	}
	return newScanner()
}

// putScanner keeps sc's buffers and drops everything else, so nothing of one
// scan reaches the next.
func putScanner(sc *scanner) {
	nt := sc.nt
	nt.raw = ""
	if sc.rd != nil {
		*sc.rd = bytes.Buffer{}
	}
	*sc = scanner{set: sc.set, order: sc.order, seen: sc.seen, marks: sc.marks, pb: sc.pb[:0],
		hits: sc.hits[:0], counts: sc.counts, byGate: sc.byGate, fill: sc.fill[:0], leet: sc.leet[:0],
		nt: nt, dec: sc.dec, rd: sc.rd, str: sc.str[:0],
		visited: sc.visited[:0], more: sc.more, reached: sc.reached, epoch: sc.epoch, need: sc.need,
		fwords: sc.fwords[:0], fsents: sc.fsents[:0], flabels: sc.flabels[:0]}
	clear(sc.order)
	clear(sc.seen)
	scanners.Put(sc)
}

func newScanner() *scanner { return newScannerWith(loadedRules()) }

func newScannerWith(set *ruleSet) *scanner {
	return &scanner{set: set, order: map[string]int{}, seen: map[[2]string]bool{}, marks: make([]bool, set.nmarks)}
}

// reset readies the scanner for another item, keeping its buffers.
func (sc *scanner) reset() {
	sc.out = nil
	clear(sc.order)
	clear(sc.seen)
	sc.spans = nil
	sc.nstrings = 0
	sc.limits = 0
	sc.item, sc.descIDs, sc.descRead = nil, sc.descIDs[:0], false
}

// addSibling adds a tool of the list scanned; addOther one of another
// server (a name of both is the list's). They normalize name in sc.nt:
// they are called before sc scans anything.
func (sc *scanner) addSibling(name string) { sc.addName(name, false) }

func (sc *scanner) addOther(name string) { sc.addName(name, true) }

func (sc *scanner) addName(name string, other bool) {
	nt := &sc.nt
	normalize(name, nt, false)
	l := string(bytes.TrimSpace(nt.lower))
	if len(l) < minSibling || strings.IndexFunc(l, func(r rune) bool { return !nameRune(r) }) >= 0 {
		return
	}
	if sc.siblings == nil {
		sc.siblings = map[string]sibling{}
	}
	if had, ok := sc.siblings[l]; ok && !had.other {
		other = false
	}
	sc.siblings[l] = sibling{name: name, lower: l, other: other}
	if sc.sibShape == nil {
		sc.sibShape = new(sibFilter)
	}
	sc.sibShape.add([]byte(l))
}

// sibFilter holds one bit per shape of a sibling's name (its first two
// bytes, last byte and length, hashed): a word whose bit is clear names no
// sibling. With a few hundred names about one word in a hundred that is no
// name gets past it to the map. (A filter on the first byte and the length
// alone let most words of a list of 884 tools through, whose names share
// their first letters.)
type sibFilter [sibBits / 64]uint64

const sibBits = 1 << 15

// sibShapeOf hashes a word of at least minSibling bytes.
func sibShapeOf(w []byte) uint32 {
	n := len(w)
	h := uint32(w[0])*0x9e3779b1 ^ uint32(w[1])*0x85ebca6b ^ uint32(w[n-1])*0xc2b2ae35 ^ uint32(n)*0x27d4eb2f
	return (h ^ h>>15) % sibBits
}

func (f *sibFilter) add(w []byte) {
	h := sibShapeOf(w)
	f[h/64] |= 1 << (h % 64)
}

// mayHold reports whether w can be a sibling's name.
func (f *sibFilter) mayHold(w []byte) bool {
	if len(w) < minSibling {
		return false
	}
	h := sibShapeOf(w)
	return f[h/64]&(1<<(h%64)) != 0
}

// minSibling is the shortest name the cross-tool check follows.
const minSibling = 3

// nameRune: the characters of MCP tool names ([A-Za-z0-9_.-]), lower-cased.
func nameRune(r rune) bool {
	return r == '_' || r == '-' || r == '.' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r >= 'A' && r <= 'Z'
}

// itemName returns the item's top-level "name" string, reading no more of
// the item than it must.
func itemName(item json.RawMessage) string {
	var nr nameReader
	return nr.name(item)
}

// nameReader is itemName for many items, with one decoder: a list's names
// are read before it is scanned, and a decoder per tool was most of what
// the scan of a list of short tools allocated.
type nameReader struct {
	dec  *jsontext.Decoder
	rd   bytes.Reader
	opts []jsontext.Options
}

func (nr *nameReader) name(item json.RawMessage) string { return nr.member(item, "name") }

// member reads the string an item's key holds (the first, when the item
// has it twice), or "".
func (nr *nameReader) member(item json.RawMessage, key string) string {
	nr.rd.Reset(item)
	if nr.dec == nil {
		nr.opts = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}
		nr.dec = jsontext.NewDecoder(&nr.rd, nr.opts...)
	} else {
		nr.dec.Reset(&nr.rd, nr.opts...)
	}
	dec := nr.dec
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return ""
	}
	for dec.PeekKind() == '"' {
		k, err := dec.ReadToken()
		if err != nil {
			return ""
		}
		if k.String() == key {
			if v, err := dec.ReadToken(); err == nil && v.Kind() == '"' {
				return v.String()
			}
			return ""
		}
		if dec.SkipValue() != nil {
			return ""
		}
	}
	return ""
}

func (sc *scanner) result() []Finding {
	sort.SliceStable(sc.out, func(i, j int) bool {
		a, b := sc.out[i], sc.out[j]
		if oa, ob := sc.order[a.Path], sc.order[b.Path]; oa != ob {
			return oa < ob
		}
		return a.Severity > b.Severity
	})
	return sc.out
}

// path is the JSON path of the string being scanned, made into a string
// only when a finding needs it.
func (sc *scanner) path() string {
	if !sc.pok {
		sc.pstr, sc.pok = string(sc.pb), true
		if sc.pstr == "" {
			sc.pstr = "value" // a bare JSON string, not a member of anything
		}
	}
	return sc.pstr
}

func (sc *scanner) add(r *Rule, snippet string) {
	if r == nil {
		return // a built-in check the rules do not use (Compile)
	}
	path := sc.path()
	k := [2]string{r.ID, path}
	if sc.seen[k] {
		return
	}
	sc.seen[k] = true
	if _, ok := sc.order[path]; !ok {
		sc.order[path] = len(sc.order)
	}
	sc.out = append(sc.out, Finding{Rule: r.ID, Category: r.Category, Severity: r.Severity,
		Path: path, Snippet: shorten(untrusted.Line(snippet)), Explanation: r.Explanation})
}

type span struct {
	a, b int
	sev  Severity
	raw  bool // found by a rule on the raw characters
}

// addSpan adds a finding for s[a:b] unless a finding of at least the same
// severity already covers that text: "[SYSTEM OVERRIDE]" is one sign, not
// one per rule that recognizes part of it. Findings about characters and
// findings about words do not hide each other: hidden text is shown and
// what it says is reported.
func (sc *scanner) addSpan(r *Rule, s string, a, b int) {
	if r == nil {
		return // a built-in check the rules do not use (Compile)
	}
	path := sc.path()
	raw := r.On == "raw" || r.Check == "tag-chars" || r.Check == "bidi" || r.Check == "mixed-script"
	for _, sp := range sc.spans[path] {
		if !sc.keepAll && sp.a <= a && b <= sp.b && sp.sev >= r.Severity && sp.raw == raw {
			return
		}
	}
	if sc.spans == nil {
		sc.spans = map[string][]span{}
	}
	sc.spans[path] = append(sc.spans[path], span{a, b, r.Severity, raw})
	sc.add(r, s[a:b])
}

// shorten keeps a snippet to one short line.
func shorten(s string) string {
	const max = 60
	if len([]rune(s)) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-1]) + "…"
}

// nearIn reports whether t holds a character of each of pattern pi's
// punctuation sets (Rule.near): a match inside t would.
func (r *Rule) nearIn(pi int, t []byte) bool {
	for _, chars := range r.near[pi] {
		if !containsAnyByte(t, chars) {
			return false
		}
	}
	return true
}

// containsAnyByte is bytes.ContainsAny for a set of ASCII characters (a
// punctuation set's, one byte each): a vector search for each one reads a
// long text many times faster than ContainsAny's byte-by-byte loop, which
// was 4% of a 64 KiB result's scan on a text without a quote.
func containsAnyByte(t []byte, chars string) bool {
	for i := 0; i < len(chars); i++ {
		if chars[i] >= utf8.RuneSelf {
			return bytes.ContainsAny(t, chars)
		}
	}
	for i := 0; i < len(chars); i++ {
		if bytes.IndexByte(t, chars[i]) >= 0 {
			return true
		}
	}
	return false
}
