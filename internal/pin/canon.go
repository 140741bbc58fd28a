package pin

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// maxDepth bounds nesting in anything pinned, so a hostile definition cannot
// exhaust the stack.
const maxDepth = 128

// MaxDepth is the deepest nesting a pinned item may have; the scanner reads
// items and results to the same depth.
const MaxDepth = maxDepth

// Canonical returns the RFC 8785 form of one JSON value (JCS: members
// sorted, minimal string escapes, no whitespace, floats in ECMAScript form),
// except that integers keep their exact digits so a change beyond 2^53 is
// still seen. Nothing is dropped: an empty member ({"enum": []}, a property
// named {"IMPORTANT_...": {}}) is part of the value.
//
// Input must be valid UTF-8 JSON with no duplicate member names, nested at
// most MaxDepth deep; anything else is an error, never a guess.
func Canonical(raw []byte) ([]byte, error) {
	return canonical(raw, nil)
}

// CanonicalItem is the form in which pins compare one item of kind k: its
// Canonical form, less the top-level members itemDefaults names when their
// value is null or the empty value written there. Those are the optional
// members of the MCP schema for which "absent" and "empty" say the same to
// a client ("annotations": {} is no annotations); an empty value anywhere
// else, or under any other name, counts.
func CanonicalItem(k Kind, raw []byte) ([]byte, error) {
	return canonical(raw, itemDefaults[k])
}

// itemDefaults lists, per kind, the top-level members whose empty value is
// the same as no member: "null" (only null), "{}" (null or {}) or "[]"
// (null or []).
var itemDefaults = map[Kind]map[string]string{
	Tools: {"title": "null", "description": "null", "outputSchema": "null",
		"annotations": "{}", "execution": "{}", "_meta": "{}", "icons": "[]"},
	Prompts: {"title": "null", "description": "null",
		"arguments": "[]", "_meta": "{}", "icons": "[]"},
	Resources: {"title": "null", "description": "null", "mimeType": "null", "size": "null",
		"annotations": "{}", "_meta": "{}", "icons": "[]"},
	Templates: {"title": "null", "description": "null", "mimeType": "null",
		"annotations": "{}", "_meta": "{}", "icons": "[]"},
}

func canonical(raw []byte, defaults map[string]string) ([]byte, error) {
	dec, done := getDecoder(raw)
	defer done()
	out, _, err := normalize(dec, make([]byte, 0, len(raw)), 0, defaults)
	if err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errors.New("invalid JSON: more than one value")
	}
	v := jsontext.Value(out)
	if err := v.Canonicalize(jsontext.CanonicalizeRawInts(false)); err != nil {
		return nil, err
	}
	return v, nil
}

// normalize appends the next value, checked for depth and numbers out of
// range; in the object at depth 0 it leaves out the members defaults names
// whose value is empty in the way written there. It reports the value's
// empty form: "null", "{}", "[]" or "" for any other value.
func normalize(dec *jsontext.Decoder, dst []byte, depth int, defaults map[string]string) ([]byte, string, error) {
	if depth > maxDepth {
		return nil, "", fmt.Errorf("invalid JSON: nested deeper than %d", maxDepth)
	}
	switch dec.PeekKind() {
	case '{':
		if _, err := dec.ReadToken(); err != nil {
			return nil, "", err
		}
		dst = append(dst, '{')
		n := 0
		for dec.PeekKind() != '}' {
			name, err := dec.ReadToken()
			if err != nil {
				return nil, "", err
			}
			key := name.String()
			mark := len(dst)
			if n > 0 {
				dst = append(dst, ',')
			}
			if dst, err = jsontext.AppendQuote(dst, key); err != nil {
				return nil, "", err
			}
			dst = append(dst, ':')
			var empty string
			if dst, empty, err = normalize(dec, dst, depth+1, nil); err != nil {
				return nil, "", err
			}
			if def, ok := defaults[key]; ok && depth == 0 && (empty == "null" || empty != "" && empty == def) {
				dst = dst[:mark]
				continue
			}
			n++
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, "", err
		}
		return append(dst, '}'), emptyIf(n == 0, "{}"), nil
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return nil, "", err
		}
		dst = append(dst, '[')
		n := 0
		for dec.PeekKind() != ']' {
			if n > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, _, err = normalize(dec, dst, depth+1, nil); err != nil {
				return nil, "", err
			}
			n++
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, "", err
		}
		return append(dst, ']'), emptyIf(n == 0, "[]"), nil
	case 0:
		_, err := dec.ReadToken() // surfaces the syntax error
		if err == nil || err == io.EOF {
			err = errors.New("invalid JSON: no value")
		}
		return nil, "", err
	}
	v, err := dec.ReadValue()
	if err != nil {
		return nil, "", err
	}
	if v.Kind() == '0' {
		// JCS would clamp 1e999 and 2e999 to the same number.
		if _, err := strconv.ParseFloat(string(v), 64); err != nil {
			return nil, "", fmt.Errorf("invalid JSON: number %.40s out of range", v)
		}
	}
	return append(dst, v...), emptyIf(v.Kind() == 'n', "null"), nil
}

func emptyIf(ok bool, form string) string {
	if ok {
		return form
	}
	return ""
}
