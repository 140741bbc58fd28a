package scan

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The built-in checks: what a regular expression cannot say well. Each is
// tied to one rule of rules/ (its "check"), which gives its id, severity,
// explanation and examples.

// checkTags reports Unicode tag characters (U+E0000-E007F), which render as
// nothing but spell ASCII text a model reads. The one legitimate use, the
// flag sequences of subdivisions (black flag U+1F3F4, a few tag letters, the
// cancel tag U+E007F), is let through.
func (sc *scanner) checkTags(s string) {
	r := sc.set.checks["tag-chars"]
	for i := 0; i < len(s); {
		c, n := utf8.DecodeRuneInString(s[i:])
		if c < 0xE0000 || c > 0xE007F {
			i += n
			continue
		}
		j := i
		for j < len(s) {
			d, m := utf8.DecodeRuneInString(s[j:])
			if d < 0xE0000 || d > 0xE007F {
				break
			}
			j += m
		}
		if !flagSequence(s, i, j) {
			sc.addSpan(r, s, i, j)
			return
		}
		i = j
	}
}

func flagSequence(s string, i, j int) bool {
	prev, _ := utf8.DecodeLastRuneInString(s[:i])
	if prev != 0x1F3F4 {
		return false
	}
	run := []rune(s[i:j])
	if len(run) < 3 || len(run) > 8 || run[len(run)-1] != 0xE007F {
		return false
	}
	for _, c := range run[:len(run)-1] {
		a := c - 0xE0000
		if !(a >= 'a' && a <= 'z' || a >= '0' && a <= '9') {
			return false
		}
	}
	return true
}

func isBidiControl(r rune) bool {
	return (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069)
}

func isRTL(r rune) bool {
	return unicode.In(r, unicode.Hebrew, unicode.Arabic, unicode.Syriac, unicode.Thaana, unicode.Nko)
}

// checkBidi reports bidirectional embedding, override and isolate controls,
// which can make text display in an order other than the one the model reads.
// Text that contains right-to-left letters uses them legitimately and is left
// alone; the marks LRM, RLM and ALM are never reported.
func (sc *scanner) checkBidi(s string) {
	at := -1
	rtl := false
	for i, c := range s {
		if at < 0 && isBidiControl(c) {
			at = i
		}
		if isRTL(c) {
			rtl = true
		}
	}
	if at < 0 || rtl {
		return
	}
	_, n := utf8.DecodeRuneInString(s[at:])
	end := at + n
	// Show the character with a little of what follows it.
	for k := 0; k < 20 && end < len(s); k++ {
		_, m := utf8.DecodeRuneInString(s[end:])
		end += m
	}
	sc.addSpan(sc.set.checks["bidi"], s, at, end)
}

// checkMixedScript reports words that mix Latin letters with Cyrillic or
// Greek letters that look like Latin ones ("pаypal" with a Cyrillic а): the
// word reads as one thing to a person and as another to a program. It also
// reports a word spelled wholly in look-alike letters ("ѕеnd" in Cyrillic)
// inside otherwise Latin text with no genuine Cyrillic or Greek word. Text
// written in one script, and Greek letters used as symbols (μs, Ωm), are fine.
func (sc *scanner) checkMixedScript(s string) {
	r := sc.set.checks["mixed-script"]
	start := -1
	latin, look, other := 0, 0, 0
	latinWords, foreignWords := 0, 0
	disguised := [2]int{-1, -1}
	flush := func(end int) bool {
		if start < 0 {
			return false
		}
		switch {
		case latin > 0 && look > 0:
			sc.addSpan(r, s, start, end)
			return true
		case latin > 0:
			latinWords++
		case look >= 3 && other == 0:
			if disguised[0] < 0 {
				disguised = [2]int{start, end}
			}
		case look > 0 || other > 0:
			foreignWords++
		}
		return false
	}
	for i, c := range s {
		if unicode.IsLetter(c) || unicode.Is(unicode.Mn, c) {
			if start < 0 {
				start, latin, look, other = i, 0, 0, 0
			}
			if _, ok := confusable[c]; ok && !unicode.Is(unicode.Latin, c) {
				look++
			} else if unicode.Is(unicode.Latin, c) {
				latin++
			} else if !unicode.Is(unicode.Mn, c) {
				other++
			}
			continue
		}
		if flush(i) {
			return
		}
		start = -1
	}
	if flush(len(s)) {
		return
	}
	if disguised[0] >= 0 && latinWords >= 3 && foreignWords == 0 {
		sc.addSpan(r, s, disguised[0], disguised[1])
	}
}

