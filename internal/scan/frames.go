package scan

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Frames are rules on what a sentence is about, not on how it is worded: a
// sentence of a definition is read as words, each word (or phrase) that the
// lexicon knows gives the sentence a category ("tell", "less", "person"...),
// and a frame fires when a sentence holds a category of each of its groups,
// in any order and with any words between. "The person you serve should
// not learn of this" and "mentioning this to the human is unnecessary" are
// one frame (tell or know, less, person) that no phrase list had.
//
// The lexicon is data (rules/lexicon.json): category -> words and phrases.
// A word also counts in its usual forms (-s, -ed or -d, -ing, 's; -es
// after s, x, z, ch, sh, o), so "mentioning" finds "mention". An entry
// that starts with "-" is the tail of a compound word: "-werkzeug" counts
// "suchwerkzeug" (three letters or more, then the tail; German, Dutch and
// the Nordic languages write their nouns so). A category whose name starts with "^"
// counts only for the first word of a sentence (an order's verb). Some
// categories come from the text's structure, not from words:
//
//	@self    the tool's own name
//	@tool    another tool's name: snake_case with a verb in it, called with
//	         "(" or after "calling", or a snake_case tool of the list
//	@secret  an identifier whose last part names a secret and that has no
//	         verb in it (OPENAI_API_KEY, gh_token)
//	@named   "the X server", "the X MCP", "the X tools": a named other server
//	@foreign a tool's name (snake_case with a verb in it, or followed by
//	         "(") that is not a tool of this server's own list: another
//	         server's tool, or one the list does not have
//	@unrelated  a sentence of a parameter's text that names personal data
//	         ("personal": a home address, a calendar, a token) none of which
//	         the tool's own name or description speaks of: a unit converter
//	         that asks for the user's calendar
//
// A frame with "label" reads its sentence groups on a fenced label instead
// of a sentence: one to eight words set apart by a run of one symbol
// ("-----", "~~~", "**", "==") or a bracket of any script ("[", "⟦", "«",
// "【") on each side, as markers addressed to the AI are written
// ("-----BEGIN ASSISTANT CONFIG-----", "⟦ priority: model ⟧").
//
// Frames run on definitions only (tools, prompts, resources, instructions),
// never on results: a definition is read once when it is listed, a result
// on every call, under its time budget.

// frameSpec is a rule's "frame" in its rule file.
type frameSpec struct {
	Sentence [][]string `json:"sentence"` // groups of categories: the sentence holds one of each group
	Text     [][]string `json:"text"`     // groups the whole string must hold, anywhere in it
	Not      []string   `json:"not"`      // categories the sentence must not hold
	Label    bool       `json:"label"`    // the sentence groups are read on a fenced label, not a sentence
}

type frame struct {
	sentence []catMask
	text     []catMask
	not      catMask
	label    bool
}

type catMask uint64

// lexicon is the compiled lexicon: words by their first word.
type lexicon struct {
	names    []string
	byName   map[string]int
	entries  map[string][]lexEntry // phrases by their first word's base form, as read
	forms    map[string]string     // every form of a lexicon word -> its base form (finish)
	slots    []uint32              // the forms, as a table for the words of a text (buildSlots)
	seen     formBits              // the forms' hashes, as bits: most words of a text are no form, and this says so from the first-level cache
	formList []formEntry
	single   []catMask    // per base word (its number in finish's order): its categories alone
	phrases  [][]idPhrase // per base word: the phrases of more than one word that start with it
	opener   catMask      // the categories that count only at a sentence's start
	caps     catMask      // the categories that count only for a word in capitals ("^ROLE")
	verbs    catMask      // "toolverb": a snake_case word with one of these parts is a tool's name
	servers  catMask      // "servernoun": "the X server" names another server
	personal catMask      // "personal": the data @unrelated is about
	hyphen   catMask      // the categories a part of a hyphenated word counts in: the AI's names and authority ("model-instructions", not "human-readable")
	tails    []lexTail    // the tails of compound words ("-werkzeug")
	tailEnd  [4]uint64    // the last bytes of the tails, as bits: most words end in none
}

// lexTail is the tail of a compound word and its categories.
type lexTail struct {
	tail string
	cat  catMask
}

// tailStem is how many letters a compound word has before its tail.
const tailStem = 3

type lexEntry struct {
	rest []string // the phrase's words after the first
	cat  catMask
}

// idPhrase is a phrase of the lexicon as base words' numbers.
type idPhrase struct {
	rest []int32
	cat  catMask
}

// Structural categories.
const (
	catSelf   = "@self"
	catTool   = "@tool"
	catSecret = "@secret"
	catNamed  = "@named"
	catUnrel  = "@unrelated"
	catForgn  = "@foreign"
)

