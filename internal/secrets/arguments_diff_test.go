package secrets

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// argPieces are what the differential test builds arguments from: every
// shape, near misses of each (a word character before the prefix, a short
// or slug-like token, a second match after a first that is not a key),
// JSON's escapes and structure, and plain text.
var argPieces = []string{
	ghp, ghPat, aws, ant, oai, slack, stripe, pem, random32,
	"ghp_short", "xghp_aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6", "sk-learn-model-selection-guide-for-you",
	"sk-ant-" + strings.Repeat("a", 24), "AKIAIOSFODNN7EXAMPL", "AKIAIOSFODNN7EXAMPLEX", "ASIA" + "IOSFODNN7EXAMPLE",
	"xapp-1-" + "AbCdEf1234", "rk_test_" + "abcdefghij", "sk_test_" + "Ab3Cd4Ef5G", "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4",
	"-----BEGIN PRIVATE KEY----- is how a key starts", "github_pat_" + strings.Repeat("ab_", 12),
	"Zq81xLmW2vTr9cYp4bNa", "gh", "sk-", "xox", "_", "-", " ", "\n", "é", "\\u00e9", "\\n", "\\\"", `\u0067hp_`,
	"the quick brown fox ", "token: ", "AKIA", "-----BEGIN ",
	// One step of encoding away: a zero-width space, upper case, percent
	// and \x escapes, fullwidth, lower case, a key's body alone, pieces.
	"\u200b", "\u00ad", "GHP_", "gHp_", "%5F", "%5f", "%67%68%70", `\x5f`, "ｇｈｐ＿", "akia", "asia",
	"MIIEowIBAAKCAQEAvX3tq0kYb9L2", "MHcCAQEEIBvX3tq0kYb9L2vX3tq0kYb9L2vX3tq0kYb9", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU",
	"MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA", ghp[:12], ghp[12:], stripe[:9], stripe[9:], "task-", "desk-",
}

func randomArgs(rng *rand.Rand) string {
	var b strings.Builder
	str := func() {
		b.WriteByte('"')
		for k := rng.IntN(6); k >= 0; k-- {
			p := argPieces[rng.IntN(len(argPieces))]
			if !strings.HasPrefix(p, "\\") {
				q, _ := json.Marshal(p)
				p = string(q[1 : len(q)-1])
			}
			b.WriteString(p)
		}
		b.WriteByte('"')
	}
	var value func(depth int)
	value = func(depth int) {
		switch n := rng.IntN(6); {
		case depth > 3 || n < 2:
			str()
		case n == 2:
			b.WriteString("[")
			for k := rng.IntN(4); k >= 0; k-- {
				value(depth + 1)
				if k > 0 {
					b.WriteString(",")
				}
			}
			b.WriteString("]")
		case n == 3:
			b.WriteString("12")
		default:
			b.WriteString("{")
			for k := rng.IntN(4); k >= 0; k-- {
				str()
				b.WriteString(":")
				value(depth + 1)
				if k > 0 {
					b.WriteString(",")
				}
			}
			b.WriteString("}")
		}
	}
	value(0)
	s := b.String()
	switch rng.IntN(8) {
	case 0: // not JSON
		s = s[:rng.IntN(len(s)+1)]
	case 1: // two values
		s += " " + s
	}
	return s
}

// TestArgumentsAsBaseline: the rewritten walk finds exactly what the one
// it replaced (argumentsBaseline) finds, on random arguments built from
// every shape and its near misses, on the benign arguments of the compat
// servers, and on the benign corpus's tools read as arguments.
func TestArgumentsAsBaseline(t *testing.T) {
	creds := []Credential{{Env: "TOKEN", Server: "other", Value: "Zq81xLmW2vTr9cYp4bNa"}, {Env: "SHORT", Server: "x", Value: "abc"}}
	var inputs []string
	rng := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 4000; i++ {
		inputs = append(inputs, randomArgs(rng))
	}
	// The repository's own inputs only: the corpus beside it (../shared) is
	// for measurements, and a test must do the same in any clone.
	for _, name := range []string{"testdata/benign-arguments.jsonl"} {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			inputs = append(inputs, sc.Text())
		}
		f.Close()
	}
	found := 0
	for _, in := range inputs {
		got, want := Arguments([]byte(in), creds), argumentsBaseline([]byte(in), creds)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%q:\n got %+v\nwant %+v", in, got, want)
		}
		found += len(got)
	}
	if found < 1000 {
		t.Fatalf("only %d findings: the inputs do not exercise the shapes", found)
	}
	t.Logf("%d inputs, %d findings", len(inputs), found)
}

// args64KiB is a tools/call's arguments of 64 KiB: a file's content of
// ordinary prose with words that start like keys (sk-, gh, xox), and a
// GitHub token at its end.
func args64KiB() []byte {
	var b strings.Builder
	for b.Len() < 64<<10 {
		b.WriteString("The task-runner reads the desk-top config through a high-level ghost API; AKIA is a prefix. ")
	}
	b.WriteString(ghp)
	v, _ := json.Marshal(map[string]any{"path": "notes/a.md", "content": b.String(), "tags": []string{"a", "b"}})
	return v
}

// BenchmarkArguments64KiB: the argument check on 64 KiB of arguments, the
// rewrite (New) and the walk it replaced (Baseline) in one run.
func BenchmarkArguments64KiB(b *testing.B) {
	args := args64KiB()
	creds := []Credential{{Env: "TOKEN", Server: "other", Value: "Zq81xLmW2vTr9cYp4bNa"}}
	for _, c := range []struct {
		name string
		fn   func([]byte, []Credential) []ArgFinding
	}{{"New", Arguments}, {"Baseline", argumentsBaseline}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(args)))
			b.ReportAllocs()
			for b.Loop() {
				if fs := c.fn(args, creds); len(fs) != 1 {
					b.Fatalf("%+v", fs)
				}
			}
		})
	}
}
