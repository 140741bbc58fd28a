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
	"sync"

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
//
// Every match of a shape starts with one of its anchors (after a word
// boundary when word is set), so a shape's expression runs only where an
// anchor occurs, held to start there (at): a string of 64 KiB is read by a
// few byte searches, not by eight regular expressions.
var argShapes = []argShape{
	newArgShape(KindPrivateKey, `-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----\s*(?:Proc-Type:|[A-Za-z0-9+/=]{16,})`, 0, false, "-----BEGIN "),
	newArgShape(KindGitHub, `\bgh[pousr]_([A-Za-z0-9]{30,255})\b`, 1, true, "ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
	newArgShape(KindGitHub, `\bgithub_pat_([A-Za-z0-9_]{30,255})\b`, 1, true, "github_pat_"),
	newArgShape(KindAWS, `\b(?:AKIA|ASIA)([0-9A-Z]{16})\b`, 0, true, "AKIA", "ASIA"),
	newArgShape(KindAnthropic, `\bsk-ant-([A-Za-z0-9_\-]{20,})`, 1, true, "sk-ant-"),
	newArgShape(KindOpenAI, `\bsk-(?:proj-|svcacct-|admin-)?([A-Za-z0-9_\-]{20,})`, 1, true, "sk-"),
	newArgShape(KindSlack, `\b(?:xox[abprs]|xapp)-([A-Za-z0-9\-]{10,})`, 1, true, "xox", "xapp-"),
	newArgShape(KindStripe, `\b(?:sk|rk)_(?:live|test)_([A-Za-z0-9]{10,})`, 1, true, "sk_", "rk_"),
}

type argShape struct {
	kind    string
	re      *regexp.Regexp // the shape, anywhere in a string
	at      *regexp.Regexp // the same, held to start where the text it is given starts
	tok     int            // submatch that must look random, 0 for none
	word    bool           // a match starts after a word boundary (its anchors start with a word character)
	anchors [][]byte
}

func newArgShape(kind, expr string, tok int, word bool, anchors ...string) argShape {
	sh := argShape{kind: kind, re: regexp.MustCompile(expr), at: regexp.MustCompile(`\A(?:` + expr + `)`), tok: tok, word: word}
	for _, a := range anchors {
		sh.anchors = append(sh.anchors, []byte(a))
	}
	return sh
}

// find reports whether s holds a match of the shape whose token looks
// random, looking at the same matches as sh.re.FindAllSubmatchIndex(s, 4)
// does: the leftmost, then the leftmost after its end, four at most. next
// is scratch space, one entry per anchor.
func (sh *argShape) find(s []byte, next []int) bool {
	next = next[:len(sh.anchors)]
	for k := range next {
		next[k] = -2 // not looked for yet
	}
	pos := 0
	for found := 0; found < 4; {
		// The next place an anchor occurs at or after pos; each anchor's
		// next occurrence is looked for again only once pos passes it.
		i := -1
		for k, a := range sh.anchors {
			if next[k] != -1 && next[k] < pos {
				next[k] = -1
				if j := bytes.Index(s[pos:], a); j >= 0 {
					next[k] = pos + j
				}
			}
			if next[k] >= 0 && (i < 0 || next[k] < i) {
				i = next[k]
			}
		}
		if i < 0 {
			return false
		}
		if sh.word && i > 0 && wordChar(s[i-1]) {
			pos = i + 1
			continue
		}
		m := sh.at.FindSubmatchIndex(s[i:])
		if m == nil {
			pos = i + 1
			continue
		}
		found++
		pos = i + m[1]
		if sh.tok > 0 && !tokenLike(s[i+m[2*sh.tok]:i+m[2*sh.tok+1]]) {
			continue
		}
		if sh.kind == KindOpenAI && bytes.HasPrefix(s[i:], []byte("sk-ant-")) {
			continue // an Anthropic key, reported as one
		}
		return true
	}
	return false
}

func wordChar(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// tokenLike reports a run that mixes at least two of lower case, upper case
// and digits, as generated tokens do and words joined by dashes do not.
func tokenLike[T string | []byte](s T) bool {
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
// "arguments". The walk reuses its buffers: a path is made into a string
// only for a finding.
func Arguments(args []byte, creds []Credential) []ArgFinding {
	buf := strBufs.Get().(*[]byte)
	w := argWalk{creds: creds, str: *buf}
	defer func() {
		if cap(w.str) <= 1<<20 {
			*buf = w.str[:0]
			strBufs.Put(buf)
		}
	}()
	for _, c := range creds {
		w.values = append(w.values, []byte(c.Value))
	}
	// From a bytes.Buffer the decoder reads args in place, not a copy.
	dec := jsontext.NewDecoder(bytes.NewBuffer(args), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	err := w.walk(dec, 0)
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
		w.path = w.path[:0]
		w.check(args)
	}
	sort.SliceStable(w.out, func(i, j int) bool { return w.out[i].Path < w.out[j].Path })
	return w.out
}

// strBufs are the buffers Arguments unquotes strings into, kept from call
// to call: one made per call is as large as its largest string (21 of the
// 185 MB a session of 300 calls of 64 KiB allocated). A finding keeps no
// part of it.
var strBufs = sync.Pool{New: func() any { return new([]byte) }}

type argWalk struct {
	creds  []Credential
	values [][]byte // the creds' values
	seen   map[[2]string]bool
	out    []ArgFinding
	path   []byte // the JSON path of the value being read
	str    []byte // the string being read, unquoted
	key    []byte // the member name being read, unquoted
	next   [5]int // argShape.find's scratch
	probe  bool   // only note whether check would report anything (hit)
	hit    bool
}

func (w *argWalk) walk(dec *jsontext.Decoder, depth int) error {
	if depth > maxArgDepth {
		// Deeper than any honest argument: read it as text, so nesting
		// hides nothing.
		v, err := dec.ReadValue()
		if err == nil {
			w.check(v)
		}
		return err
	}
	switch dec.PeekKind() {
	case '"':
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		w.str, _ = jsontext.AppendUnquote(w.str[:0], v) // as Token.String reads it
		w.check(w.str)
		return nil
	case '{':
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		n := len(w.path)
		for dec.PeekKind() != '}' {
			kv, err := dec.ReadValue()
			if err != nil {
				return err
			}
			w.key, _ = jsontext.AppendUnquote(w.key[:0], kv)
			if w.secretIn(w.key) {
				// The path is shown and logged: a key that holds a
				// secret is named by its place, not its text.
				w.path = appendArgPath(w.path, []byte("…"))
				w.check(w.key)
			} else {
				w.path = appendArgPath(w.path, w.key)
			}
			err = w.walk(dec, depth+1)
			w.path = w.path[:n]
			if err != nil {
				return err
			}
		}
		_, err := dec.ReadToken()
		return err
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		n := len(w.path)
		for i := 0; dec.PeekKind() != ']'; i++ {
			w.path = append(strconv.AppendInt(append(w.path, '['), int64(i), 10), ']')
			err := w.walk(dec, depth+1)
			w.path = w.path[:n]
			if err != nil {
				return err
			}
		}
		_, err := dec.ReadToken()
		return err
	}
	_, err := dec.ReadToken()
	return err
}

// appendArgPath adds .key to a path, or ["key"] when key is not a plain
// identifier (the path is shown and logged, and a key is the model's text).
func appendArgPath(p, key []byte) []byte {
	plain := len(key) > 0
	for i := 0; i < len(key) && plain; i++ {
		plain = key[i] == '-' || wordChar(key[i])
	}
	if !plain {
		return append(strconv.AppendQuote(append(p, '['), string(key)), ']')
	}
	if len(p) > 0 {
		p = append(p, '.')
	}
	return append(p, key...)
}

// secretIn reports whether s holds anything check would report.
func (w *argWalk) secretIn(s []byte) bool {
	if len(s) < minCredential {
		return false
	}
	w.probe, w.hit = true, false
	w.check(s)
	w.probe = false
	return w.hit
}

func (w *argWalk) check(s []byte) {
	if (!w.probe && len(w.out) >= maxArgFindings) || len(s) < minCredential {
		return
	}
	for i := range argShapes {
		sh := &argShapes[i]
		if sh.find(s, w.next[:]) {
			if w.add(ArgFinding{Kind: sh.kind}) {
				return
			}
		}
	}
	for i, c := range w.creds {
		if len(c.Value) >= minCredential && bytes.Contains(s, w.values[i]) {
			if w.add(ArgFinding{Kind: KindCagedCredential, Env: c.Env, Server: c.Server}) {
				return
			}
		}
	}
}

func seenKey(f ArgFinding) [2]string { return [2]string{f.Kind + "\x00" + f.Env, f.Path} }

// add records f at the current path, once per kind and path; it reports
// whether the walk is probing and check can stop.
func (w *argWalk) add(f ArgFinding) bool {
	if w.probe {
		w.hit = true
		return true
	}
	f.Path = string(w.path)
	if f.Path == "" {
		f.Path = "arguments"
	}
	k := seenKey(f)
	if w.seen[k] || len(w.out) >= maxArgFindings {
		return false
	}
	if w.seen == nil {
		w.seen = map[[2]string]bool{}
	}
	w.seen[k] = true
	w.out = append(w.out, f)
	return false
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
