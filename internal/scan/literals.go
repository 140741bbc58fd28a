package scan

import (
	"regexp/syntax"
	"strings"
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

// literalSet: nil means "no constraint known"; a set means one of its
// strings occurs in every match.
func literalSet(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		s := string(re.Rune)
		for _, r := range re.Rune {
			if r >= utf8.RuneSelf {
				return nil // the automaton reads ASCII-lowered text
			}
		}
		return []string{strings.ToLower(s)}
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
		// Adjacent literals join into one longer literal; then the child
		// with the most selective set wins.
		var best []string
		var run strings.Builder
		flush := func() {
			if run.Len() > 0 {
				best = better(best, []string{run.String()})
				run.Reset()
			}
		}
		for _, sub := range re.Sub {
			if sub.Op == syntax.OpLiteral {
				if s := literalSet(sub); s != nil {
					run.WriteString(s[0])
					continue
				}
			}
			flush()
			best = better(best, literalSet(sub))
		}
		flush()
		return best
	}
	return nil
}

// better picks the more selective of two literal sets: the one whose
// shortest string is longer, then the smaller one.
func better(a, b []string) []string {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	ma, mb := minLen(a), minLen(b)
	if ma != mb {
		if ma > mb {
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
