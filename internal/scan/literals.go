package scan

import (
	"bytes"
	"regexp/syntax"
	"unicode"
	"unicode/utf8"
)

// requiredLiterals returns a set of strings of which every match of the
// regular expression contains at least one (lower-cased), or nil when no
// such set is known. The scanner gives these to its keyword automaton, so a
// pattern only runs on text that could match it: the rules stay written as
// plain regular expressions and the prefilter follows them automatically.
func requiredLiterals(expr string) []string {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	set := literalSet(re.Simplify())
	if len(set) == 0 || len(set) > 256 {
		return nil
	}
	for _, s := range set {
		if s == "" {
			return nil
		}
	}
	return set
}

// litSet is a set of literals of which every match of a pattern contains
// one, and how far a match can reach from the end of such a literal, in
// characters: before it (to the match's start) and after it.
type litSet struct {
	strs          []string
	before, after int
}

// requiredLiteralSets returns several independent sets, each of which has a
// string in every match: one per part of the expression's top-level
// concatenation that has one (or the single set of requiredLiterals). A
// pattern can only match text that holds a string of every set.
func requiredLiteralSets(expr string) [][]string {
	var out [][]string
	for _, ls := range literalSets(expr) {
		out = append(out, ls.strs)
	}
	return out
}

func literalSets(expr string) []litSet {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	var parts []*syntax.Regexp
	var flatten func(re *syntax.Regexp)
	flatten = func(re *syntax.Regexp) {
		switch {
		case re.Op == syntax.OpCapture:
			flatten(re.Sub[0])
		case re.Op == syntax.OpConcat:
			for _, sub := range re.Sub {
				flatten(sub)
			}
		default:
			parts = append(parts, re)
		}
	}
	flatten(re.Simplify())
	// prefix[i]: the longest the first i parts can match together.
	prefix := make([]int, len(parts)+1)
	for i, p := range parts {
		prefix[i+1] = prefix[i] + maxLen(p)
	}
	total := prefix[len(parts)]
	var out []litSet
	add := func(set []string, i, j int) { // set found in parts i..j
		if len(set) == 0 || len(set) > 256 || minLen(set) == 0 {
			return
		}
		out = append(out, litSet{strs: truncate(set), before: prefix[j+1], after: total - prefix[i]})
	}
	var run []string
	runStart := 0
	for k, p := range parts {
		if ex := exactSet(p); ex != nil {
			if run == nil {
				run, runStart = []string{""}, k
			}
			if next := product(run, ex, maxExact); next != nil {
				run = next
				continue
			}
			add(run, runStart, k-1)
			run, runStart = ex, k
			continue
		}
		if run != nil {
			add(run, runStart, k-1)
		}
		run = nil
		add(literalSet(p), k, k)
	}
	if run != nil {
		add(run, runStart, len(parts)-1)
	}
	return out
}

// maxLiteral bounds the literals given to the automaton: a prefix of a
// required literal is required too, and a dozen characters select as well
// as the whole phrase while keeping the automaton small.
const maxLiteral = 12

func truncate(set []string) []string {
	out := make([]string, 0, len(set))
	for _, x := range set {
		if len(x) > maxLiteral {
			x = x[:maxLiteral]
		}
		out = append(out, x)
	}
	return dedupe(out)
}