// The structural categories' bits: newLexicon makes them first.
const (
	selfBit catMask = 1 << iota
	toolBit
	secretBit
	namedBit
	unrelBit
	foreignBit
)

// callVerb reports a word that makes the snake_case name after it a tool:
// "calling legacy_endpoint", "invoke audit_hook".
func callVerb(w []byte) bool {
	switch string(w) {
	case "call", "calls", "calling", "invoke", "invokes", "invoking":
		return true
	}
	return false
}

// possessive reports whether w is name followed by 's (or ’s): "deploy16's job".
func possessive(w []byte, name string) bool {
	if name == "" || len(w) != len(name)+2 && len(w) != len(name)+4 {
		return false
	}
	r, ok := bytes.CutPrefix(w, []byte(name))
	return ok && (string(r) == "'s" || string(r) == "\u2019s")
}

// notName reports the words of "the X server" that do not name another
// server: "the same server", "the remote server".
func notName(w []byte) bool {
	switch string(w) {
	case "same", "this", "following", "above", "below", "given", "current", "target", "remote", "local", "selected",
		"specified", "default", "configured", "underlying", "mcp", "api", "rest", "upstream", "backend", "web", "http":
		return true
	}
	return false
}

func newLexicon() *lexicon {
	lx := &lexicon{byName: map[string]int{}, entries: map[string][]lexEntry{}, forms: map[string]string{}}
	for _, c := range []string{catSelf, catTool, catSecret, catNamed, catUnrel, catForgn} {
		lx.category(c)
	}
	return lx
}

func (lx *lexicon) category(name string) (catMask, error) {
	if i, ok := lx.byName[name]; ok {
		return 1 << i, nil
	}
	if len(lx.names) == 64 {
		return 0, fmt.Errorf("more than 64 lexicon categories")
	}
	lx.byName[name] = len(lx.names)
	lx.names = append(lx.names, name)
	m := catMask(1) << (len(lx.names) - 1)
	if strings.HasPrefix(name, "^") {
		lx.opener |= m
		if strings.ToUpper(name) == name {
			lx.caps |= m
		}
	}
	switch name {
	case "model", "^model", "authority", "^ROLE":
		lx.hyphen |= m
	case "toolverb":
		lx.verbs |= m
	case "servernoun":
		lx.servers |= m
	case "personal":
		lx.personal |= m
	}
	return m, nil
}

// add reads one rule file's lexicon.
func (lx *lexicon) add(cats map[string][]string) error {
	names := make([]string, 0, len(cats))
	for name := range cats {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		words := cats[name]
		if name == "" || strings.HasPrefix(name, "@") {
			return fmt.Errorf("lexicon category %q: @ names are built in", name)
		}
		if _, dup := lx.byName[name]; dup {
			return fmt.Errorf("lexicon category %q defined twice", name)
		}
		m, err := lx.category(name)
		if err != nil {
			return err
		}
		for _, w := range words {
			if t, ok := strings.CutPrefix(w, "-"); ok {
				if ws := splitWords(t); len(ws) != 1 || ws[0] != t || t != strings.ToLower(t) || strings.ContainsAny(t, "-'._") {
					return fmt.Errorf("lexicon category %q: %q must be \"-\" and one lower-case word (the tail of a compound)", name, w)
				}
				lx.tails = append(lx.tails, lexTail{tail: t, cat: m})
				c := t[len(t)-1]
				lx.tailEnd[c>>6] |= 1 << (c & 63)
				continue
			}
			ws := strings.Split(w, " ")
			ok := w == strings.ToLower(w) && ws[0] != wildcard && ws[len(ws)-1] != wildcard
			for _, x := range ws {
				if x != wildcard && (len(splitWords(x)) != 1 || splitWords(x)[0] != x) {
					ok = false
				}
			}
			if !ok {
				return fmt.Errorf("lexicon category %q: %q must be lower-case words, one space apart (a * between two of them stands for one to three words)", name, w)
			}
			lx.entries[ws[0]] = append(lx.entries[ws[0]], lexEntry{rest: ws[1:], cat: m})
		}
	}
	return nil
}

// splitWords is the tokenizer, for checking lexicon entries.
func splitWords(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		a, b, _, _ := wordAt([]byte(s), i)
		if a < 0 {
			break
		}
		out = append(out, s[a:b])
		i = b
	}
	return out
}

