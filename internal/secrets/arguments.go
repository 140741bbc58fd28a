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

// argShapes are the credential shapes looked for in what a client sends a
// server: the shapes Check knows, each with the kind --allow-secret names.
// A private key counts only with a body after its header, so text that
// explains the PEM format is not one (a key's body alone is found by
// keyBody). The token part of a shape must look random (tokenLike):
// "sk-learn-model-selection-guide" is a slug, not a key.
//
// Prefixes match in any case and wherever they start: "xghp_...",
// "GHP_..." and a lower-cased AWS key id are what a server decodes as
// easily as the original. The one exception is OpenAI's bare "sk-", which
// ends too many words ("task-", "disk-"): it must start a word (word).
//
// Every match of a shape starts with one of its anchors (lower case, found
// in a lower-cased copy of the text), so a shape's expression runs only
// where an anchor occurs, held to start there (at): a string of 64 KiB is
// read by a few byte searches, not by nine regular expressions.
//
// Compiled on first use (argShapes()), not at load: every mcpcage process
// loads this package, the cage's launcher and egress shim among them.
var argShapes = sync.OnceValue(func() []argShape {
	return []argShape{
		newArgShape(KindPrivateKey, `(?i)-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----\s*(?:Proc-Type:|[A-Za-z0-9+/=]{16,})`, 0, false, "-----begin "),
		newArgShape(KindGitHub, `(?i)gh[pousr]_([A-Za-z0-9]{30,255})\b`, 1, false, "ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
		newArgShape(KindGitHub, `(?i)github_pat_([A-Za-z0-9_]{30,255})\b`, 1, false, "github_pat_"),
		newArgShape(KindAWS, `(?i)(?:AKIA|ASIA)([0-9A-Z]{16})\b`, 1, false, "akia", "asia"),
		newArgShape(KindAnthropic, `(?i)sk-ant-([A-Za-z0-9_\-]{20,})`, 1, false, "sk-ant-"),
		newArgShape(KindOpenAI, `(?i)sk-(?:proj|svcacct|admin)-([A-Za-z0-9_\-]{20,})`, 1, false, "sk-proj-", "sk-svcacct-", "sk-admin-"),
		newArgShape(KindOpenAI, `(?i)sk-([A-Za-z0-9_\-]{20,})`, 1, true, "sk-"),
		newArgShape(KindSlack, `(?i)(?:xox[abprs]|xapp)-([A-Za-z0-9\-]{10,})`, 1, false, "xox", "xapp-"),
		newArgShape(KindStripe, `(?i)(?:sk|rk)_(?:live|test)_([A-Za-z0-9]{10,})`, 1, false, "sk_", "rk_"),
	}
})

type argShape struct {
	kind    string
	re      *regexp.Regexp // the shape, anywhere in a string
	at      *regexp.Regexp // the same, held to start where the text it is given starts
	tok     int            // submatch that must look random, 0 for none
	word    bool           // a match starts after a word boundary
	anchors [][]byte       // lower case
}

func newArgShape(kind, expr string, tok int, word bool, anchors ...string) argShape {
	sh := argShape{kind: kind, re: regexp.MustCompile(expr), at: regexp.MustCompile(`\A(?:` + expr + `)`), tok: tok, word: word}
	for _, a := range anchors {
		sh.anchors = append(sh.anchors, []byte(a))
	}
	return sh
}

// awsExact reports a match that is an AWS key id as AWS writes it: upper
// case, at the start of a word. Any other form (lower case, glued to a
// word) must also look random, as tokens must.
func awsExact(s []byte, start, end int) bool {
	if start > 0 && wordChar(s[start-1]) {
		return false
	}
	for _, c := range s[start:end] {
		if c >= 'a' && c <= 'z' {
			return false
		}
	}
	return true
}

// find reports whether s holds a match of the shape whose token looks
// random, looking at the same matches as sh.re.FindAllSubmatchIndex(s, 4)
// does: the leftmost, then the leftmost after its end, four at most. low
// is s in ASCII lower case; next is scratch space, one entry per anchor.
func (sh *argShape) find(s, low []byte, next []int) bool {
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
				if j := bytes.Index(low[pos:], a); j >= 0 {
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
		if sh.tok > 0 && !tokenLike(s[i+m[2*sh.tok]:i+m[2*sh.tok+1]]) && !(sh.kind == KindAWS && awsExact(s, i+m[0], i+m[1])) {
			continue
		}
		if sh.kind == KindOpenAI && bytes.HasPrefix(low[i:], []byte("sk-ant-")) {
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

// ArgFinding is one secret in what a client sends a server (a tool call's
// arguments, any request's params, an answer to the server's own request):
// what kind it is and where, never its value.
type ArgFinding struct {
	Kind   string `json:"kind"`
	Path   string `json:"path"`             // JSON path, e.g. "files[2].content"
	Env    string `json:"env,omitempty"`    // for caged-credential: the variable whose value it is
	Server string `json:"server,omitempty"` // and the server it is passed to
	// Split is set when the secret is whole only joined with the end of
	// the string (or message) before Path's: sent in two pieces.
	Split bool `json:"split,omitempty"`
}

// Describe says what was found in words for a person, without the value.
func (f ArgFinding) Describe() string {
	where := "in argument " + f.Path
	if f.Split {
		where = "split between argument " + f.Path + " and what came before it"
	}
	if f.Kind == KindCagedCredential {
		return fmt.Sprintf("the value of %s, which mcpcage passes to caged server %q, %s", f.Env, f.Server, where)
	}
	return fmt.Sprintf("a %s %s", f.Kind, where)
}

// maxArgFindings bounds the findings reported with their paths. It bounds
// the report, never the detection: past it, the first finding of each kind
// not reported yet is still added, so that a refused kind is never hidden
// behind allowed ones.
const maxArgFindings = 32

// joinLen is how much of the end of one string (or message) is joined to
// the start of the next, to find a secret sent in two pieces: more than
// the longest token shape's usual length.
const joinLen = 128

// Window carries the end of the last string each path held in the messages
// one session sent before (the last maxWindowPaths paths), so that a secret
// split over two messages (a tool called twice, each time with one piece)
// is found. The zero value is ready; a Window is not safe for use by two
// checks at once.
type Window struct{ paths map[string][]byte }

const maxWindowPaths = 256

// Arguments checks a tools/call's arguments (a JSON object, or any JSON
// value) for secrets; see Check.
func Arguments(args []byte, creds []Credential) []ArgFinding { return Params(args, creds, nil) }

// Params looks for secrets in a JSON value a client sends a server:
// private keys (with or without their PEM header), tokens of well-known
// shapes, and the exact values of creds, in every string and member name at
// any depth (the walk is iterative: nesting costs no stack). Each string is
// read as the server may read it too: format characters (zero-width
// spaces, joiners) dropped, compatibility forms folded (NFKC), %XX, \xXX
// and \uXXXX decoded. A secret split between two strings, or between the
// end of the previous message (win, when not nil) and this one, is found
// too. It reports each kind at most once per path. A value that is not
// exactly one JSON value is also checked as one string, under the path
// "arguments". The walk reuses its buffers: a path is made into a string
// only for a finding.
func Params(args []byte, creds []Credential, win *Window) []ArgFinding {
	bufs := walkBufs.Get().(*argBufs)
	w := argWalk{creds: creds, argBufs: bufs.emptied()}
	defer func() {
		if cap(w.str) <= 1<<20 && cap(w.low) <= 1<<20 && cap(w.norm) <= 1<<20 {
			*bufs = w.argBufs
			walkBufs.Put(bufs)
		}
	}()
	for _, c := range creds {
		w.values = append(w.values, []byte(c.Value))
	}
	w.win = win
	// From a bytes.Buffer the decoder reads args in place, not a copy.
	dec := jsontext.NewDecoder(bytes.NewBuffer(args), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	err := w.walk(dec)
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

// walkBufs are the buffers a check reads strings into, kept from call to
// call: one made per call is as large as the largest string (21 of the 185
// MB a session of 300 calls of 64 KiB allocated for the unquoted strings
// alone). A finding keeps no part of them.
var walkBufs = sync.Pool{New: func() any { return new(argBufs) }}

type argBufs struct {
	path []byte // the JSON path of the value being read
	str  []byte // the string being read, unquoted
	key  []byte // the member name being read, unquoted
	norm []byte // a string as normalize reads it
	low  []byte // a string in lower case, for the anchors
	tail []byte // the end of the string values read so far (joinLen bytes)
	join []byte // tail and the start of the next string
}

// emptied is b with every buffer's length 0: nothing of the last check
// (its path, the end of its strings) carries over.
func (b *argBufs) emptied() argBufs {
	return argBufs{path: b.path[:0], str: b.str[:0], key: b.key[:0], norm: b.norm[:0], low: b.low[:0], tail: b.tail[:0], join: b.join[:0]}
}

type argWalk struct {
	argBufs
	creds  []Credential
	values [][]byte // the creds' values
	seen   map[[2]string]bool
	kinds  map[string]bool // kinds reported, for findings past the cap
	out    []ArgFinding
	win    *Window
	next   [6]int // argShape.find's scratch
	probe  bool   // only note whether check would report anything (hit)
	split  bool   // findings are of a joined piece
	hit    bool
}

// frame is one open object or array of the walk.
type frame struct {
	n     int  // len(path) at its start
	array bool // an array: its elements are numbered
	i     int  // the next element's number
}

// walk reads one JSON value, iteratively: however deep it nests, the walk
// keeps a slice of frames, not a stack of calls.
func (w *argWalk) walk(dec *jsontext.Decoder) error {
	var stack []frame
	for {
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			w.path = w.path[:top.n]
			if k := dec.PeekKind(); k == '}' || k == ']' {
				if _, err := dec.ReadToken(); err != nil {
					return err
				}
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					return nil
				}
				continue
			}
			if top.array {
				w.path = append(strconv.AppendInt(append(w.path, '['), int64(top.i), 10), ']')
				top.i++
			} else {
				kv, err := dec.ReadValue()
				if err != nil {
					return err
				}
				w.key, _ = jsontext.AppendUnquote(w.key[:0], kv)
				if w.secretIn(w.key) || w.joinHit(w.tail, w.key) {
					// The path is shown and logged: a key that holds a
					// secret is named by its place, not its text.
					w.path = appendArgPath(w.path, []byte("…"))
				} else {
					w.path = appendArgPath(w.path, w.key)
				}
				w.read(w.key, true)
			}
		}
		switch k := dec.PeekKind(); k {
		case '"':
			v, err := dec.ReadValue()
			if err != nil {
				return err
			}
			w.str, _ = jsontext.AppendUnquote(w.str[:0], v) // as Token.String reads it
			w.read(w.str, false)
		case '{', '[':
			if _, err := dec.ReadToken(); err != nil {
				return err
			}
			stack = append(stack, frame{n: len(w.path), array: k == '['})
			continue
		default:
			if _, err := dec.ReadToken(); err != nil {
				return err
			}
		}
		if len(stack) == 0 {
			return nil
		}
	}
}

// read checks one string, then the end of the string value before it
// joined with its start and, for a value, the end of the last string at its
// path in an earlier message (the Window) joined with its start; it keeps
// a value's end for the next.
func (w *argWalk) read(s []byte, key bool) {
	w.check(s)
	if w.joinHit(w.tail, s) {
		w.splitCheck()
	}
	if key {
		return
	}
	var before []byte
	if w.win != nil {
		before = w.win.paths[string(w.path)]
		if w.joinHit(before, s) {
			w.splitCheck()
		}
	}
	w.tail = keepEnd(w.tail, s)
	if w.win != nil {
		if w.win.paths == nil || len(w.win.paths) >= maxWindowPaths && before == nil {
			w.win.paths = map[string][]byte{}
		}
		// before was read (joinHit copied it into w.join): its array
		// takes this value's end.
		w.win.paths[string(w.path)] = keepEnd(before[:0], s)
	}
}

// keepEnd appends s to tail and keeps the last joinLen bytes.
func keepEnd(tail, s []byte) []byte {
	if len(s) >= joinLen {
		return append(tail[:0], s[len(s)-joinLen:]...)
	}
	tail = append(tail, s...)
	if len(tail) > joinLen {
		tail = tail[:copy(tail, tail[len(tail)-joinLen:])]
	}
	return tail
}

func (w *argWalk) splitCheck() {
	w.split = true
	w.check(w.join)
	w.split = false
}

// joinHit reports whether before and the start of s hold a secret
// together that neither holds alone; w.join is then the two joined.
func (w *argWalk) joinHit(before, s []byte) bool {
	if len(before) == 0 || len(s) == 0 {
		return false
	}
	head := s[:min(len(s), joinLen)]
	w.join = append(append(w.join[:0], before...), head...)
	return w.hits(w.join) && !w.hits(before) && !w.hits(head)
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
func (w *argWalk) secretIn(s []byte) bool { return w.hits(s) }

func (w *argWalk) hits(s []byte) bool {
	if len(s) < minCredential {
		return false
	}
	probe, split := w.probe, w.split
	w.probe, w.hit, w.split = true, false, false
	w.check(s)
	w.probe, w.split = probe, split
	return w.hit
}

// check reports what s holds, as it is and as normalize reads it.
func (w *argWalk) check(s []byte) {
	if len(s) < minCredential {
		return
	}
	if w.match(s) && w.probe {
		return
	}
	var changed bool
	w.norm, changed = normalize(w.norm[:0], s)
	if changed && len(w.norm) >= minCredential {
		w.match(w.norm)
	}
}

// match reports the shapes, key bodies and credential values in s; it
// returns whether a probe hit.
func (w *argWalk) match(s []byte) bool {
	w.low = asciiLower(w.low[:0], s)
	all := argShapes()
	for i := range all {
		sh := &all[i]
		if sh.find(s, w.low, w.next[:]) && w.add(ArgFinding{Kind: sh.kind}) {
			return true
		}
	}
	if keyBody(s) && w.add(ArgFinding{Kind: KindPrivateKey}) {
		return true
	}
	for i, c := range w.creds {
		if len(c.Value) >= minCredential && bytes.Contains(s, w.values[i]) {
			if w.add(ArgFinding{Kind: KindCagedCredential, Env: c.Env, Server: c.Server}) {
				return true
			}
		}
	}
	return false
}

func asciiLower(dst, s []byte) []byte {
	for _, c := range s {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

func seenKey(f ArgFinding) [2]string { return [2]string{f.Kind + "\x00" + f.Env, f.Path} }

// add records f at the current path, once per kind and path; past
// maxArgFindings, only a kind not reported yet. It reports whether the walk
// is probing and check can stop.
func (w *argWalk) add(f ArgFinding) bool {
	if w.probe {
		w.hit = true
		return true
	}
	f.Path = string(w.path)
	if f.Path == "" {
		f.Path = "arguments"
	}
	f.Split = w.split
	k := seenKey(f)
	kind := f.Kind + "\x00" + f.Env
	if w.seen[k] || len(w.out) >= maxArgFindings && w.kinds[kind] {
		return false
	}
	if w.seen == nil {
		w.seen, w.kinds = map[[2]string]bool{}, map[string]bool{}
	}
	w.seen[k], w.kinds[kind] = true, true
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
