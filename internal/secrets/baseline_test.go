package secrets

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// baseShapes are argShapes as plain regular expressions run over a whole
// string (FindAll), a word boundary written into the expression where a
// shape has one.
var baseShapes = func() []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, sh := range argShapes() {
		expr := sh.re.String()
		if sh.word {
			expr = `(?i)\b` + strings.TrimPrefix(expr, "(?i)")
		}
		out = append(out, regexp.MustCompile(expr))
	}
	return out
}()

// argumentsBaseline is Arguments written the plain way (each shape's
// regular expression over every string, recursion, paths and probes
// allocated per node), to compare the fast walk with and to measure it
// against. Its contract is Params': every string and member name at any
// depth, as it is and as normalize reads it; a secret split between two
// strings; each kind at most once per path; past the cap, a kind not yet
// reported; a value that is not exactly one JSON value also as one string.
func argumentsBaseline(args []byte, creds []Credential) []ArgFinding {
	w := baseWalk{creds: creds, seen: map[[2]string]bool{}, kinds: map[string]bool{}}
	dec := jsontext.NewDecoder(bytes.NewReader(args), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	err := w.walk(dec, nil)
	if err == nil {
		_, err = dec.ReadToken()
		if errors.Is(err, io.EOF) {
			err = nil
		} else if err == nil {
			err = errors.New("more than one value")
		}
	}
	if err != nil && len(bytes.TrimSpace(args)) > 0 {
		w.check(nil, string(args), false)
	}
	sort.SliceStable(w.out, func(i, j int) bool { return w.out[i].Path < w.out[j].Path })
	return w.out
}

type baseWalk struct {
	creds []Credential
	seen  map[[2]string]bool
	kinds map[string]bool
	out   []ArgFinding
	tail  string
}

func (w *baseWalk) walk(dec *jsontext.Decoder, path []byte) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case '"':
		w.read(path, tok.String(), false)
	case '{':
		for dec.PeekKind() != '}' {
			kt, err := dec.ReadToken()
			if err != nil {
				return err
			}
			key := kt.String()
			p := baseArgPath(path, key)
			if w.any(key) || w.joined(w.tail, key) != "" {
				// The path is shown and logged: a key that holds a
				// secret is named by its place, not its text.
				p = baseArgPath(path, "…")
			}
			w.read(p, key, true)
			if err := w.walk(dec, p); err != nil {
				return err
			}
		}
		_, err = dec.ReadToken()
		return err
	case '[':
		for i := 0; dec.PeekKind() != ']'; i++ {
			p := append(strconv.AppendInt(append(append([]byte(nil), path...), '['), int64(i), 10), ']')
			if err := w.walk(dec, p); err != nil {
				return err
			}
		}
		_, err = dec.ReadToken()
		return err
	}
	return nil
}

// joined is before and the start of s when the two
// hold a secret together that neither holds alone, else "".
func (w *baseWalk) joined(before, s string) string {
	if before == "" || s == "" {
		return ""
	}
	head := s[:min(len(s), joinLen)]
	if j := before + head; w.any(j) && !w.any(before) && !w.any(head) {
		return j
	}
	return ""
}

func (w *baseWalk) read(path []byte, s string, key bool) {
	w.check(path, s, false)
	if j := w.joined(w.tail, s); j != "" {
		w.check(path, j, true)
	}
	if key {
		return
	}
	w.tail += s
	if len(w.tail) > joinLen {
		w.tail = w.tail[len(w.tail)-joinLen:]
	}
}

// baseArgPath adds .key to a path, or ["key"] when key is not a plain
// identifier (the path is shown and logged, and a key is the model's text).
func baseArgPath(path []byte, key string) []byte {
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

// any reports whether s holds anything check would report.
func (w *baseWalk) any(s string) bool {
	if len(s) < minCredential {
		return false
	}
	probe := baseWalk{creds: w.creds, seen: map[[2]string]bool{}, kinds: map[string]bool{}}
	probe.check([]byte("k"), s, false)
	return len(probe.out) > 0
}

func (w *baseWalk) check(path []byte, s string, split bool) {
	if len(s) < minCredential {
		return
	}
	p := string(path)
	if p == "" {
		p = "arguments"
	}
	w.match(p, s, split)
	if n, changed := normalize(nil, []byte(s)); changed && len(n) >= minCredential {
		w.match(p, string(n), split)
	}
}

func (w *baseWalk) match(p, s string, split bool) {
	for i, sh := range argShapes() {
		for _, m := range baseShapes[i].FindAllStringSubmatchIndex(s, 4) {
			if sh.tok > 0 && !tokenLike(s[m[2*sh.tok]:m[2*sh.tok+1]]) && !(sh.kind == KindAWS && awsExact([]byte(s), m[0], m[1])) {
				continue
			}
			if sh.kind == KindOpenAI && strings.HasPrefix(strings.ToLower(s[m[0]:]), "sk-ant-") {
				continue // an Anthropic key, reported as one
			}
			w.add(ArgFinding{Kind: sh.kind, Path: p, Split: split})
			break
		}
	}
	if keyBody([]byte(s)) {
		w.add(ArgFinding{Kind: KindPrivateKey, Path: p, Split: split})
	}
	for _, c := range w.creds {
		if len(c.Value) >= minCredential && strings.Contains(s, c.Value) {
			w.add(ArgFinding{Kind: KindCagedCredential, Path: p, Env: c.Env, Server: c.Server, Split: split})
		}
	}
}

func (w *baseWalk) add(f ArgFinding) {
	k := seenKey(f)
	kind := f.Kind + "\x00" + f.Env
	if w.seen[k] || len(w.out) >= maxArgFindings && w.kinds[kind] {
		return
	}
	w.seen[k], w.kinds[kind] = true, true
	w.out = append(w.out, f)
}
