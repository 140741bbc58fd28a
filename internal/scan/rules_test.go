package scan

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// exampleSiblings are the other tools the examples of the cross-tool rule
// are scanned against.
var exampleSiblings = []string{"send_email", "read_file", "list_files", "search", "upload_file", "create_conversation"}

func scanExample(r *Rule, s string) []Finding {
	sc := newScanner()
	sc.keepAll = true
	if strings.HasPrefix(r.Check, "cross-tool") {
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
			for pi, re := range r.patterns {
				if len(r.gates[pi]) == 0 {
					continue
				}
				gated++
				target := nt.lower
				if r.On == "cased" {
					target = nt.norm
				}
				if re.Match(target) && !allMarked(marks, r.gates[pi]) {
					t.Errorf("%s pattern %d matches %q but not all its literal sets %v were seen", r.ID, pi, s, requiredLiteralSets(re.String()))
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