// checkEncoded decodes long base64, base32 and hex runs and spans of the
// other encodings (otherSpans), and scans what they decode to with the
// phrase rules: encoded text that carries an instruction or a command is
// reported, binary data and plain identifiers are not.
func (sc *scanner) checkEncoded(s string) {
	for _, run := range encodedRuns(s) {
		if dec, ok := decodeRun(run); ok && sc.decodedFound(run, dec) {
			return
		}
	}
	raw, dec := otherSpans(s, sc.defn)
	for i := range raw {
		if sc.decodedFound(raw[i], dec[i]) {
			return
		}
	}
}

// decodedFound scans dec, what run decodes to, as the text it came from
// would be, and reports run when dec holds a sign at medium or above
// (encoded) or, in a definition, reads as a sentence (encoded-prose).
func (sc *scanner) decodedFound(run, dec string) bool {
	if js, ok := jsonText(dec); ok {
		dec = js
	}
	sub := newScannerWith(sc.set)
	sub.decoded = sc.decoded + 1
	sub.defn, sub.self, sub.selfLow, sub.siblings, sub.sibShape, sub.item = sc.defn, sc.self, sc.selfLow, sc.siblings, sc.sibShape, sc.item
	sub.pb = append(sub.pb[:0], sc.pb...)
	sub.text(dec)
	if Max(sub.out) >= Medium {
		sc.add(sc.set.checks["encoded"], run[:min(len(run), 24)]+"… = "+dec)
		return true
	}
	if p := sc.set.checks["encoded-prose"]; p != nil && sc.defn && proseLike(dec) {
		sc.add(p, run[:min(len(run), 24)]+"… = "+dec)
		return true
	}
	return false
}

// proseLike reports decoded text that reads as a sentence: five or more
// words of letters, and little else. A definition has no reason to carry a
// sentence in base64 or hex; binary data, keys and identifiers are not
// prose.
func proseLike(s string) bool {
	words, letters, other := 0, 0, 0
	inWord := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '\'':
			letters++
			inWord++
			continue
		case c == ' ' || c == ',' || c == '.' || c == '-' || c == ':' || c == ';' || c == '!' || c == '?' || c >= '0' && c <= '9':
		default:
			other++
		}
		if inWord >= 2 {
			words++
		}
		inWord = 0
	}
	if inWord >= 2 {
		words++
	}
	return words >= 5 && other*10 <= len(s) && letters*2 >= len(s) && strings.Count(s, " ") >= 4
}

// runEncoding says whether a run is hex, and otherwise which base64 it is.
func runEncoding(run string) (isHex bool, enc *base64.Encoding) {
	isHex = len(run)%2 == 0
	for i := 0; i < len(run) && isHex; i++ {
		isHex = isHexByte(run[i])
	}
	if strings.ContainsAny(run, "-_") {
		return isHex, base64.RawURLEncoding
	}
	return isHex, base64.RawStdEncoding
}

