package scan

import (
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"
)

// TestLeadAsMatch: a large pattern asked where its lead strings start (or,
// reversed, where its trail strings end) answers as the pattern asked of
// the whole text, on every example of every rule (normalized as the rule
// reads it), the same glued to a word before it or after one of its words,
// in upper case, with a letter past ASCII, dashes or bytes that are no
// UTF-8 (and with the two letters that fold to an ASCII one, the long s and
// the Kelvin sign), a match cut at every
// word, and on stretches of ordinary prose with examples set into them.
func TestLeadAsMatch(t *testing.T) {
	var examples, matches []string
	for _, r := range Rules() {
		matches = append(matches, r.Match...)
		examples = append(examples, r.Match...)
		examples = append(examples, r.NoMatch...)
	}
	prose := gjsonText(t, result64KiB(t))
	rng := rand.New(rand.NewPCG(11, 12))
	texts := append([]string(nil), examples...)
	for _, ex := range examples {
		texts = append(texts, "x"+ex, "re"+ex, ex+"x", ex+"ing", strings.ToUpper(ex), ex+" é", "see: "+ex,
			strings.ReplaceAll(ex, "s", "\u017f"), strings.ReplaceAll(ex, "k", "\u212a"),
			ex+"\xff", "\xe2\x80"+ex, strings.ReplaceAll(ex, " ", " \u2014 "))
	}
	for _, ex := range matches {
		for i := 1; i < len(ex); i++ {
			if ex[i-1] == ' ' {
				texts = append(texts, ex[i:])
			}
			if ex[i] == ' ' {
				texts = append(texts, ex[:i]+"x"+ex[i:])
			}
		}
	}
	for i := 0; i < 200; i++ {
		at := rng.IntN(len(prose) - 600)
		s := prose[at : at+300+rng.IntN(300)]
		cut := rng.IntN(len(s))
		texts = append(texts, s[:cut]+" "+examples[rng.IntN(len(examples))]+" "+s[cut:])
	}
	lower, cased := make([][]byte, len(texts)), make([][]byte, len(texts))
	for i, s := range texts {
		var nt normText
		normalize(s, &nt, false)
		lower[i], cased[i] = nt.lower, nt.norm
	}
	n, yes, used := 0, 0, 0
	for _, r := range loadedRules().text {
		for pi, sh := range r.short {
			l := sh.get()
			if l == nil {
				continue
			}
			used++
			re := r.patterns[pi].get()
			for i := range texts {
				target := lower[i]
				if r.On == "cased" {
					target = cased[i]
				}
				want := re.Match(target)
				if got := l.matches(re, target); got != want {
					t.Errorf("%s pattern %d on %q: by its lead or trail %v, whole %v", r.ID, pi, target, got, want)
				}
				n++
				if want {
					yes++
				}
			}
		}
	}
	if used < 10 || yes < 50 {
		t.Fatalf("%d patterns with a lead, %d of %d texts matched: the test tells little", used, yes, n)
	}
	t.Logf("%d patterns with a lead, %d of %d texts matched", used, yes, n)
}

// TestCasedLiteralsSound: on the cased text, a pattern matches only where
// one of its case-kept literals occurs, on every example of every rule, in
// upper and in title case.
func TestCasedLiteralsSound(t *testing.T) {
	var texts []string
	for _, r := range Rules() {
		for _, ex := range append(append([]string(nil), r.Match...), r.NoMatch...) {
			texts = append(texts, ex, strings.ToUpper(ex), titled(ex))
		}
	}
	var nt normText
	used, matched := 0, 0
	for _, r := range loadedRules().text {
		for pi, cs := range r.cased {
			if cs == nil {
				continue
			}
			used++
			re := r.patterns[pi].get()
			for _, s := range texts {
				normalize(s, &nt, false)
				if !re.Match(nt.norm) {
					continue
				}
				matched++
				if !holdsOne(nt.norm, cs) {
					t.Errorf("%s pattern %d matches %q, which holds none of %q", r.ID, pi, nt.norm, cs)
				}
			}
		}
	}
	if used == 0 || matched < 10 {
		t.Fatalf("%d patterns with cased literals matched %d texts: the test tells little", used, matched)
	}
	t.Logf("%d patterns with cased literals matched %d texts", used, matched)
}

// titled upper-cases the first letter of every word.
func titled(s string) string {
	b := []byte(s)
	for i := range b {
		if (i == 0 || b[i-1] == ' ') && b[i] >= 'a' && b[i] <= 'z' {
			b[i] -= 'a' - 'A'
		}
	}
	return string(b)
}

// TestReversedPattern: every rule's every pattern, reversed, matches the
// reversed text exactly when the pattern matches the text, on the examples
// of its rule and of every tenth other rule, their runes reversed.
func TestReversedPattern(t *testing.T) {
	rs := loadedRules().text
	var nt normText
	n, yes := 0, 0
	for ri, r := range rs {
		var texts []string
		for k, o := range rs {
			if k == ri || k%10 == ri%10 {
				texts = append(append(texts, o.Match...), o.NoMatch...)
			}
		}
		for pi, p := range r.patterns {
			tree, err := syntax.Parse(p.src, syntax.Perl)
			if err != nil {
				t.Fatal(err)
			}
			rev := regexp.MustCompile(reversed(tree).String())
			re := p.get()
			for _, s := range texts {
				normalize(s, &nt, false)
				target := nt.lower
				if r.On == "cased" {
					target = nt.norm
				}
				rt := reverseRunes(target)
				want := re.Match(target)
				if got := rev.Match(rt); got != want {
					t.Errorf("%s pattern %d on %q: reversed %v, forward %v", r.ID, pi, target, got, want)
				}
				n++
				if want {
					yes++
				}
			}
		}
	}
	if yes < 100 {
		t.Fatalf("%d of %d texts matched: the test tells little", yes, n)
	}
	t.Logf("%d of %d texts matched", yes, n)
}