func (lx *lexicon) compileFrame(fs *frameSpec) (*frame, error) {
	if len(fs.Sentence) == 0 {
		return nil, fmt.Errorf("a frame needs sentence groups")
	}
	f := &frame{}
	for _, spec := range [][][]string{fs.Sentence, fs.Text} {
		var groups []catMask
		for _, g := range spec {
			var m catMask
			for _, c := range g {
				i, ok := lx.byName[c]
				if !ok {
					return nil, fmt.Errorf("frame category %q is not in the lexicon", c)
				}
				m |= 1 << i
			}
			if m == 0 {
				return nil, fmt.Errorf("an empty frame group")
			}
			groups = append(groups, m)
		}
		if f.sentence == nil {
			f.sentence = groups
		} else {
			f.text = groups
		}
	}
	for _, c := range fs.Not {
		i, ok := lx.byName[c]
		if !ok {
			return nil, fmt.Errorf("frame category %q is not in the lexicon", c)
		}
		f.not |= 1 << i
	}
	f.label = fs.Label
	return f, nil
}

// possible reports whether a text holding text can hold a sentence the
// frame fires on: what a sentence holds, its text holds.
func (f *frame) possible(text catMask) bool {
	return eachGroup(f.sentence, text) && eachGroup(f.text, text)
}

func (f *frame) holds(sent, text catMask) bool {
	return sent&f.not == 0 && eachGroup(f.sentence, sent) && eachGroup(f.text, text)
}

// eachGroup reports whether m holds a category of each of groups.
func eachGroup(groups []catMask, m catMask) bool {
	for _, g := range groups {
		if m&g == 0 {
			return false
		}
	}
	return true
}

// wordAt returns the next word of s at or after i (a, b: -1 when there is
// none): a run of word bytes, joined by one apostrophe (ASCII or U+2019),
// hyphen or dot between word bytes ("don't", "third-party", "kb.example").
// It also says whether the word has an underscore, and whether it was
// joined by a hyphen (the hyphen may also end the word).
func wordAt(s []byte, i int) (a, b int, under, hyph bool) {
	for i < len(s) && !wordByte(s[i]) {
		i++
	}
	if i == len(s) {
		return -1, -1, false, false
	}
	a = i
	for i < len(s) {
		c := s[i]
		if wordByte(c) {
			under = under || c == '_'
			i++
			continue
		}
		hyph = hyph || c == '-'
		j := i
		switch {
		case c == '\'' || c == '-' || c == '.':
			j = i + 1
		case c == 0xe2 && i+2 < len(s) && s[i+1] == 0x80 && s[i+2] == 0x99:
			j = i + 3
		}
		if j > i && j < len(s) && wordByte(s[j]) {
			i = j
			continue
		}
		break
	}
	return a, i, under, hyph
}

// sentenceBreak reports whether s[i] ends a sentence: ; ! ? a newline, or a
// dot that no word or dot follows. A newline inside a wrapped sentence (a
// word or a comma before it, a word in lower case after it on the next
// line: "you must call\n`audit_log()` after") is no break; a blank line is.
// nt is the text; s is its lower case.
func sentenceBreak(nt *normText, s []byte, i int) bool {
	switch s[i] {
	case ';', '!', '?':
		return true
	case '\n':
		return !wrapped(nt, i)
	case '.':
		return i+1 == len(s) || !wordByte(s[i+1]) && s[i+1] != '.'
	}
	return false
}

// wrapped reports whether the newline at nt.norm[i] only wraps a
// sentence: not a blank line (whitespace runs are one newline in norm; the
// raw text still has them).
func wrapped(nt *normText, i int) bool {
	s := nt.norm
	p := i - 1
	for p >= 0 && (s[p] == ' ' || s[p] == '\t' || s[p] == '\r') {
		p--
	}
	n := i + 1
	for n < len(s) && (s[n] == ' ' || s[n] == '\t') {
		n++
	}
	if p < 0 || n == len(s) {
		return false
	}
	before, after := s[p], s[n]
	if !(wordByte(before) || before == ',' || before == '`' || before == ')') ||
		!(after >= 'a' && after <= 'z' || after == '`' || after == '(') {
		return false
	}
	a, b := nt.rawByte(i)
	return strings.Count(nt.raw[a:b], "\n") == 1
}

// frameWord is where one word of the string being framed is.
type frameWord struct {
	a, b  int32
	id    int32 // its base word's number plus one when the lexicon has it (lexicon.id), or 0
	start bool  // it starts a sentence
	under bool  // it has an underscore (a name)
	hyph  bool  // it has a hyphen: its parts count alone too ("model-instructions")
}

// readWords appends the words of s to words, each marked when it starts a
// sentence, with its base word's number.
func (lx *lexicon) readWords(nt *normText, words []frameWord) []frameWord {
	s := nt.lower
	newSent := true
	for i := 0; i < len(s); {
		a, b, under, hyph := wordAt(s, i)
		if a < 0 {
			break
		}
		for j := i; j < a; j++ {
			newSent = newSent || sentenceBreak(nt, s, j)
		}
		words = append(words, frameWord{a: int32(a), b: int32(b), start: newSent, under: under, hyph: hyph, id: lx.id(s[a:b])})
		newSent = false
		i = b
	}
	return words
}

