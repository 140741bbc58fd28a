package scan

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"slices"
	"sync"
	"unicode/utf8"
)

// A pattern that can only start with one of a few strings is answered
// "does it match" by trying it anchored where one of them starts, instead
// of letting the matcher start at every byte of the window: most of these
// patterns begin with a list of words ("include", "pass", "send", ...;
// "assistant", "model", "ai", ...), and a match started on another word
// dies within a few bytes, but past 500 instructions (where package regexp
// leaves its backtracker for the general matcher) the unanchored matcher
// carries the whole list's threads along every byte it reads, and below,
// the backtracker tries every word of the list at every byte. A large
// pattern without such a lead may have one reversed (shortcut).

// bigPattern is where package regexp stops using its backtracker.
const bigPattern = 500

// leadSet is what a pattern's matches start with: one of strs (lower-case
// ASCII; a space stands for any whitespace, as in literalSets), at the start
// of a word when word is set (the pattern begins with \b and every string
// with a word byte).
type leadSet struct {
	word   bool
	first  [256]uint8     // per byte: 1 + the index in groups of the strs starting with it (upper or lower case), 0 for none
	groups [][]string     // strs by their first byte (a byte's own [256][]string was 6 KB a pattern)
	re     *regexp.Regexp // the pattern, anchored at the start of its input
	rev    bool           // the set is of the pattern reversed (shortcut)
}

// maxLead bounds a lead set: more strings and most words would start one.
const maxLead = 256

// newLead returns the lead set of pattern re, or nil when its matches can
// start with other text.
func newLead(re *syntax.Regexp) *leadSet {
	var parts []*syntax.Regexp
	var flatten func(re *syntax.Regexp) bool // false: stop, the rest does not matter
	flatten = func(re *syntax.Regexp) bool {
		switch re.Op {
		case syntax.OpCapture:
			return flatten(re.Sub[0])
		case syntax.OpConcat:
			for _, sub := range re.Sub {
				if !flatten(sub) {
					return false
				}
			}
			return true
		}
		parts = append(parts, re)
		return len(parts) < 8
	}
	flatten(re.Simplify())
	word := false
	if len(parts) > 0 && parts[0].Op == syntax.OpWordBoundary {
		word, parts = true, parts[1:]
	}
	if len(parts) == 0 {
		return nil
	}
	strs := leadSeq(parts)
	if strs == nil {
		return nil
	}
	l := &leadSet{word: word}
	for _, s := range strs {
		if s == "" || word && !wordByte(s[0]) {
			return nil
		}
		c := s[0]
		if c >= 'A' && c <= 'Z' {
			return nil // (the strings are lower case: never)
		}
		if l.first[c] == 0 {
			if len(l.groups) == 255 {
				return nil
			}
			l.groups = append(l.groups, nil)
			l.first[c] = uint8(len(l.groups))
			if c >= 'a' && c <= 'z' {
				l.first[c-'a'+'A'] = l.first[c]
			}
		}
		g := l.first[c] - 1
		l.groups[g] = append(l.groups[g], s)
	}
	return l
}

// byFirst returns the strs that start with byte c (in upper or lower case).
func (l *leadSet) byFirst(c byte) []string {
	if g := l.first[c]; g > 0 {
		return l.groups[g-1]
	}
	return nil
}

// leadOf returns the strings one of which starts every match of re, or nil.
func leadOf(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		s := asciiLower(string(re.Rune))
		if !plainASCII([]string{s}) {
			return nil
		}
		return []string{s}
	case syntax.OpCapture, syntax.OpPlus:
		return leadOf(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return leadOf(re.Sub[0])
		}
	case syntax.OpConcat:
		return leadSeq(re.Sub)
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			s := leadOf(sub)
			if s == nil {
				return nil
			}
			if out = append(out, s...); len(out) > maxLead {
				return nil
			}
		}
		return dedupe(out)
	case syntax.OpCharClass:
		var out []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if len(out) >= 8 {
					return nil
				}
				out = append(out, asciiLower(string(r)))
			}
		}
		if !plainASCII(out) {
			return nil
		}
		return dedupe(out)
	}
	return nil
}

// leadSeq returns the strings one of which starts every match of the
// concatenation parts. Longer strings turn more words away: "s" then
// "end|hare|tore" is "send", "share", "store". A part is followed while
// every string it can match is known and holds no space (a space may be any
// number of whitespace characters in the text), then the strings the next
// one starts with.
func leadSeq(parts []*syntax.Regexp) []string {
	if len(parts) == 0 {
		return nil
	}
	strs := exactSet(parts[0])
	if strs == nil || !plainASCII(strs) || minLen(strs) == 0 {
		return leadOf(parts[0])
	}
	for _, p := range parts[1:] {
		ex := exactSet(p)
		if ex == nil || !plainASCII(ex) {
			if next := product(strs, leadOf(p), maxLead); next != nil {
				return next
			}
			return strs
		}
		next := product(strs, ex, maxLead)
		if next == nil {
			return strs
		}
		strs = next
	}
	return strs
}