// literalSet: nil means "no constraint known"; a set means one of its
// strings occurs in every match.
func literalSet(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if !literalRune(r, re.Flags&syntax.FoldCase != 0) {
				return nil
			}
		}
		return []string{asciiLower(string(re.Rune))}
	case syntax.OpCapture:
		return literalSet(re.Sub[0])
	case syntax.OpPlus:
		return literalSet(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return literalSet(re.Sub[0])
		}
		return nil
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			s := literalSet(sub)
			if s == nil {
				return nil
			}
			out = append(out, s...)
			if len(out) > 256 {
				return nil
			}
		}
		return dedupe(out)
	case syntax.OpConcat:
		// Runs of children whose every match is one of a few known strings
		// multiply into longer strings ("id_" then "rsa|dsa" gives "id_rsa"
		// and "id_dsa"); then the most selective candidate wins.
		var best []string
		var run []string // exact strings of the current run; nil: no run
		flush := func() {
			if run != nil && minLen(run) > 0 {
				best = better(best, dedupe(run))
			}
			run = nil
		}
		for _, sub := range re.Sub {
			if ex := exactSet(sub); ex != nil {
				if run == nil {
					run = []string{""}
				}
				if next := product(run, ex, maxExact); next != nil {
					run = next
					continue
				}
				flush()
				run = ex
				continue
			}
			flush()
			best = better(best, literalSet(sub))
		}
		flush()
		return best
	}
	return nil
}

// literalRune reports whether a rune of a literal can stand in a literal
// set: the automaton reads the text with only its ASCII letters lowered, so
// a letter of another script is only usable when the pattern matches it
// exactly (no case folding, or a character without case: a dash, a quote).
func literalRune(r rune, fold bool) bool {
	return r < utf8.RuneSelf || !fold || unicode.SimpleFold(r) == r
}

// asciiLower lowers the ASCII letters of s, as the text the automaton
// reads is lowered.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// maxExact bounds the exact sets built from concatenations.
const maxExact = 64

// exactSet returns every string sub can match when they are few and known
// (lower-cased ASCII), or nil. Empty-width assertions match "".
func exactSet(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpWordBoundary, syntax.OpNoWordBoundary,
		syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		return []string{""}
	case syntax.OpLiteral:
		if ls := literalSet(re); ls != nil {
			return ls
		}
		return nil
	case syntax.OpCapture:
		return exactSet(re.Sub[0])
	case syntax.OpQuest:
		ex := exactSet(re.Sub[0])
		if ex == nil {
			return nil
		}
		return dedupe(append([]string{""}, ex...))
	case syntax.OpPlus, syntax.OpStar:
		// Normalized text never has two whitespace characters in a row, so
		// \s+ matches exactly one, which the automaton reads as a space.
		if isSpaceClass(re.Sub[0]) {
			if re.Op == syntax.OpStar {
				return []string{"", " "}
			}
			return []string{" "}
		}
		return nil
	case syntax.OpCharClass:
		if isSpaceClass(re) {
			return []string{" "} // the automaton reads a newline as a space
		}
		var out []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if len(out) >= 4 {
					return nil
				}
				out = append(out, asciiLower(string(r)))
			}
		}
		return dedupe(out)
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			ex := exactSet(sub)
			if ex == nil {
				return nil
			}
			out = append(out, ex...)
			if len(out) > maxExact {
				return nil
			}
		}
		return dedupe(out)
	case syntax.OpConcat:
		run := []string{""}
		for _, sub := range re.Sub {
			ex := exactSet(sub)
			if ex == nil {
				return nil
			}
			if run = product(run, ex, maxExact); run == nil {
				return nil
			}
		}
		return run
	}
	return nil
}

// product concatenates every string of a with every string of b, or nil
// when b is nil or that makes more than most.
func product(a, b []string, most int) []string {
	if b == nil || len(a)*len(b) > most {
		return nil
	}
	out := make([]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, x+y)
		}
	}
	return dedupe(out)
}

// better picks the more selective of two literal sets: the one whose least
// selective string is longer, then the smaller one.
func better(a, b []string) []string {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	sa, sb := minLen(a), minLen(b)
	if sa != sb {
		if sa > sb {
			return a
		}
		return b
	}
	if len(b) < len(a) {
		return b
	}
	return a
}

func minLen(xs []string) int {
	m := -1
	for _, x := range xs {
		if m < 0 || len(x) < m {
			m = len(x)
		}
	}
	return m
}