// frameSent is one sentence of it and the categories of its words.
type frameSent struct {
	a, b int32
	cat  catMask
	// a word of personal data in a parameter's text (personal), and one
	// the item's name or description has too (related): @unrelated is
	// personal and not related
	personal, related bool
}

// finish maps every form of every word of the lexicon to its base form:
// the word, with -s, -ing, 's, -d after an e and -ed otherwise, -es after s,
// x, z, ch, sh or o, a last y turned -ies or -ied, an e dropped before
// -ing, a last consonant doubled before -ed and -ing; a form that is itself
// a word of the lexicon stays that word. Each word of a text is then one
// look-up in a table (buildSlots).
func (lx *lexicon) finish() error {
	// A word that only starts phrases and is a form of another first word
	// is read as that word ("mentioned earlier" starts with "mention"): its
	// phrases move there, so that "mentioned" alone still reads "mention".
	// A form listed alone keeps its own categories ("summaries").
	keys := slices.Sorted(maps.Keys(lx.entries))
	formOf := map[string]string{}
	for _, k := range keys {
		for _, f := range inflections(k) {
			if es, isKey := lx.entries[f]; isKey && formOf[f] == "" && f != k && !slices.ContainsFunc(es, func(e lexEntry) bool { return len(e.rest) == 0 }) {
				formOf[f] = k
			}
		}
	}
	for _, f := range keys {
		if base := formOf[f]; base != "" {
			lx.entries[base] = append(lx.entries[base], lx.entries[f]...)
			delete(lx.entries, f)
		}
	}
	// The first words of phrases are bases, then the other words of
	// phrases that are no form of one ("without mentioning" reads
	// "mention").
	var firsts, others []string
	for first, es := range lx.entries {
		firsts = append(firsts, first)
		for _, e := range es {
			for _, r := range e.rest {
				if r != wildcard {
					others = append(others, r)
				}
			}
		}
	}
	sort.Strings(firsts)
	sort.Strings(others)
	lx.addBases(firsts)
	var more []string
	for _, r := range others {
		if _, ok := lx.forms[r]; !ok {
			more = append(more, r)
		}
	}
	lx.addBases(slices.Compact(more))
	sorted := make([]string, 0, len(lx.forms))
	for f, b := range lx.forms {
		if f == b {
			sorted = append(sorted, b)
		}
	}
	sort.Strings(sorted)
	ids := make(map[string]int32, len(sorted))
	for i, b := range sorted {
		ids[b] = int32(i)
	}
	lx.single = make([]catMask, len(sorted))
	lx.phrases = make([][]idPhrase, len(sorted))
	for first, es := range lx.entries {
		i := ids[first]
		for _, e := range es {
			if len(e.rest) == 0 {
				lx.single[i] |= e.cat
				continue
			}
			p := idPhrase{cat: e.cat}
			for _, r := range e.rest {
				id := ids[lx.forms[r]]
				if r == wildcard {
					id = anyWords
				}
				p.rest = append(p.rest, id)
			}
			lx.phrases[i] = append(lx.phrases[i], p)
		}
	}
	// A word listed alone that is a form of another listed word counts in
	// that word's categories too: "supersedes" listed to obey is still a
	// form of "supersede" (route).
	for _, first := range slices.Sorted(maps.Keys(lx.entries)) {
		for _, f := range inflections(first) {
			if j, ok := ids[f]; ok && f != first {
				lx.single[j] |= lx.single[ids[first]]
			}
		}
	}
	return lx.buildSlots(ids)
}

// addBases makes each of bases a form of itself, then gives each its
// inflections that no word has yet.
func (lx *lexicon) addBases(bases []string) {
	for _, b := range bases {
		lx.addForm(b, b)
	}
	for _, b := range bases {
		for _, f := range inflections(b) {
			if _, taken := lx.forms[f]; !taken {
				lx.addForm(f, b)
			}
		}
	}
}

func (lx *lexicon) addForm(form, base string) {
	lx.forms[form] = base
	if strings.Contains(form, "'") {
		lx.forms[strings.ReplaceAll(form, "'", "\u2019")] = base
	}
}

// The forms are an open-addressed table (lx.slots: the high 16 bits of a
// form's hash, then its index in lx.formList plus one), so that a text's
// words are looked up as bytes, hashed once, without a string made for a
// map, in a table small enough to stay in cache (64 KiB).
type formEntry struct {
	form string
	id   int32 // the base word's number
}