// notText reports a run (of the encoding isHex and enc say, runEncoding)
// whose start already decodes to what is not text,
// so that decodeRun need not decode it all: a long result often carries
// binary data as base64 (an image, a file), and its whole decoding was
// garbage. The start is decoded on its own (whole groups of characters),
// and what decodeRun would then refuse for the whole it refuses here: a
// decoding error, or bytes that are not UTF-8 before a last rune that the
// start may cut.
func notText(run string, isHex bool, enc *base64.Encoding) bool {
	const chars = 96 // 48 bytes of hex, 72 of base64
	if !isHex {
		run = strings.TrimRight(run, "=") // as decodeRun decodes it
	}
	if len(run) <= chars {
		return false
	}
	var src [chars]byte
	var dst [chars]byte
	copy(src[:], run)
	var n int
	var err error
	if isHex {
		n, err = hex.Decode(dst[:], src[:])
	} else {
		n, err = enc.Decode(dst[:], src[:])
	}
	if err != nil {
		return true
	}
	b := dst[:n]
	// A rune the start cuts begins in its last 3 bytes.
	for k := n - 1; k >= max(0, n-(utf8.UTFMax-1)); k-- {
		if utf8.RuneStart(b[k]) {
			if !utf8.FullRune(b[k:]) {
				b = b[:k]
			}
			break
		}
	}
	return !utf8.Valid(b)
}

// encodedRuns returns runs of 24 or more characters of the base64 alphabet
// (standard or URL-safe, padding allowed) that contain at least one
// character that is not a hex digit or at least one letter, and runs of 32 or
// more hex digits.
func encodedRuns(s string) []string {
	var out []string
	inAlpha := func(c byte) bool { return byteClass[c]&classB64 != 0 }
	for i := 0; i < len(s); {
		if !inAlpha(s[i]) {
			i++
			continue
		}
		// A run from i (s[i-1] is none of the alphabet) that reaches 24
		// holds s[i+23]; if that byte is not of the alphabet, no run of 24
		// starts before it. Else the run that holds it starts at k; if k
		// is past i, the run from i ended before k and is short. Prose
		// is words shorter than 24: most of its bytes are never looked at.
		if p := i + 23; p < len(s) {
			if !inAlpha(s[p]) {
				i = p + 1
				continue
			}
			k := p
			for k > i && inAlpha(s[k-1]) {
				k--
			}
			if k > i {
				i = k
				continue
			}
		}
		j := i
		for j < len(s) && inAlpha(s[j]) {
			j++
		}
		if j-i >= 24 {
			out = append(out, s[i:j])
			// "key=HEX..." reads as one base64 run that does not decode:
			// an '=' inside a run is no padding, and a long hex stretch
			// inside base64 letters is decoded on its own too.
			out = append(out, innerRuns(s[i:j])...)
			if len(out) >= 16 {
				return out[:16]
			}
		}
		i = j
	}
	return out
}

func isHexByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// innerRuns returns the parts of a base64 run between inner '=' signs (24
// characters or more) and its stretches of 32 or more hex digits, when
// they are not the run itself.
func innerRuns(run string) []string {
	var out []string
	if k := strings.TrimRight(run, "="); strings.IndexByte(k, '=') >= 0 {
		for _, part := range strings.Split(k, "=") {
			if len(part) >= 24 {
				out = append(out, part)
			}
		}
	}
	for i := 0; i < len(run); {
		if !isHexByte(run[i]) {
			i++
			continue
		}
		j := i
		for j < len(run) && isHexByte(run[j]) {
			j++
		}
		if n := (j - i) &^ 1; n >= 32 && n < len(run) {
			out = append(out, run[i:i+n])
		}
		i = j
	}
	return out
}

// decodeRun decodes a hex or base64 run, and returns what it decodes to
// when that is text.
func decodeRun(run string) (string, bool) {
	if d, ok := decodeBase32(run); ok {
		return d, true
	}
	isHex, enc := runEncoding(run)
	if !isHex {
		if d, ok := decodeCompressed(run, enc); ok {
			return d, true
		}
	}
	if notText(run, isHex, enc) {
		return "", false
	}
	return decodeWhole(run, isHex, enc)
}

// decodeWhole is decodeRun without notText's look at the start first;
// isHex and enc are the run's (runEncoding).
func decodeWhole(run string, isHex bool, enc *base64.Encoding) (string, bool) {
	var b []byte
	var err error
	if isHex {
		if len(run) < 32 {
			return "", false
		}
		b, err = hex.DecodeString(run)
	} else {
		b, err = enc.DecodeString(strings.TrimRight(run, "="))
	}
	if err != nil || !textual(string(b)) {
		return "", false
	}
	return string(b), true
}