func dedupe(xs []string) []string {
	seen := map[string]bool{}
	out := xs[:0]
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// isSpaceClass reports a character class that matches the space and the
// newline and nothing that is not whitespace (\s, [ \t\n], ...): in
// normalized text it matches exactly " " or "\n".
func isSpaceClass(re *syntax.Regexp) bool {
	if re.Op != syntax.OpCharClass {
		return false
	}
	space, nl := false, false
	for i := 0; i+1 < len(re.Rune); i += 2 {
		lo, hi := re.Rune[i], re.Rune[i+1]
		for r := lo; r <= hi; r++ {
			switch r {
			case ' ':
				space = true
			case '\n':
				nl = true
			case '\t', '\r', '\v', '\f':
			default:
				return false
			}
		}
	}
	return space && nl
}

// unboundedRun is the length in characters assumed for an unbounded
// repetition of what holds no space (\w+, [^\s/]+) when sizing windows: a
// single word longer than this is not followed past the word's start.
const unboundedRun = 32

// unboundedGap is the length given to an unbounded repetition that can
// hold a space (.*?, (?s:.)*?, [^<>]*): a gap of any number of words, so
// the pattern reads the whole text, never windows (it is past maxReach).
// Sized by unboundedRun instead, "<secret>" and "</secret>" 400 characters
// apart in a long description were never read together.
const unboundedGap = 1 << 20

// holdsSpace reports a repetition's operand that can match a space.
func holdsSpace(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return true
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i] <= ' ' && ' ' <= re.Rune[i+1] {
				return true
			}
		}
	case syntax.OpAlternate, syntax.OpConcat, syntax.OpCapture:
		for _, sub := range re.Sub {
			if holdsSpace(sub) {
				return true
			}
		}
	}
	return false
}

// maxMatchLen bounds the length in characters of a match of expr in
// normalized text (where whitespace runs are one character), counting an
// unbounded repetition as unboundedRun characters, or as unboundedGap when
// it can hold a space.
func maxMatchLen(expr string) int {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return -1
	}
	return maxLen(re.Simplify())
}

func maxLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpQuest:
		return maxLen(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		if isSpaceClass(re.Sub[0]) {
			return 1
		}
		if holdsSpace(re.Sub[0]) {
			return unboundedGap
		}
		return max(unboundedRun, maxLen(re.Sub[0]))
	case syntax.OpRepeat:
		if re.Max < 0 {
			if holdsSpace(re.Sub[0]) && !isSpaceClass(re.Sub[0]) {
				return unboundedGap
			}
			return max(unboundedRun, re.Min*maxLen(re.Sub[0]))
		}
		return re.Max * maxLen(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, sub := range re.Sub {
			n += maxLen(sub)
		}
		return n
	case syntax.OpAlternate:
		n := 0
		for _, sub := range re.Sub {
			n = max(n, maxLen(sub))
		}
		return n
	}
	return 0
}

// casedLiterals returns a set of strings, kept in the pattern's case, of
// which every match of re contains one, or nil. The keyword automaton reads
// lower-cased text, so it lets a pattern of a rule on the cased text run
// wherever "system" is written; the pattern may need "SYSTEM", and a byte
// search for that turns most of those texts away before the regular
// expression reads them.
func casedLiterals(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return nil
		}
		return []string{string(re.Rune)}
	case syntax.OpCapture, syntax.OpPlus:
		return casedLiterals(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return casedLiterals(re.Sub[0])
		}
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			s := casedLiterals(sub)
			if s == nil {
				return nil
			}
			if out = append(out, s...); len(out) > 64 {
				return nil
			}
		}
		return dedupe(out)
	case syntax.OpConcat:
		var best []string
		for _, sub := range re.Sub {
			best = better(best, casedLiterals(sub))
		}
		return best
	}
	return nil
}

// holdsOne reports whether t holds one of the strings.
func holdsOne(t []byte, strs []string) bool {
	for _, s := range strs {
		if bytes.Contains(t, []byte(s)) {
			return true
		}
	}
	return false
}