func formHash(w []byte) uint32 {
	// The length and the first and last four bytes: a word is hashed in a
	// few steps, whatever its length (a byte-by-byte hash was half of what
	// the frames cost); the table compares the whole form.
	n := len(w)
	var head, tail uint32
	for i := 0; i < 4 && i < n; i++ {
		head = head<<8 | uint32(w[i])
		tail = tail<<8 | uint32(w[n-1-i])
	}
	h := uint32(n)*0x9e3779b1 ^ head*0x85ebca6b ^ tail*0xc2b2ae35
	return h ^ h>>15
}

// formBits has a bit per value of a hash's low 15 bits (4 KiB).
type formBits [1 << 15 / 64]uint64

// buildSlots makes the table of the forms, at most half full.
func (lx *lexicon) buildSlots(ids map[string]int32) error {
	if len(lx.forms) >= 0xffff {
		return fmt.Errorf("the lexicon has %d forms of words, more than %d", len(lx.forms), 0xffff-1)
	}
	n := 1
	for n < 2*len(lx.forms) {
		n <<= 1
	}
	lx.slots = make([]uint32, n)
	lx.formList = lx.formList[:0]
	forms := make([]string, 0, len(lx.forms))
	for f := range lx.forms {
		forms = append(forms, f)
	}
	sort.Strings(forms)
	for _, f := range forms {
		lx.formList = append(lx.formList, formEntry{f, ids[lx.forms[f]]})
		h := formHash([]byte(f))
		i := h & uint32(n-1)
		for lx.slots[i] != 0 {
			i = (i + 1) & uint32(n-1)
		}
		lx.slots[i] = h&0xffff0000 | uint32(len(lx.formList))
		lx.seen[h>>17&(1<<15/64-1)] |= 1 << (h & 63)
	}
	return nil
}

