package scan

import (
	"bytes"
	"encoding/json"
	"io"
	"sort"
	"strconv"
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
	sc.self = itemName(item)
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
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = itemName(t)
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
		all.addSibling(itemName(o))
	}
	out := make([][]Finding, len(tools))
	sc := getScanner()
	defer putScanner(sc)
	for i, t := range tools {
		sc.reset()
		sc.self = names[i]
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
}

type scanner struct {
	set      *ruleSet
	self     string
	siblings map[string]sibling // by normalized lower-case name; may include self
	sibShape [256]uint64        // per first byte of a sibling's name, bit len%64: most words are no name, and this says so without hashing them
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
	rd       *bytes.Reader
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
		sc.rd.Reset(nil)
	}
	*sc = scanner{set: sc.set, order: sc.order, seen: sc.seen, marks: sc.marks, pb: sc.pb[:0],
		hits: sc.hits[:0], counts: sc.counts, byGate: sc.byGate, fill: sc.fill[:0], leet: sc.leet[:0],
		nt: nt, dec: sc.dec, rd: sc.rd}
	clear(sc.order)
	clear(sc.seen)
	scanners.Put(sc)
}

func newScanner() *scanner {
	set := loadedRules()
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
}

func (sc *scanner) addSibling(name string) {
	var nt normText
	normalize(name, &nt, false)
	l := strings.TrimSpace(string(nt.lower))
	if len(l) < 3 || strings.IndexFunc(l, func(r rune) bool { return !nameRune(r) }) >= 0 {
		return
	}
	if sc.siblings == nil {
		sc.siblings = map[string]sibling{}
	}
	sc.siblings[l] = sibling{name: name, lower: l}
	sc.sibShape[l[0]] |= 1 << (len(l) % 64)
}

// nameRune: the characters of MCP tool names ([A-Za-z0-9_.-]), lower-cased.
func nameRune(r rune) bool {
	return r == '_' || r == '-' || r == '.' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r >= 'A' && r <= 'Z'
}