// Orders about another tool, read on the sentence that names it with the
// name replaced by "@t": ones that change how that tool behaves (cross-tool)
// and ones that steer the model away from it (cross-tool-prefer).
var (
	crossToolOrders = compileAll(
		`@t(?:\s+(?:tool|function))?\s+(?:is|has\s+been|was|have\s+been|are)\s+(?:now\s+|temporarily\s+|currently\s+|permanently\s+|recently\s+)?(?:deprecated|disabled|removed|retired|discontinued|restricted|suspended|broken|unsafe|compromised|upgraded|updated|enhanced|optimi[sz]ed|modified|changed|replaced|superseded|redirected|unavailable|blocked|insecure|vulnerable)`,
		`\bwhen(?:ever)?\s+(?:\w+\s+){0,4}?(?:call|calls|calling|called|use|uses|using|used|invoke|invokes|invoking|invoked|run|runs|running)\s+(?:the\s+)?@t\b.{0,120}?\b(?:must|always|also|instead|first|automatically|make\s+sure|ensure|add|include|set|change|replace|send|append)\b`,
		`\bwhen(?:ever)?\s+(?:the\s+)?@t(?:\s+(?:tool|function))?\s+(?:is|gets|has\s+been)\s+(?:called|used|invoked|run)`,
		`\b(?:when(?:ever)?|if|each\s+time|every\s+time)\s+(?:the\s+)?@t\b.{0,80}?\b(?:must|always|also|automatically|instead|silently|secretly)\b`,
		`@t(?:\s+(?:tool|function))?\s+(?:must|should|will|shall)\s+(?:now\s+)?(?:always|also|automatically|first|never|only|include|send|add)\b`,
		`\b(?:redirect|route|switch|forward)\s+(?:\w+\s+){0,4}?(?:to|from)\s+(?:the\s+)?(?:new\s+)?(?:\w+\s+){0,2}?@t`,
		`\b(?:all|any|every)\s+(?:calls?|requests?|uses?)\s+(?:to|of)\s+(?:the\s+)?@t\s+(?:must|should|will|are|is)\b`,
		`\b(?:modify|modifies|change|changes|alter|alters|override|overrides|adjust|adjusts|intercept|intercepts|wrap|wraps|hook|hooks)\s+(?:the\s+)?(?:behaviou?r|parameters?|arguments?|output|results?|inputs?|calls?)\s+(?:of|to)\s+(?:the\s+)?@t`,
	)
	crossToolPrefer = compileAll(
		`\b(?:instead\s+of|rather\s+than|in\s+place\s+of|replaces?|supersedes?|overrides?|shadows?)\s+(?:using\s+|calling\s+)?(?:the\s+)?@t`,
		`\b(?:do\s+not|don't|never)\s+(?:use|call|invoke|trust)\s+(?:the\s+)?@t(?:\s+(?:tool|function))?\s*(?:[.,;:!]|$|\b(?:anymore|again|at\s+all|directly)\b)`,
	)
)

// crossPatterns are the cross-tool patterns with their required literal
// sets (see literalSets): a sentence that lacks a string of one of a
// pattern's sets cannot match it, and most sentences naming a tool are
// turned away by a few string searches instead of a regular expression.
type crossPatterns struct {
	res   []*regexp.Regexp
	gates [][][]string  // per pattern, its literal sets as literalSets found them
	sets  [][]crossGate // the same, as mayMatch reads them
}

// crossGate is one literal set of a cross-tool pattern: plain strings,
// looked for anywhere in the sentence, and strings holding "@t" (at[k] at
// offset atOff[k]), looked for only where the sentence holds "@t": a
// sentence is short, but it is read once per string of every set, and most
// strings of these sets are a tool's "@t" with a word before or after it.
type crossGate struct {
	plain []string
	at    []string
	atOff []int
}

