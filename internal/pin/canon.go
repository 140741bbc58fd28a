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

// Canonical returns the form of one JSON value that pins compare: members
// whose value is null, {} or [] are dropped from every object at any depth
// (so "no annotations" and "annotations": {} are the same definition), then
// the result is canonicalized per RFC 8785 (JCS: members sorted, minimal
// string escapes, no whitespace, floats in ECMAScript form), except that
// integers keep their exact digits so a change beyond 2^53 is still seen.
//
// Input must be valid UTF-8 JSON with no duplicate member names; anything
// else is an error, never a guess.
func Canonical(raw []byte) ([]byte, error) {
	dec, done := getDecoder(raw)
	defer done()
	out, _, err := normalize(dec, make([]byte, 0, len(raw)), 0)
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

// normalize appends the next value with empty members dropped, and reports
// whether the value itself is null, {} or [].
func normalize(dec *jsontext.Decoder, dst []byte, depth int) ([]byte, bool, error) {
	if depth > maxDepth {
		return nil, false, fmt.Errorf("invalid JSON: nested deeper than %d", maxDepth)
	}
	switch dec.PeekKind() {
	case '{':
		if _, err := dec.ReadToken(); err != nil {
			return nil, false, err
		}
		dst = append(dst, '{')
		n := 0
		for dec.PeekKind() != '}' {
			name, err := dec.ReadToken()
			if err != nil {
				return nil, false, err
			}
			mark := len(dst)
			if n > 0 {
				dst = append(dst, ',')
			}
			if dst, err = jsontext.AppendQuote(dst, name.String()); err != nil {
				return nil, false, err
			}
			dst = append(dst, ':')
			var empty bool
			if dst, empty, err = normalize(dec, dst, depth+1); err != nil {
				return nil, false, err
			}
			if empty {
				dst = dst[:mark]
				continue
			}
			n++
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, false, err
		}
		return append(dst, '}'), n == 0, nil
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return nil, false, err
		}
		dst = append(dst, '[')
		n := 0
		for dec.PeekKind() != ']' {
			if n > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, _, err = normalize(dec, dst, depth+1); err != nil {
				return nil, false, err
			}
			n++
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, false, err
		}
		return append(dst, ']'), n == 0, nil
	case 0:
		_, err := dec.ReadToken() // surfaces the syntax error
		if err == nil || err == io.EOF {
			err = errors.New("invalid JSON: no value")
		}
		return nil, false, err
	}
	v, err := dec.ReadValue()
	if err != nil {
		return nil, false, err
	}
	if v.Kind() == '0' {
		// JCS would clamp 1e999 and 2e999 to the same number.
		if _, err := strconv.ParseFloat(string(v), 64); err != nil {
			return nil, false, fmt.Errorf("invalid JSON: number %.40s out of range", v)
		}
	}
	return append(dst, v...), v.Kind() == 'n', nil
}