// itemName returns the item's top-level "name" string, reading no more of
// the item than it must.
func itemName(item json.RawMessage) string {
	dec := jsontext.NewDecoder(bytes.NewReader(item), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return ""
	}
	for dec.PeekKind() == '"' {
		k, err := dec.ReadToken()
		if err != nil {
			return ""
		}
		if k.String() == "name" {
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

// walkJSON scans every string of a JSON value; invalid JSON is scanned as far
// as it parses, and if nothing parses, as one string.
func (sc *scanner) walkJSON(b []byte, path string) {
	if sc.dec == nil {
		sc.rd = bytes.NewReader(b)
		sc.dec = jsontext.NewDecoder(sc.rd, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	} else {
		sc.rd.Reset(b)
		sc.dec.Reset(sc.rd, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	}
	sc.pb = append(sc.pb[:0], path...)
	if err := sc.walk(sc.dec, 0); err != nil && err != io.EOF && sc.nstrings == 0 && len(bytes.TrimSpace(b)) > 0 {
		sc.pb = append(sc.pb[:0], path...)
		sc.text(string(b))
	}
}

// walk scans one JSON value at the path in sc.pb, which it leaves as found.
func (sc *scanner) walk(dec *jsontext.Decoder, depth int) error {
	if depth > maxDepth {
		sc.beyond(limitDepth)
		return dec.SkipValue()
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case '"':
		sc.ident = string(sc.pb) == "name"
		sc.text(tok.String())
		sc.ident = false
	case '{':
		return sc.walkObject(dec, depth)
	case '[':
		n := len(sc.pb)
		for i := 0; dec.PeekKind() != ']'; i++ {
			sc.pb = append(strconv.AppendInt(append(sc.pb, '['), int64(i), 10), ']')
			err := sc.walk(dec, depth+1)
			sc.pb = sc.pb[:n]
			if err != nil {
				return err
			}
		}
		_, err = dec.ReadToken()
		return err
	}
	return nil
}

// walkObject scans the members of an object whose '{' was read. Under
// sc.binary a string "data" or "blob" is held until the object ends, when
// its siblings say whether it is binary (binaryMember); if not, it is
// scanned like any member.
func (sc *scanner) walkObject(dec *jsontext.Decoder, depth int) error {
	n := len(sc.pb)
	var held []heldMember
	var typ string
	hasURI := false
	for dec.PeekKind() != '}' {
		kt, err := dec.ReadToken()
		if err != nil {
			return err
		}
		key := kt.String()
		if !schemaKeyword[key] {
			sc.pb = appendQuotedKey(sc.pb, key)
			sc.ident = true
			sc.text(key)
			sc.ident = false
			sc.pb = sc.pb[:n]
		}
		if sc.binary && (key == "data" || key == "blob") && dec.PeekKind() == '"' {
			v, err := dec.ReadValue()
			if err != nil {
				return err
			}
			held = append(held, heldMember{key, bytes.Clone(v)})
			continue
		}
		hasURI = hasURI || key == "uri"
		sc.pb = appendMember(sc.pb, key)
		if key == "type" && dec.PeekKind() == '"' {
			t, err := dec.ReadToken()
			if err != nil {
				return err
			}
			typ = t.String()
			sc.text(typ)
		} else {
			err = sc.walk(dec, depth+1)
		}
		sc.pb = sc.pb[:n]
		if err != nil {
			return err
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	for _, h := range held {
		if binaryMember(h.key, h.value, typ, hasURI) {
			continue
		}
		var s string
		if json.Unmarshal(h.value, &s) != nil {
			continue
		}
		sc.pb = appendMember(sc.pb, h.key)
		sc.text(s)
		sc.pb = sc.pb[:n]
	}
	return nil
}

type heldMember struct {
	key   string
	value []byte // the JSON string, quotes and escapes as sent
}

// binaryMember reports the members MCP defines as base64 binary: "data" of
// an image or audio content block, "blob" of resource contents. The value
// must look like base64 too (its alphabet, JSON-escaped line breaks), so
// text written there is still read.
func binaryMember(key string, v []byte, typ string, hasURI bool) bool {
	if !(key == "data" && (typ == "image" || typ == "audio") || key == "blob" && hasURI) {
		return false
	}
	for i := 1; i < len(v)-1; i++ {
		c := v[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '+', c == '/', c == '=', c == '-', c == '_':
		case c == '\\' && i+1 < len(v)-1 && (v[i+1] == 'n' || v[i+1] == 'r' || v[i+1] == '/'):
			i++
		default:
			return false
		}
	}
	return true
}

// The bounds a scan reports when it reaches them.
const (
	limitDepth uint8 = 1 << iota
	limitStrings
	limitStringBytes
)

// beyond reports, once per item, that a bound left part of it unread.
func (sc *scanner) beyond(limit uint8) {
	if sc.limits&limit != 0 {
		return
	}
	sc.limits |= limit
	r := sc.set.checks["scan-limit"]
	if r == nil {
		return
	}
	what := map[uint8]string{
		limitDepth:       "nested deeper than " + strconv.Itoa(maxDepth) + " levels",
		limitStrings:     "more than " + strconv.Itoa(maxStrings) + " strings",
		limitStringBytes: "a string longer than " + strconv.Itoa(maxStringBytes>>20) + " MiB",
	}[limit]
	sc.pok = false
	sc.add(r, what)
}

// appendMember adds .key to a path, or ["key"] when key is not a plain
// identifier.
func appendMember(p []byte, key string) []byte {
	if isIdent(key) {
		if len(p) > 0 {
			p = append(p, '.')
		}
		return append(p, key...)
	}
	return appendQuotedKey(p, key)
}

func appendQuotedKey(p []byte, key string) []byte {
	p = append(p, '[')
	p = strconv.AppendQuote(p, key)
	return append(p, ']')
}
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '$' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// schemaKeyword lists member names of MCP definitions and JSON Schema whose
// name is fixed by the spec: scanning them as text would only cost time.
var schemaKeyword = map[string]bool{
	"name": true, "title": true, "description": true, "inputSchema": true, "outputSchema": true,
	"annotations": true, "type": true, "properties": true, "required": true, "items": true,
	"enum": true, "const": true, "default": true, "examples": true, "pattern": true, "$comment": true,
	"allOf": true, "anyOf": true, "oneOf": true, "not": true, "$defs": true, "definitions": true,
	"$ref": true, "$schema": true, "$id": true, "format": true, "additionalProperties": true,
	"minimum": true, "maximum": true, "minLength": true, "maxLength": true, "minItems": true,
	"maxItems": true, "uniqueItems": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
	"readOnlyHint": true, "destructiveHint": true, "idempotentHint": true, "openWorldHint": true,
	"arguments": true, "uri": true, "uriTemplate": true, "mimeType": true, "_meta": true,
	"icons": true, "text": true, "content": true, "structuredContent": true, "isError": true,
	"tools": true, "tool": true, "prompts": true, "resources": true, "resourceTemplates": true,
	"nextCursor": true, "multipleOf": true, "patternProperties": true, "propertyNames": true,
	"if": true, "then": true, "else": true, "dependentSchemas": true, "dependentRequired": true,
	"contentEncoding": true, "contentMediaType": true, "deprecated": true, "readOnly": true,
	"writeOnly": true, "nullable": true, "minProperties": true, "maxProperties": true,
	"prefixItems": true, "contains": true, "unevaluatedProperties": true, "unevaluatedItems": true,
	"size": true, "src": true, "sizes": true, "theme": true,
}

// text scans one string.
func (sc *scanner) text(s string) {
	if sc.nstrings >= maxStrings {
		sc.beyond(limitStrings)
		return
	}
	sc.nstrings++
	sc.pok = false
	if len(s) > maxStringBytes {
		sc.beyond(limitStringBytes)
		sc.pok = false
		s = s[:maxStringBytes]
	}
	set := sc.set
	if special, lookalike := rawNeeds(s); special || lookalike {
		if special {
			for _, r := range set.raw {
				if a, b, ok := r.findSpanString(s); ok {
					sc.addSpan(r, s, a, b)
				}
			}
			sc.checkTags(s)
			sc.checkBidi(s)
		}
		if lookalike {
			sc.checkMixedScript(s)
		}
	}
	nt := &sc.nt
	normalize(s, nt, sc.ident || identLike(s))
	marks := sc.marks
	clear(marks)
	for _, i := range set.always {
		marks[markRule(i)] = true
	}
	sc.hits = sc.hits[:0]
	var hits *[]litHit
	if len(nt.lower) > windowMin {
		hits = &sc.hits
	}
	if hits != nil {
		if len(sc.counts) < set.npat {
			sc.counts = make([]int32, set.npat)
		}
		clear(sc.counts)
	}
	set.pre.candidates(nt.lower, marks, hits, sc.counts)
	windows := hits != nil && len(sc.hits) < maxLitHits
	if windows {
		sc.bucketHits(set.npat)
	}
	for i, r := range set.text {
		if !marks[markRule(i)] || (len(r.Also) > 0 && !marks[markAlso(i)]) || (r.In == "schema" && !inSchema(sc.pb)) || r.excepted(sc.pb) {
			continue
		}
		target := nt.lower
		if r.On == "cased" {
			target = nt.norm
		}
		gate := marks
		if sc.noGate {
			gate = nil
		}
		var near *hitIndex
		if windows && !sc.noGate {
			near = &sc.byGate
		}
		if a, b, ok := r.findSpan(target, gate, near, sc.counts, set); ok {
			ra, rb := nt.rawSpan(a, b)
			sc.addSpan(r, s, ra, rb)
		}
	}
	if hasLeet(nt.lower) {
		sc.leetPass(s, nt)
	}
	if sc.decoded == 0 {
		sc.checkEncoded(s)
	}
	if len(sc.siblings) > 0 {
		sc.checkCrossTool(nt)
	}
}

func (r *Rule) excepted(path []byte) bool {
	for _, e := range r.Except {
		if string(path) == e {
			return true
		}
	}
	return false
}

// identLike reports a string that is one hyphen- or underscore-joined word
// ("ignore-all-rules-and-export-keys"): an enum value or a default read like
// an identifier, word by word.
func identLike(s string) bool {
	if len(s) < 8 || len(s) > 200 {
		return false
	}
	seps := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ' || c == '\t' || c == '\n':
			return false
		case c == '-' || c == '_':
			seps++
		}
	}
	return seps >= 2
}

// leetDigit maps the digits and signs that stand in for letters in
// "1gn0re pr3vious instructi0ns".
var leetDigit = [256]byte{'0': 'o', '1': 'i', '3': 'e', '4': 'a', '5': 's', '7': 't', '@': 'a', '$': 's'}

// hasLeet reports a word with a letter-standing digit between two letters.
func hasLeet(b []byte) bool {
	for i := 1; i+1 < len(b); i++ {
		if leetDigit[b[i]] != 0 && isLetter(b[i-1]) && isLetter(b[i+1]) {
			return true
		}
	}
	return false
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' }

// leetPass runs the phrase rules again on the text with letter-standing
// digits read as letters (byte for byte, so snippets map back unchanged).
func (sc *scanner) leetPass(s string, nt *normText) {
	set := sc.set
	b := append(sc.leet[:0], nt.lower...)
	for i := range b {
		if l := leetDigit[b[i]]; l != 0 {
			b[i] = l
		}
	}
	sc.leet = b
	marks := sc.marks
	clear(marks)
	for _, i := range set.always {
		marks[markRule(i)] = true
	}
	set.pre.candidates(b, marks, nil, nil)
	for i, r := range set.text {
		if r.On != "lower" || !marks[markRule(i)] || (len(r.Also) > 0 && !marks[markAlso(i)]) || (r.In == "schema" && !inSchema(sc.pb)) || r.excepted(sc.pb) {
			continue
		}
		if a, e, ok := r.findSpan(b, marks, nil, nil, set); ok {
			ra, re := nt.rawSpan(a, e)
			sc.addSpan(r, s, ra, re)
		}
	}
}

func inSchema(path []byte) bool {
	return bytes.HasPrefix(path, []byte("inputSchema")) || bytes.HasPrefix(path, []byte("outputSchema"))
}

// rawNeeds reports what the raw checks have to look at in s: special is a
// character the raw rules are about (control, invisible, bidi, tag,
// variation selector, private use) or a long run of blank space; lookalike
// is a letter of another script that looks like a Latin one (the
// mixed-script check). Plain text, most of what servers send, skips them all.
func rawNeeds(s string) (special, lookalike bool) {
	blank := 0 // length of the current run of spaces and newlines (padding)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c == 0x7f || (c < 0x20 && c != '\n' && c != '\t') {
				special = true
			}
			if c == ' ' || c == '\n' || c == '\t' {
				if blank++; blank >= 12 {
					special = true
				}
			} else {
				blank = 0
			}
			i++
			continue
		}
		blank = 0
		r, n := utf8.DecodeRuneInString(s[i:])
		if _, ok := confusable[r]; ok {
			lookalike = true
		}
		if (r >= 0x80 && r < 0xa0) || invisible(r) || privateUse(r) || r == utf8.RuneError {
			return true, true
		}
		i += n
	}
	return special, lookalike
}

// Long texts: a gated pattern runs only on windows of the text around the
// places where one of its required literals occurs, reaching as many
// characters to each side as its longest possible match (maxMatchLen; a window's start moves
// back to a line or word start). Every match contains such a literal, so a
// window holds every match that runs through it, except one with a word or
// gap longer than unboundedRun bytes. The cost of the big patterns then
// follows the places that could match, not the length of the text.
const (
	windowMin = 256  // texts up to this length are scanned whole
	maxReach  = 2048 // patterns that can match more than this always read the whole text
)

// findSpan returns the span of the snippet of the rule's first match in s
// that no "unless" pattern vetoes. With marks, a pattern runs only when every
// one of its literal sets has a string in s (else it cannot match); with
// near, it runs only on windows around the hits of its rarest set.
func (r *Rule) findSpan(s []byte, marks []bool, near *hitIndex, counts []int32, set *ruleSet) (int, int, bool) {
	for pi := range r.patterns {
		gates := r.gates[pi]
		if marks != nil && (!allMarked(marks, gates) || !r.nearIn(pi, s)) {
			continue
		}
		if near != nil && len(gates) > 0 && r.reach[pi] <= maxReach && set != nil {
			g := gates[0]
			for _, h := range gates[1:] {
				if counts[h] < counts[g] {
					g = h
				}
			}
			if a, b, ok := r.findInWindows(pi, s, g, gates, near, set.before[g], set.after[g]); ok {
				return a, b, true
			}
			continue
		}
		if a, b, ok := r.matchIn(pi, s, 0); ok {
			return a, b, true
		}
	}
	return 0, 0, false
}

// nearIn reports whether t holds a character of each of pattern pi's
// punctuation sets (Rule.near): a match inside t would.
func (r *Rule) nearIn(pi int, t []byte) bool {
	for _, chars := range r.near[pi] {
		if !bytes.ContainsAny(t, chars) {
			return false
		}
	}
	return true
}

func allMarked(marks []bool, gates []int32) bool {
	for _, g := range gates {
		if !marks[markPattern(int(g))] {
			return false
		}
	}
	return true
}

// findInWindows runs pattern pi on the merged windows around the literal
// hits of set g, in text order: from before characters ahead of a hit's end
// to after characters past it. A match holding that hit lies inside its
// window and holds a literal of every other set of the pattern too, so a
// window where some set has no hit ending inside it is skipped: in long
// texts the common words of one set rarely come near the rare ones of
// another, and the regular expressions then read a fraction of the text.
func (r *Rule) findInWindows(pi int, s []byte, g int32, gates []int32, near *hitIndex, before, after int) (int, int, bool) {
	lo, hi := -1, -1
	flush := func() (int, int, bool) {
		if lo < 0 {
			return 0, 0, false
		}
		return r.matchIn(pi, s[lo:hi], lo)
	}
	for _, end := range near.of(g) {
		a := windowStart(s, backChars(s, int(end), before), r.lineStart[pi])
		b := forwardChars(s, int(end), after)
		if !near.allWithin(gates, g, a, b) || !r.nearIn(pi, s[a:b]) {
			continue
		}
		if lo >= 0 && a <= hi {
			hi = max(hi, b)
			continue
		}
		if x, y, ok := flush(); ok {
			return x, y, true
		}
		lo, hi = a, b
	}
	return flush()
}

// hitIndex holds the literal hits of one string grouped by literal set, in
// text order within each set.
type hitIndex struct {
	start []int32 // start[g]..start[g+1] index ends of set g
	ends  []int32
}

func (x *hitIndex) of(g int32) []int32 { return x.ends[x.start[g]:x.start[g+1]] }

// allWithin reports whether every set of gates but skip has a hit ending in
// (a, b]: a literal inside s[a:b] ends there.
func (x *hitIndex) allWithin(gates []int32, skip int32, a, b int) bool {
	for _, k := range gates {
		if k == skip {
			continue
		}
		ends := x.of(k)
		// ends are in text order: the first end past a decides.
		i := sort.Search(len(ends), func(i int) bool { return int(ends[i]) > a })
		if i == len(ends) || int(ends[i]) > b {
			return false
		}
	}
	return true
}

// bucketHits groups sc.hits by literal set (a counting sort; sc.counts holds
// the sizes).
func (sc *scanner) bucketHits(n int) {
	x := &sc.byGate
	if cap(x.start) < n+1 {
		x.start = make([]int32, n+1)
	}
	x.start = x.start[:n+1]
	sum := int32(0)
	for g := 0; g < n; g++ {
		x.start[g] = sum
		sum += sc.counts[g]
	}
	x.start[n] = sum
	if cap(x.ends) < int(sum) {
		x.ends = make([]int32, sum)
	}
	x.ends = x.ends[:sum]
	fill := append(sc.fill[:0], x.start[:n]...)
	for _, h := range sc.hits {
		x.ends[fill[h.gate]] = h.end
		fill[h.gate]++
	}
	sc.fill = fill
}

// backChars returns the offset n characters before i (at most to 0).
func backChars(s []byte, i, n int) int {
	for ; n > 0 && i > 0; n-- {
		i--
		for i > 0 && s[i]&0xC0 == 0x80 {
			i--
		}
	}
	return i
}

// forwardChars returns the offset n characters after i (at most len(s)).
func forwardChars(s []byte, i, n int) int {
	for ; n > 0 && i < len(s); n-- {
		i++
		for i < len(s) && s[i]&0xC0 == 0x80 {
			i++
		}
	}
	return i
}

// windowStart moves a window's start back to the start of its word, so \b
// sees what it would in the whole text, and for a pattern with a line or
// text anchor (lines) first to the start of its line, within a short
// distance. Only anchored patterns pay for the longer window: for a short
// pattern, reading back to the line start was most of what it read.
func windowStart(s []byte, a int, lines bool) int {
	if a <= 0 {
		return 0
	}
	for k := a; lines && k > 0 && a-k < 256; k-- {
		if s[k-1] == '\n' {
			return k
		}
	}
	for k := a; k > 0 && a-k < 64; k-- {
		if s[k-1] == ' ' {
			return k
		}
	}
	return a
}

// regexInput, when set (by tests), is told how many bytes each pattern
// reads: the measure the literal gate and the windows are tuned by.
var regexInput func(r *Rule, pi, n int)

// matchIn runs pattern pi on t (which starts at offset off of the text) and
// returns the snippet span of its first match that no "unless" vetoes.
func (r *Rule) matchIn(pi int, t []byte, off int) (int, int, bool) {
	if regexInput != nil {
		regexInput(r, pi, len(t))
	}
	re := r.patterns[pi]
	// Most windows hold no match: asking only whether one exists lets the
	// matcher carry no submatch positions, which is most of its work.
	if !re.Match(t) {
		return 0, 0, false
	}
	m := re.FindSubmatchIndex(t)
	if m == nil {
		return 0, 0, false
	}
	ms := [][]int{m}
	if r.vetoed(t[m[0]:m[1]]) {
		ms = re.FindAllSubmatchIndex(t, 8)
	}
	for _, m := range ms {
		if r.vetoed(t[m[0]:m[1]]) {
			continue
		}
		if g := r.snip[pi]; g > 0 && m[2*g] >= 0 {
			return off + m[2*g], off + m[2*g+1], true
		}
		return off + m[0], off + m[1], true
	}
	return 0, 0, false
}

func (r *Rule) findSpanString(s string) (int, int, bool) {
	for pi, re := range r.patterns {
		if m := re.FindStringSubmatchIndex(s); m != nil {
			if g := r.snip[pi]; g > 0 && m[2*g] >= 0 {
				return m[2*g], m[2*g+1], true
			}
			return m[0], m[1], true
		}
	}
	return 0, 0, false
}

func (r *Rule) vetoed(match []byte) bool {
	for _, u := range r.unless {
		if u.Match(match) {
			return true
		}
	}
	return false
}