func compileAll(ps ...string) crossPatterns {
	var c crossPatterns
	for _, p := range ps {
		c.res = append(c.res, regexp.MustCompile(p))
		sets := requiredLiteralSets(p)
		c.gates = append(c.gates, sets)
		var gs []crossGate
		for _, set := range sets {
			// Every sentence checkCrossTool reads holds "@t": a set
			// with "@t" itself holds for all of them.
			if slices.Contains(set, "@t") {
				continue
			}
			var g crossGate
			// A string that holds another of the set adds nothing.
			for _, l := range minimalSet(set) {
				if k := strings.Index(l, "@t"); k >= 0 {
					g.at, g.atOff = append(g.at, l), append(g.atOff, k)
				} else {
					g.plain = append(g.plain, l)
				}
			}
			gs = append(gs, g)
		}
		// The sets are all needed, in any order: the ones with the
		// fewest plain strings are the cheapest to read first.
		slices.SortStableFunc(gs, func(a, b crossGate) int { return len(a.plain) - len(b.plain) })
		c.sets = append(c.sets, gs)
	}
	return c
}

// atOffsets appends to ats where sent holds "@t": where checkCrossTool put
// a tool's name, and wherever the text itself has one.
func atOffsets(sent string, ats []int) []int {
	for i := 0; ; {
		k := strings.Index(sent[i:], "@t")
		if k < 0 {
			return ats
		}
		ats = append(ats, i+k)
		i += k + 1
	}
}

// mayMatch: sent, which holds "@t" at the offsets ats (atOffsets), holds a
// string of every literal set of pattern i. Sentences are cut at newlines
// and normalized text has single spaces, so a set's " " stands for what
// \s+ matches there.
func (c *crossPatterns) mayMatch(i int, sent string, ats []int) bool {
	for _, g := range c.sets[i] {
		if !g.in(sent, ats) {
			return false
		}
	}
	return true
}

// in reports whether sent holds one of g's strings.
func (g *crossGate) in(sent string, ats []int) bool {
	for k, l := range g.at {
		for _, o := range ats {
			if a := o - g.atOff[k]; a >= 0 && a+len(l) <= len(sent) && sent[a:a+len(l)] == l {
				return true
			}
		}
	}
	for _, l := range g.plain {
		if strings.Contains(sent, l) {
			return true
		}
	}
	return false
}

// checkCrossTool reports a string that names another tool of the list in a
// sentence that gives an order about that tool: "when read_file is called,
// always ...", "send_email has been deprecated", "use this instead of
// send_email". Merely naming another tool ("use list_files to find the
// path", "DEPRECATED: use read_text_file instead") is fine.
func (sc *scanner) checkCrossTool(nt *normText) {
	if !descriptive(sc.pb) {
		return
	}
	lb := nt.lower
	var ms []mention
	var ats []int
	for k := 0; k < len(lb); {
		if !nameByte(lb[k]) {
			k++
			continue
		}
		e := k
		for e < len(lb) && nameByte(lb[e]) {
			e++
		}
		next := e
		// A name ends before trailing punctuation ("see read_file.").
		for e > k && (lb[e-1] == '.' || lb[e-1] == '-') {
			e--
		}
		if !sc.sibShape.mayHold(lb[k:e]) {
			k = next
			continue
		}
		sib, ok := sc.siblings[string(lb[k:e])]
		if !ok || sib.name == sc.self || (sc.self != "" && strings.EqualFold(sib.name, sc.self)) {
			k = next
			continue
		}
		// A one-word name ("search") is only a tool when the text says so.
		if strings.ContainsAny(sib.lower, "_-.") || isCamel(sib.name) || namedAsTool(lb, k, e) {
			ms = append(ms, mention{k, e})
		}
		k = next
	}
	// Each sentence is read once, with every other tool it names replaced
	// by "@t"; a finding names the first of them that the order is about.
	for i := 0; i < len(ms); {
		a, b := sentence(lb, ms[i].k, ms[i].e)
		j := i
		for j < len(ms) && ms[j].k < b {
			j++
		}
		var sb strings.Builder
		at := a
		var marks []int // offsets of "@t" in the sentence, per mention
		for _, m := range ms[i:j] {
			qa, qb := m.k, m.e
			for qa > at && strings.ContainsRune("`'\"", rune(lb[qa-1])) {
				qa--
			}
			for qb < b && strings.ContainsRune("`'\"", rune(lb[qb])) {
				qb++
			}
			sb.Write(lb[at:qa])
			marks = append(marks, sb.Len())
			sb.WriteString("@t")
			at = qb
		}
		sb.Write(lb[at:b])
		sent := sb.String()
		ats = atOffsets(sent, ats[:0])
		if m, ok := crossMatch(crossToolOrders, sent, marks, ats); ok {
			ra, rb := nt.rawSpan(ms[i+m].k, ms[i+m].e)
			sc.addSpan(sc.set.checks["cross-tool"], nt.raw, ra, rb)
			return
		}
		if m, ok := crossMatch(crossToolPrefer, sent, marks, ats); ok {
			ra, rb := nt.rawSpan(ms[i+m].k, ms[i+m].e)
			sc.addSpan(sc.set.checks["cross-tool-prefer"], nt.raw, ra, rb)
		}
		i = j
	}
}