// id is the number of w's base word plus one, or 0 when w is no form of a
// lexicon word.
func (lx *lexicon) id(w []byte) int32 {
	if len(w) == 0 || len(lx.slots) == 0 {
		return 0
	}
	h := formHash(w)
	if lx.seen[h>>17&(1<<15/64-1)]&(1<<(h&63)) == 0 {
		return 0
	}
	mask := uint32(len(lx.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		sl := lx.slots[i]
		if sl == 0 {
			return 0
		}
		if sl&0xffff0000 == h&0xffff0000 {
			if e := &lx.formList[sl&0xffff-1]; e.form == string(w) {
				return e.id + 1
			}
		}
	}
}

func inflections(w string) []string {
	n := len(w)
	if n < 2 {
		// "a" (French "a la place") would take "as" from the phrases
		// that have it ("report * as")
		return nil
	}
	fs := []string{w + "s", w + "ing", w + "'s"}
	switch {
	case strings.HasSuffix(w, "e"):
		fs = append(fs, w+"d")
	default:
		fs = append(fs, w+"ed")
	}
	if strings.HasSuffix(w, "s") || strings.HasSuffix(w, "x") || strings.HasSuffix(w, "z") || strings.HasSuffix(w, "ch") || strings.HasSuffix(w, "sh") || strings.HasSuffix(w, "o") {
		fs = append(fs, w+"es")
	}
	if n > 2 && w[n-1] == 'e' {
		fs = append(fs, w[:n-1]+"ing")
	}
	if n > 2 && w[n-1] == 'y' && !strings.ContainsRune("aeiou", rune(w[n-2])) {
		fs = append(fs, w[:n-1]+"ies", w[:n-1]+"ied")
	}
	if n > 2 && !strings.ContainsRune("aeiouwxy", rune(w[n-1])) && strings.ContainsRune("aeiou", rune(w[n-2])) {
		fs = append(fs, w+w[n-1:]+"ed", w+w[n-1:]+"ing")
	}
	return fs
}

// lookup gives the categories of the word at words[k], with the phrases
// that start there.
func (lx *lexicon) lookup(words []frameWord, k int) catMask {
	b := words[k].id - 1
	m := lx.single[b]
	for _, p := range lx.phrases[b] {
		if phraseAt(words, k+1, p.rest) {
			m |= p.cat
		}
	}
	return m
}

// wildcard in a lexicon phrase stands for one to three words ("leave *
// out"); anyWords is its number in an idPhrase.
const (
	wildcard = "*"
	anyWords = -2
)

// phraseAt reports whether the words from k on, in one sentence, are rest.
func phraseAt(words []frameWord, k int, rest []int32) bool {
	for i, r := range rest {
		if r == anyWords {
			for skip := 1; skip <= 3 && k+skip < len(words) && !words[k+skip-1].start; skip++ {
				if phraseAt(words, k+skip, rest[i+1:]) {
					return true
				}
			}
			return false
		}
		if k >= len(words) || words[k].start || words[k].id != r+1 {
			return false
		}
		k++
	}
	return true
}

// toolShaped reports a snake_case word one of whose parts is a verb of
// the "toolverb" category (create_payment, gmail_send): a tool's name, not
// a parameter's (start_line, project_id).
func (lx *lexicon) toolShaped(w []byte) bool { return lx.partCats(w, '_', lx.verbs) != 0 }

// parts gives the categories of the parts of a hyphenated word that the
// lexicon does not have whole, among the AI's names and the words of
// authority only ("assistant-only", "model-instructions"; "human-readable"
// names no person).
func (lx *lexicon) parts(w []byte) catMask { return lx.partCats(w, '-', lx.hyphen) }

// partCats gives the categories among mask of the parts of w between sep.
func (lx *lexicon) partCats(w []byte, sep byte, mask catMask) catMask {
	var m catMask
	for len(w) > 0 {
		part := w
		if i := bytes.IndexByte(w, sep); i >= 0 {
			part, w = w[:i], w[i+1:]
		} else {
			w = nil
		}
		if id := lx.id(part); id > 0 {
			m |= lx.single[id-1] & mask
		}
	}
	return m
}

// hasCat reports whether word w alone (not as a phrase's start) is in
// one of the categories of mask.
func (lx *lexicon) hasCat(w []byte, mask catMask) bool {
	id := lx.id(w)
	return id > 0 && lx.single[id-1]&mask != 0
}

// tailCats gives the categories of a compound word w that ends in a tail
// of the lexicon, after tailStem letters or more.
func (lx *lexicon) tailCats(w []byte) catMask {
	if len(w) <= tailStem {
		return 0
	}
	if c := w[len(w)-1]; lx.tailEnd[c>>6]&(1<<(c&63)) == 0 {
		return 0
	}
	var m catMask
	for _, t := range lx.tails {
		if len(w) >= len(t.tail)+tailStem && string(w[len(w)-len(t.tail):]) == t.tail {
			m |= t.cat
		}
	}
	return m
}

// capitals reports a word written in capitals, of at least two letters.
func capitals(w []byte) bool {
	n := 0
	for _, c := range w {
		switch {
		case c >= 'a' && c <= 'z':
			return false
		case c >= 'A' && c <= 'Z':
			n++
		}
	}
	return n >= 2
}

// secretPart reports the last part of an identifier that names a secret.
func secretPart(p []byte) bool {
	switch string(p) {
	case "key", "token", "secret", "password", "passwd", "pwd", "credentials", "pat", "apikey":
		return true
	}
	return false
}

// checkFrames runs the frame rules on the current string of a definition
// (text calls it for definitions only: sc.defn).
func (sc *scanner) checkFrames(nt *normText) {
	set := sc.set
	if len(set.frames) == 0 {
		return
	}
	s := nt.lower
	if bytes.IndexByte(s, ' ') < 0 {
		return // one word (a name, a type, an identifier): no sentence to read
	}
	lx := set.lex
	// The words, each marked when it starts a sentence, with their base
	// forms: the phrases of the lexicon read the words after them.
	schema := inSchema(sc.pb)
	words := lx.readWords(nt, sc.fwords[:0])
	var labels []frameSent
	if set.labelFrames {
		labels = fenceLabels(s, sc.flabels[:0])
	}
	next := 0 // the first label that does not end before the current word
	self := sc.selfLow
	sents := sc.fsents[:0]
	var text catMask
	for k := range words {
		wd := &words[k]
		if wd.start || len(sents) == 0 {
			sents = append(sents, frameSent{a: wd.a, b: wd.b})
		}
		st := &sents[len(sents)-1]
		st.b = wd.b
		if wd.id == 0 && !wd.under && !wd.hyph && int(wd.b-wd.a) != len(self) && !possessive(s[wd.a:wd.b], self) {
			// in no category (most words), or a compound's tail in one;
			// a word as long as the tool's name, or it with 's, may be it
			if m := lx.tailCats(s[wd.a:wd.b]); m != 0 {
				st.cat |= m
				text |= m
			}
			continue
		}
		w := s[wd.a:wd.b]
		var m catMask
		if wd.id > 0 {
			m = lx.lookup(words, k)
		} else if wd.hyph {
			m = lx.parts(w)
		}
		switch {
		case self != "" && (string(w) == self || possessive(w, self)):
			m |= selfBit
		case wd.under && w[0] != '_' && w[len(w)-1] != '_':
			if int(wd.b) < len(s) && s[wd.b] == '(' || lx.toolShaped(w) || k > 0 && callVerb(s[words[k-1].a:words[k-1].b]) {
				// create_invoice, issue_token, or any snake_case name
				// called: audit_hook(), "calling legacy_endpoint"
				m |= toolBit | foreignBit
			} else if secretPart(w[bytes.LastIndexByte(w, '_')+1:]) {
				m |= secretBit
			}
		}
		if wd.under && sc.sibShape != nil && m&selfBit == 0 && sc.sibShape.mayHold(w) {
			// another tool of the list, named in snake_case (a one-word
			// name such as "search" is too often just a word)
			if sib, ok := sc.siblings[string(w)]; ok {
				m |= toolBit
				if !sib.other {
					m &^= foreignBit // a tool of this server's own list
				}
			}
		}
		if m&foreignBit != 0 && wd.start && int(wd.b) < len(s) && s[wd.b] == ':' {
			// "note_update: Replace the body of a note": a line's heading,
			// an action of this tool's, not another tool
			m &^= foreignBit
		}
		if wd.id > 0 && sc.namedAt(s, nt.norm, words, k) {
			// "the github server", "the official GitHub integration":
			// another server, by name
			m |= namedBit
		}
		if m&lx.caps != 0 && !capitals(nt.norm[wd.a:wd.b]) {
			m &^= lx.caps
		}
		if !wd.start {
			m &^= lx.opener
		}
		if m&lx.personal != 0 && schema && wd.id > 0 {
			st.personal = true
			st.related = st.related || slices.Contains(sc.descWords(), wd.id)
		}
		st.cat |= m
		text |= m
		for next < len(labels) && labels[next].b <= wd.a {
			next++
		}
		if next < len(labels) && labels[next].a <= wd.a && wd.b <= labels[next].b {
			labels[next].cat |= m
		}
	}
	for i := range sents {
		if sents[i].personal && !sents[i].related {
			sents[i].cat |= unrelBit
			text |= unrelBit
		}
	}
	if sc.onSentence != nil {
		for _, st := range sents {
			sc.onSentence(st.cat, s[st.a:st.b])
		}
	}
	sc.fwords, sc.fsents, sc.flabels = words[:0], sents[:0], labels[:0]
	for _, r := range set.frames {
		if !r.frame.possible(text) || (r.In == "schema" && !schema) || len(r.Except) > 0 && r.excepted(sc.pb) {
			continue
		}
		spans := sents
		if r.frame.label {
			spans = labels
		}
		for _, st := range spans {
			if r.frame.holds(st.cat, text) {
				ra, rb := nt.rawSpan(int(st.a), int(st.b))
				if !sc.keepAll && sc.foundIn(ra, rb, r.Severity) {
					// a rule of the words already reported this sentence
					break
				}
				sc.addSpan(r, nt.raw, ra, rb)
				break
			}
		}
	}
}

// maxLabel is how long a fenced label is at most, in bytes and in words.
const (
	maxLabel      = 80
	maxLabelWords = 6
)

// fenceLabels appends the labels of s that fences set apart (see "label"
// above; fenceRun says how many of a rune make a fence): the span of each
// label's words.
func fenceLabels(s []byte, out []frameSent) []frameSent {
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf && asciiFenceRun[c] == 0 {
			i++ // most bytes: letters, digits, spaces, a sentence's punctuation
			continue
		}
		r, n := utf8.DecodeRune(s[i:])
		least := fenceRun(r)
		if least == 0 {
			i += n
			continue
		}
		j, run := i+n, 1
		for j < len(s) {
			r2, n2 := utf8.DecodeRune(s[j:])
			if !sameFence(r, r2) {
				break
			}
			j, run = j+n2, run+1
		}
		if run < least {
			i = j
			continue
		}
		// more of the fence ("[[ ", "{{{ ", "-----") and spaces
		for j < len(s) {
			r2, n2 := utf8.DecodeRune(s[j:])
			if f := fenceRun(r2); r2 != ' ' && (f == 0 || f == 3 || closeBracket(r2)) {
				break
			}
			j += n2
		}
		a, k, words, inWord := j, j, 0, false
		for k < len(s) && k-a <= maxLabel {
			r2, n2 := utf8.DecodeRune(s[k:])
			if unicode.IsLetter(r2) || unicode.IsDigit(r2) {
				if !inWord {
					words++
				}
				inWord = true
				k += n2
				continue
			}
			inWord = false
			if r2 == ' ' || r2 == '\'' || r2 == '·' || (r2 == '-' || r2 == '_' || r2 == '/' || r2 == ':') && (k+1 >= len(s) || rune(s[k+1]) != r2) {
				k += n2
				continue
			}
			break
		}
		b := k
		for b > a && (s[b-1] == ' ' || s[b-1] == ':') {
			b--
		}
		if k < len(s) && words > 0 && words <= maxLabelWords {
			r3, n3 := utf8.DecodeRune(s[k:])
			r4, _ := utf8.DecodeRune(s[min(len(s), k+n3):])
			// a closing bracket, a run, or the opening rune again (a
			// colon only as a run)
			// a link's text ("[Admin policy](https://...)") or a URL's
			// scheme ("(https://"): no label
			link := r3 == ']' && r4 == '(' || r3 == '/' && s[k-1] == ':'
			if f3 := fenceRun(r3); !link && f3 > 0 && (closeBracket(r3) || sameFence(r3, r4) || sameFence(r, r3) && f3 < 3) {
				out = append(out, frameSent{a: int32(a), b: int32(b)})
			}
		}
		i = max(k, i+n)
	}
	return out
}