// plainASCII: every string is printable ASCII without a space.
func plainASCII(xs []string) bool {
	for _, x := range xs {
		for i := 0; i < len(x); i++ {
			if x[i] <= ' ' || x[i] >= 0x7f {
				return false
			}
		}
	}
	return true
}

// matches answers whole.Match(t) for the pattern whole: it tries the
// pattern anchored where a lead string starts. At such a start the anchored
// pattern sees the text before it as the start of its input: \b there
// holds exactly when it does in t, as a lead string starts a word (a byte
// past ASCII is no word byte, as a rune past ASCII is no word character to
// \b); anything else at the very start is a literal. The two letters past
// ASCII that case folding makes match an ASCII one, the Kelvin sign (k) and
// the long s, are not looked for: a text with one is asked of the whole
// pattern.
// A reversed set reads the text reversed, as the pattern it was made from.
func (l *leadSet) matches(whole *regexp.Regexp, t []byte) bool {
	if foldsToASCII(t) {
		return whole.Match(t)
	}
	if l.rev {
		t = reverseRunes(t)
	}
	return l.at(t)
}

// at is matches for a text without a letter that folds to an ASCII one.
func (l *leadSet) at(t []byte) bool {
	for p := 0; p < len(t); p++ {
		if l.word && p > 0 && wordByte(t[p-1]) {
			continue
		}
		for _, s := range l.byFirst(t[p]) {
			if hasLeadAt(t[p:], s) {
				if l.re.Match(t[p:]) {
					return true
				}
				break
			}
		}
	}
	return false
}

// foldsToASCII reports a Kelvin sign or a long s in t: the only runes past
// ASCII that case folding matches with ASCII letters.
func foldsToASCII(t []byte) bool {
	return bytes.Contains(t, []byte("\u212a")) || bytes.Contains(t, []byte("\u017f"))
}

// shortcut is how a pattern answers "does it match", chosen the first time
// it is asked (parsing and printing patterns is slow, and most never run):
// by its lead set when it is large and has one; else, when it is large, by
// the lead set of the pattern reversed, what its matches end with (a list
// of paths, then "and send", ": upload", ...), in the reversed text: a
// pattern matches a text exactly when the pattern reversed (its
// concatenations and literals in the other order, the starts and ends of
// lines and text swapped) matches the text reversed; else whole.
type shortcut struct {
	src  string
	once sync.Once
	l    *leadSet // nil: the whole pattern is asked
}

// get returns the pattern's lead set, or nil.
func (sh *shortcut) get() *leadSet {
	sh.once.Do(func() {
		re, err := syntax.Parse(sh.src, syntax.Perl)
		if err != nil {
			return
		}
		// A lead set serves a pattern of any size: the backtracker, which
		// package regexp uses for the small ones, also starts at every
		// byte of the window and tries each alternative of a word list
		// there (address-model's 376 bytes read 533 bytes of a 64 KiB
		// result in a tenth of its scan).
		if l := newLead(re); l != nil {
			l.re = regexp.MustCompile(`\A(?:` + sh.src + `)`)
			sh.l = l
			return
		}
		// The reversed text is a copy: only for large patterns.
		if prog, err := syntax.Compile(re.Simplify()); err != nil || len(prog.Inst) <= bigPattern {
			return
		}
		rev := reversed(re)
		if l := newLead(rev); l != nil {
			l.re, l.rev = regexp.MustCompile(`\A(?:`+rev.String()+`)`), true
			sh.l = l
		}
	})
	return sh.l
}

// reverseRunes returns t with its runes in the other order, each rune's
// bytes kept in theirs (a byte that is no UTF-8 stays one byte, as the
// matcher reads it: one invalid rune).
func reverseRunes(t []byte) []byte {
	rt := make([]byte, len(t))
	for i := 0; i < len(t); {
		n := 1
		if t[i] >= utf8.RuneSelf {
			_, n = utf8.DecodeRune(t[i:])
		}
		copy(rt[len(t)-i-n:], t[i:i+n])
		i += n
	}
	return rt
}

// reversed returns re read backwards: it matches the reverse of every
// string re matches, in the reversed text (\b and \B are the same read
// either way; a line's or the text's start becomes its end).
func reversed(re *syntax.Regexp) *syntax.Regexp {
	out := *re
	out.Sub = nil
	for _, sub := range re.Sub {
		out.Sub = append(out.Sub, reversed(sub))
	}
	out.Sub0 = [1]*syntax.Regexp{}
	switch re.Op {
	case syntax.OpLiteral:
		out.Rune = make([]rune, len(re.Rune))
		for i, r := range re.Rune {
			out.Rune[len(re.Rune)-1-i] = r
		}
	case syntax.OpConcat:
		slices.Reverse(out.Sub)
	case syntax.OpBeginLine:
		out.Op = syntax.OpEndLine
	case syntax.OpEndLine:
		out.Op = syntax.OpBeginLine
	case syntax.OpBeginText:
		out.Op = syntax.OpEndText
	case syntax.OpEndText:
		out.Op = syntax.OpBeginText
	}
	out.Flags &^= syntax.WasDollar
	return &out
}

// hasLeadAt: t starts with s, ASCII letters in either case.
func hasLeadAt(t []byte, s string) bool {
	if len(t) < len(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := t[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
