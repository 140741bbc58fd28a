package secrets

import (
	"bytes"
	"errors"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// argumentsBaseline is Arguments as it was before its rewrite (one
// regular expression pass per shape over every string, paths and probes
// allocated per node), kept to compare the rewrite with and to measure it
// against. It checks a tools/call's arguments (a JSON object, or any JSON
// value) for secrets: private keys, tokens of well-known shapes, and the
// exact values of creds, in every string and member name at any depth. It
// reports each kind at most once per path. Arguments that are not exactly
// one JSON value are also checked as one string, under the path
// "arguments".
func argumentsBaseline(args []byte, creds []Credential) []ArgFinding {
	w := baseWalk{creds: creds, seen: map[[2]string]bool{}}
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

type baseWalk struct {
	creds []Credential
	seen  map[[2]string]bool
	out   []ArgFinding
}

func (w *baseWalk) walk(dec *jsontext.Decoder, path []byte, depth int) error {
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
			p := baseArgPath(path, key)
			if w.secretIn(key) {
				// The path is shown and logged: a key that holds a
				// secret is named by its place, not its text.
				p = baseArgPath(path, "…")
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

// secretIn reports whether s holds anything check would report.
func (w *baseWalk) secretIn(s string) bool {
	if len(s) < minCredential {
		return false
	}
	probe := baseWalk{creds: w.creds, seen: map[[2]string]bool{}}
	probe.check([]byte("k"), s)
	return len(probe.out) > 0
}

func (w *baseWalk) check(path []byte, s string) {
	if len(w.out) >= maxArgFindings || len(s) < minCredential {
		return
	}
	p := string(path)
	if p == "" {
		p = "arguments"
	}
	for _, sh := range argShapes {
		if w.seen[baseSeenKey(ArgFinding{Kind: sh.kind, Path: p})] {
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

func baseSeenKey(f ArgFinding) [2]string { return [2]string{f.Kind + "\x00" + f.Env, f.Path} }

func (w *baseWalk) add(f ArgFinding) {
	k := baseSeenKey(f)
	if w.seen[k] || len(w.out) >= maxArgFindings {
		return
	}
	w.seen[k] = true
	w.out = append(w.out, f)
}