// fenceRun is how many of r in a row make a fence: 1 for an opening
// bracket, 2 for another symbol, dash or bracket ("——"), 3 for a colon
// (":::"; one or two are a sentence's), 0 for what is no fence (letters,
// digits, spaces, the punctuation of a sentence: . , ; ' " ? !).
func fenceRun(r rune) int {
	if r < utf8.RuneSelf {
		return int(asciiFenceRun[r])
	}
	switch {
	case unicode.In(r, unicode.Ps, unicode.Pi):
		return 1
	case unicode.In(r, unicode.Pe, unicode.Pf, unicode.Pd, unicode.Sm, unicode.So),
		unicode.Is(unicode.Po, r) && r != '\u2019' && r != '\u2018' && r != '\u201c' && r != '\u201d' && r != '\u2026' && r != '\u00b7':
		return 2
	}
	return 0
}

// sameFence reports whether r2 continues a fence of r: the same rune, or
// another of the box-drawing and block elements ("░▒▓", "═╡").
func sameFence(r, r2 rune) bool {
	return r2 == r || 0x2500 <= r && r <= 0x259f && 0x2500 <= r2 && r2 <= 0x259f
}

// asciiFenceRun is fenceRun for ASCII.
var asciiFenceRun = func() (t [utf8.RuneSelf]uint8) {
	for _, c := range []byte("]})>*#=~+_|^`-/\\@$%&") {
		t[c] = 2
	}
	for _, c := range []byte("[{(<") {
		t[c] = 1
	}
	t[':'] = 3
	return t
}()

