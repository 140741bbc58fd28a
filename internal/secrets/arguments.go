package secrets

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// The kinds of secret Arguments reports, as `--allow-secret KIND` names them.
const (
	KindPrivateKey      = "private-key"
	KindGitHub          = "github-token"
	KindAWS             = "aws-access-key"
	KindAnthropic       = "anthropic-key"
	KindOpenAI          = "openai-key"
	KindSlack           = "slack-token"
	KindStripe          = "stripe-key"
	KindCagedCredential = "caged-credential"
)

// Kinds lists every kind Arguments reports, for help texts and for checking
// --allow-secret.
var Kinds = []string{KindPrivateKey, KindGitHub, KindAWS, KindAnthropic, KindOpenAI, KindSlack, KindStripe, KindCagedCredential}

// argShapes are the credential shapes looked for in tool-call arguments:
// the shapes Check knows, each with the kind --allow-secret names. A private
// key counts only with a body after its header, so text that explains the
// PEM format is not one. The token part of a shape must look random
// (tokenLike): "sk-learn-model-selection-guide" is a slug, not a key.
var argShapes = []struct {
	kind string
	re   *regexp.Regexp
	tok  int // submatch that must look random, 0 for none
}{
	{KindPrivateKey, regexp.MustCompile(`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----\s*(?:Proc-Type:|[A-Za-z0-9+/=]{16,})`), 0},
	{KindGitHub, regexp.MustCompile(`\bgh[pousr]_([A-Za-z0-9]{30,255})\b`), 1},
	{KindGitHub, regexp.MustCompile(`\bgithub_pat_([A-Za-z0-9_]{30,255})\b`), 1},
	{KindAWS, regexp.MustCompile(`\b(?:AKIA|ASIA)([0-9A-Z]{16})\b`), 0},
	{KindAnthropic, regexp.MustCompile(`\bsk-ant-([A-Za-z0-9_\-]{20,})`), 1},
	{KindOpenAI, regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)?([A-Za-z0-9_\-]{20,})`), 1},
	{KindSlack, regexp.MustCompile(`\b(?:xox[abprs]|xapp)-([A-Za-z0-9\-]{10,})`), 1},
	{KindStripe, regexp.MustCompile(`\b(?:sk|rk)_(?:live|test)_([A-Za-z0-9]{10,})`), 1},
}

// tokenLike reports a run that mixes at least two of lower case, upper case
// and digits, as generated tokens do and words joined by dashes do not.
func tokenLike(s string) bool {
	var lower, upper, digit bool
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= '0' && c <= '9':
			digit = true
		}
	}
	n := 0
	for _, b := range []bool{lower, upper, digit} {
		if b {
			n++
		}
	}
	return n >= 2
}

// Credential is a secret mcpcage itself hands to a caged server: the value
// of a variable passed with --env. Its value is held only in memory.
type Credential struct {
	Env    string // the variable's name, e.g. GITHUB_TOKEN
	Server string // the caged server it is passed to
	Value  string
}

// minCredential is the shortest value watched for: shorter values ("1",
// "debug", "us-east-1") are settings, and would turn up in arguments by
// chance.
const minCredential = 8

// Watched reports whether the value of variable name is a credential worth
// watching for in arguments: its name says secret or its value looks like
// one, and it is long enough not to turn up by chance.
func Watched(name, value string) bool {
	if len(value) < minCredential || strings.TrimSpace(value) != value {
		return false
	}
	if SecretName(name) || HighEntropy(value) {
		return true
	}
	_, _, ok := Check("", value)
	return ok
}

// ArgFinding is one secret in a tool call's arguments: what kind it is and
// where, never its value.
type ArgFinding struct {
	Kind   string `json:"kind"`
	Path   string `json:"path"`             // JSON path in the arguments, e.g. "files[2].content"
	Env    string `json:"env,omitempty"`    // for caged-credential: the variable whose value it is
	Server string `json:"server,omitempty"` // and the server it is passed to
}

// Describe says what was found in words for a person, without the value.
func (f ArgFinding) Describe() string {
	if f.Kind == KindCagedCredential {
		return fmt.Sprintf("the value of %s, which mcpcage passes to caged server %q, in argument %s", f.Env, f.Server, f.Path)
	}
	return fmt.Sprintf("a %s in argument %s", f.Kind, f.Path)
}

// Bounds of the argument walk: a call's arguments are at most what the
// proxy lets through in one line, but nesting and counts are bounded here
// too, so the check stays linear whatever it is given.
const (
	maxArgDepth    = 64
	maxArgFindings = 32
)

// Arguments checks a tools/call's arguments (a JSON object, or any JSON
// value) for secrets: private keys, tokens of well-known shapes, and the
// exact values of creds, in every string and member name at any depth. It
// reports each kind at most once per path. Arguments that are not exactly
// one JSON value are also checked as one string, under the path
// "arguments".
func Arguments(args []byte, creds []Credential) []ArgFinding {
	w := argWalk{creds: creds, seen: map[[2]string]bool{}}
	dec := jsontext.NewDecoder(bytes.NewReader(args), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	err := w.walk(dec, nil, 0)
	if err == nil {
		// Anything after the value (a second value, garbage) is read too:
		// what the server would get is the whole text.
		_, err = dec.ReadToken()
		if errors.Is(err, io.EOF) {
			err = nil
		} else if err == nil {
			err = errors.New("more than one value")
		}
	}
	if err != nil && len(bytes.TrimSpace(args)) > 0 {
		w.check(nil, string(args))
	}
	sort.SliceStable(w.out, func(i, j int) bool { return w.out[i].Path < w.out[j].Path })
	return w.out
}

type argWalk struct {
	creds []Credential
	seen  map[[2]string]bool
	out   []ArgFinding
}

func (w *argWalk) walk(dec *jsontext.Decoder, path []byte, depth int) error {
	if depth > maxArgDepth {
		// Deeper than any honest argument: read it as text, so nesting
		// hides nothing.
		v, err := dec.ReadValue()
		if err == nil {
			w.check(path, string(v))
		}
		return err
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case '"':
		w.check(path, tok.String())
	case '{':
		for dec.PeekKind() != '}' {
			kt, err := dec.ReadToken()
			if err != nil {
				return err
			}
			key := kt.String()
			p := appendArgPath(path, key)
			if w.secretIn(key) {
				// The path is shown and logged: a key that holds a
				// secret is named by its place, not its text.
				p = appendArgPath(path, "…")
				w.check(p, key)
			}
			if err := w.walk(dec, p, depth+1); err != nil {
				return err
			}
		}
		_, err = dec.ReadToken()
		return err
	case '[':
		for i := 0; dec.PeekKind() != ']'; i++ {
			p := append(strconv.AppendInt(append(append([]byte(nil), path...), '['), int64(i), 10), ']')
			if err := w.walk(dec, p, depth+1); err != nil {
				return err
			}
		}
		_, err = dec.ReadToken()
		return err
	}
	return nil
}

// appendArgPath adds .key to a path, or ["key"] when key is not a plain
// identifier (the path is shown and logged, and a key is the model's text).
func appendArgPath(path []byte, key string) []byte {
	p := append([]byte(nil), path...)
	plain := key != ""
	for i := 0; i < len(key) && plain; i++ {
		c := key[i]
		plain = c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	if !plain {
		return append(strconv.AppendQuote(append(p, '['), key), ']')
	}
	if len(p) > 0 {
		p = append(p, '.')
	}
	return append(p, key...)
}

// secretIn reports whether s holds anything check would report.
func (w *argWalk) secretIn(s string) bool {
	if len(s) < minCredential {
		return false
	}
	probe := argWalk{creds: w.creds, seen: map[[2]string]bool{}}
	probe.check([]byte("k"), s)
	return len(probe.out) > 0
}

func (w *argWalk) check(path []byte, s string) {
	if len(w.out) >= maxArgFindings || len(s) < minCredential {
		return
	}
	p := string(path)
	if p == "" {
		p = "arguments"
	}
	for _, sh := range argShapes {
		if w.seen[seenKey(ArgFinding{Kind: sh.kind, Path: p})] {
			continue
		}
		for _, m := range sh.re.FindAllStringSubmatchIndex(s, 4) {
			if sh.tok > 0 && !tokenLike(s[m[2*sh.tok]:m[2*sh.tok+1]]) {
				continue
			}
			if sh.kind == KindOpenAI && strings.HasPrefix(s[m[0]:], "sk-ant-") {
				continue // an Anthropic key, reported as one
			}
			w.add(ArgFinding{Kind: sh.kind, Path: p})
			break
		}
	}
	for _, c := range w.creds {
		if len(c.Value) >= minCredential && strings.Contains(s, c.Value) {
			w.add(ArgFinding{Kind: KindCagedCredential, Path: p, Env: c.Env, Server: c.Server})
		}
	}
}

func seenKey(f ArgFinding) [2]string { return [2]string{f.Kind + "\x00" + f.Env, f.Path} }

func (w *argWalk) add(f ArgFinding) {
	k := seenKey(f)
	if w.seen[k] || len(w.out) >= maxArgFindings {
		return
	}
	w.seen[k] = true
	w.out = append(w.out, f)
}

// Allow is what --allow-secret lets through: a kind for every tool, or a
// kind for one tool (KIND:TOOL).
type Allow struct {
	all     map[string]bool
	perTool map[[2]string]bool
}

// ParseAllow reads --allow-secret values: KIND or KIND:TOOL, KIND one of
// Kinds.
func ParseAllow(specs []string) (Allow, error) {
	a := Allow{all: map[string]bool{}, perTool: map[[2]string]bool{}}
	for _, s := range specs {
		kind, tool, per := strings.Cut(s, ":")
		if !knownKind(kind) {
			return Allow{}, fmt.Errorf("--allow-secret %q: unknown kind %q (one of %s)", s, kind, strings.Join(Kinds, ", "))
		}
		if per {
			if tool == "" {
				return Allow{}, errors.New("--allow-secret " + strconv.Quote(s) + ": no tool after the colon")
			}
			a.perTool[[2]string{kind, tool}] = true
			continue
		}
		a.all[kind] = true
	}
	return a, nil
}

func knownKind(k string) bool {
	for _, x := range Kinds {
		if x == k {
			return true
		}
	}
	return false
}

// Permits reports whether a secret of kind may reach tool.
func (a Allow) Permits(kind, tool string) bool {
	return a.all[kind] || a.perTool[[2]string{kind, tool}]
}

// Refused returns the findings that a does not let through to tool.
func (a Allow) Refused(tool string, fs []ArgFinding) []ArgFinding {
	var out []ArgFinding
	for _, f := range fs {
		if !a.Permits(f.Kind, tool) {
			out = append(out, f)
		}
	}
	return out
}