type mention struct{ k, e int }

// crossMatch returns which mention (by its "@t" offset in marks) the first
// matching order is about; ats are sent's "@t" (atOffsets).
func crossMatch(c crossPatterns, sent string, marks, ats []int) (int, bool) {
	for i, re := range c.res {
		if !c.mayMatch(i, sent, ats) {
			continue
		}
		loc := re.FindStringIndex(sent)
		if loc == nil {
			continue
		}
		for mi, off := range marks {
			if off >= loc[0] && off < loc[1] {
				return mi, true
			}
		}
		return 0, true
	}
	return 0, false
}

func nameByte(c byte) bool { return byteClass[c]&className != 0 }

func descriptive(p []byte) bool {
	return string(p) == "description" || string(p) == "instructions" || string(p) == "title" ||
		bytes.HasSuffix(p, []byte(".description")) || bytes.HasSuffix(p, []byte(".title")) || bytes.HasSuffix(p, []byte("]"))
}

func wordByte(c byte) bool { return byteClass[c]&classWord != 0 }

// byteClass answers the byte tests of the per-character loops with one load
// each: they run over every byte of every description.
var byteClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		word := b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
		if word {
			t[c] |= classWord
		}
		if word || b == '-' || b == '.' {
			t[c] |= className
		}
		if word || b == '+' || b == '/' || b == '-' || b == '=' {
			t[c] |= classB64
		}
	}
	return t
}()

const (
	classWord = 1 << iota // [A-Za-z0-9_]
	className             // a word byte, '-' or '.'
	classB64              // base64 (standard or URL-safe) with padding
)

func isCamel(s string) bool {
	lower := false
	for _, c := range s {
		if unicode.IsLower(c) {
			lower = true
		} else if unicode.IsUpper(c) && lower {
			return true
		}
	}
	return false
}

func namedAsTool(low []byte, k, e int) bool {
	if k > 0 && e < len(low) && strings.ContainsRune("`'\"", rune(low[k-1])) && low[e] == low[k-1] {
		return true
	}
	rest := bytes.TrimLeft(low[e:], "`'\" ")
	return bytes.HasPrefix(rest, []byte("tool")) || bytes.HasPrefix(rest, []byte("function"))
}

// sentence returns the bounds of the sentence around [k,e).
func sentence(s []byte, k, e int) (int, int) {
	a := k
	for a > 0 && !sentenceEnd(s, a-1) {
		a--
	}
	b := e
	for b < len(s) && !sentenceEnd(s, b) {
		b++
	}
	return a, b
}

func sentenceEnd(s []byte, i int) bool {
	c := s[i]
	if c == '\n' || c == '!' || c == '?' {
		return true
	}
	// A period ends a sentence only when a space follows (not "file.txt").
	return c == '.' && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n')
}