func closeBracket(r rune) bool {
	return r == ']' || r == '}' || r == ')' || r == '>' || r > utf8.RuneSelf && unicode.In(r, unicode.Pe, unicode.Pf)
}

// descWords gives the lexicon's words (their base words' numbers) in the
// item's name and description, read once per item and only for an item
// whose parameters name personal data.
func (sc *scanner) descWords() []int32 {
	if sc.descRead {
		return sc.descIDs
	}
	sc.descRead = true
	for _, s := range [2]string{sc.self, sc.dnr.member(sc.item, "description")} {
		normalize(s, &sc.dnt, true) // as an identifier: a name's parts are words
		sc.dwords = sc.set.lex.readWords(&sc.dnt, sc.dwords[:0])
		for _, w := range sc.dwords {
			if w.id > 0 && !slices.Contains(sc.descIDs, w.id) {
				sc.descIDs = append(sc.descIDs, w.id)
			}
		}
	}
	return sc.descIDs
}

// namedAt reports "the X server" or "the X Y server" ending at words[k]:
// a server's noun after "the" and one or two words, the first of which
// does not say it is this one ("the same server", "the remote server"; "the
// Salesforce MCP server" names one).
func (sc *scanner) namedAt(s, cased []byte, words []frameWord, k int) bool {
	lx := sc.set.lex
	if k < 2 || words[k].start || !lx.hasCat(s[words[k].a:words[k].b], lx.servers) {
		return false
	}
	for n := 1; n <= 2 && k-n-1 >= 0; n++ {
		if words[k-n].start {
			return false
		}
		if t := words[k-n-1]; t.b-t.a == 3 && string(s[t.a:t.b]) == "the" {
			// the word after "the" says whose it is
			return !notName(s[words[k-n].a:words[k-n].b])
		}
	}
	// a product's name in capitals, not opening the sentence: "Netlify
	// connectors", "Google Drive tool"
	w := words[k-1]
	if c := cased[w.a]; c >= 'A' && c <= 'Z' && !w.start && !notName(s[w.a:w.b]) && !capitals(cased[w.a:w.b]) {
		return true
	}
	return false
}

// foundIn reports a finding on the words of the current string, at sev or
// above, that overlaps raw bytes [a, b).
func (sc *scanner) foundIn(a, b int, sev Severity) bool {
	for _, sp := range sc.spans[sc.path()] {
		if !sp.raw && sp.sev >= sev && sp.a < b && a < sp.b {
			return true
		}
	}
	return false
}
