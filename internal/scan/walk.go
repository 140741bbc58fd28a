package scan

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// walkJSON scans every string of a JSON value; invalid JSON is scanned as far
// as it parses, and if nothing parses, as one string.
func (sc *scanner) walkJSON(b []byte, path string) {
	// A bytes.Buffer, not a bytes.Reader: the decoder then parses b where
	// it is, instead of copying it into a buffer of its own as it reads.
	if sc.rd == nil {
		sc.rd = new(bytes.Buffer)
	}
	*sc.rd = *bytes.NewBuffer(b)
	if sc.dec == nil {
		sc.dec = jsontext.NewDecoder(sc.rd, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	} else {
		sc.dec.Reset(sc.rd, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	}
	sc.pb = append(sc.pb[:0], path...)
	if err := sc.walk(sc.dec, 0); err != nil && err != io.EOF && sc.nstrings == 0 && len(bytes.TrimSpace(b)) > 0 {
		sc.pb = append(sc.pb[:0], path...)
		sc.text(string(b))
	}
}

// walk scans one JSON value at the path in sc.pb, which it leaves as found.
func (sc *scanner) walk(dec *jsontext.Decoder, depth int) error {
	if depth > maxDepth {
		sc.beyond(limitDepth)
		return dec.SkipValue()
	}
	if dec.PeekKind() == '"' {
		// Unquoted into a buffer kept across strings: the one copy left
		// is the string the scan reads (Token.String grows a fresh buffer
		// for a string with escapes, then copies it again).
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		sc.ident = string(sc.pb) == "name"
		sc.text(sc.unquote(v))
		sc.ident = false
		return nil
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case '{':
		return sc.walkObject(dec, depth)
	case '[':
		n := len(sc.pb)
		for i := 0; dec.PeekKind() != ']'; i++ {
			sc.pb = append(strconv.AppendInt(append(sc.pb, '['), int64(i), 10), ']')
			err := sc.walk(dec, depth+1)
			sc.pb = sc.pb[:n]
			if err != nil {
				return err
			}
		}
		_, err = dec.ReadToken()
		return err
	}
	return nil
}

// walkObject scans the members of an object whose '{' was read. Under
// sc.binary a string "data" or "blob" is held until the object ends, when
// its siblings say whether it is binary (binaryMember); if not, it is
// scanned like any member.
func (sc *scanner) walkObject(dec *jsontext.Decoder, depth int) error {
	n := len(sc.pb)
	var held []heldMember
	var typ string
	hasURI := false
	for dec.PeekKind() != '}' {
		kt, err := dec.ReadToken()
		if err != nil {
			return err
		}
		key := kt.String()
		if !schemaKeyword[key] {
			sc.pb = appendQuotedKey(sc.pb, key)
			sc.ident = true
			sc.text(key)
			sc.ident = false
			sc.pb = sc.pb[:n]
		}
		if sc.binary && (key == "data" || key == "blob") && dec.PeekKind() == '"' {
			v, err := dec.ReadValue()
			if err != nil {
				return err
			}
			held = append(held, heldMember{key, bytes.Clone(v)})
			continue
		}
		hasURI = hasURI || key == "uri"
		sc.pb = appendMember(sc.pb, key)
		if key == "type" && dec.PeekKind() == '"' {
			t, err := dec.ReadToken()
			if err != nil {
				return err
			}
			typ = t.String()
			sc.text(typ)
		} else {
			err = sc.walk(dec, depth+1)
		}
		sc.pb = sc.pb[:n]
		if err != nil {
			return err
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	for _, h := range held {
		if binaryMember(h.key, h.value, typ, hasURI) {
			continue
		}
		var s string
		if json.Unmarshal(h.value, &s) != nil {
			continue
		}
		sc.pb = appendMember(sc.pb, h.key)
		sc.text(s)
		sc.pb = sc.pb[:n]
	}
	return nil
}

type heldMember struct {
	key   string
	value []byte // the JSON string, quotes and escapes as sent
}

// binaryMember reports the members MCP defines as base64 binary: "data" of
// an image or audio content block, "blob" of resource contents. The value
// must look like base64 too (its alphabet, JSON-escaped line breaks), so
// text written there is still read.
func binaryMember(key string, v []byte, typ string, hasURI bool) bool {
	if !(key == "data" && (typ == "image" || typ == "audio") || key == "blob" && hasURI) {
		return false
	}
	for i := 1; i < len(v)-1; i++ {
		c := v[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '+', c == '/', c == '=', c == '-', c == '_':
		case c == '\\' && i+1 < len(v)-1 && (v[i+1] == 'n' || v[i+1] == 'r' || v[i+1] == '/'):
			i++
		default:
			return false
		}
	}
	return true
}

// The bounds a scan reports when it reaches them.
const (
	limitDepth uint8 = 1 << iota
	limitStrings
	limitStringBytes
)

// beyond reports, once per item, that a bound left part of it unread.
func (sc *scanner) beyond(limit uint8) {
	if sc.limits&limit != 0 {
		return
	}
	sc.limits |= limit
	r := sc.set.checks["scan-limit"]
	if r == nil {
		return
	}
	what := map[uint8]string{
		limitDepth:       "nested deeper than " + strconv.Itoa(maxDepth) + " levels",
		limitStrings:     "more than " + strconv.Itoa(maxStrings) + " strings",
		limitStringBytes: "a string longer than " + strconv.Itoa(maxStringBytes>>20) + " MiB",
	}[limit]
	sc.pok = false
	sc.add(r, what)
}

// appendMember adds .key to a path, or ["key"] when key is not a plain
// identifier.
func appendMember(p []byte, key string) []byte {
	if isIdent(key) {
		if len(p) > 0 {
			p = append(p, '.')
		}
		return append(p, key...)
	}
	return appendQuotedKey(p, key)
}

func appendQuotedKey(p []byte, key string) []byte {
	p = append(p, '[')
	p = strconv.AppendQuote(p, key)
	return append(p, ']')
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '$' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// schemaKeyword lists member names of MCP definitions and JSON Schema whose
// name is fixed by the spec: scanning them as text would only cost time.
var schemaKeyword = map[string]bool{
	"name": true, "title": true, "description": true, "inputSchema": true, "outputSchema": true,
	"annotations": true, "type": true, "properties": true, "required": true, "items": true,
	"enum": true, "const": true, "default": true, "examples": true, "pattern": true, "$comment": true,
	"allOf": true, "anyOf": true, "oneOf": true, "not": true, "$defs": true, "definitions": true,
	"$ref": true, "$schema": true, "$id": true, "format": true, "additionalProperties": true,
	"minimum": true, "maximum": true, "minLength": true, "maxLength": true, "minItems": true,
	"maxItems": true, "uniqueItems": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
	"readOnlyHint": true, "destructiveHint": true, "idempotentHint": true, "openWorldHint": true,
	"arguments": true, "uri": true, "uriTemplate": true, "mimeType": true, "_meta": true,
	"icons": true, "text": true, "content": true, "structuredContent": true, "isError": true,
	"tools": true, "tool": true, "prompts": true, "resources": true, "resourceTemplates": true,
	"nextCursor": true, "multipleOf": true, "patternProperties": true, "propertyNames": true,
	"if": true, "then": true, "else": true, "dependentSchemas": true, "dependentRequired": true,
	"contentEncoding": true, "contentMediaType": true, "deprecated": true, "readOnly": true,
	"writeOnly": true, "nullable": true, "minProperties": true, "maxProperties": true,
	"prefixItems": true, "contains": true, "unevaluatedProperties": true, "unevaluatedItems": true,
	"size": true, "src": true, "sizes": true, "theme": true,
}

// unquote returns the text of the JSON string v (quotes included, as
// ReadValue gives it: its escapes are well formed). AppendUnquote copies a
// string out byte by byte (9% of a 64 KiB result's scan); a string that is
// valid UTF-8 is copied here a stretch between escapes at a time, found by a
// vector search, and its short escapes written as AppendUnquote writes
// them. A \u escape (surrogate pairs) or invalid UTF-8 (made U+FFFD) is left
// to AppendUnquote, the whole string.
func (sc *scanner) unquote(v []byte) string {
	if len(v) < 2 || !utf8.Valid(v) {
		return sc.unquoteJSON(v)
	}
	body := v[1 : len(v)-1]
	k := bytes.IndexByte(body, '\\')
	if k < 0 {
		return string(body)
	}
	out := sc.str[:0]
	for k >= 0 {
		out = append(out, body[:k]...)
		if k+1 >= len(body) {
			return sc.unquoteJSON(v)
		}
		c := shortEscape[body[k+1]]
		if c == 0 {
			return sc.unquoteJSON(v) // \u, or not JSON
		}
		out = append(out, c)
		body = body[k+2:]
		k = bytes.IndexByte(body, '\\')
	}
	out = append(out, body...)
	sc.str = out
	return string(out)
}

// shortEscape is what a two-character JSON escape stands for.
var shortEscape = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

func (sc *scanner) unquoteJSON(v []byte) string {
	sc.str, _ = jsontext.AppendUnquote(sc.str[:0], v)
	return string(sc.str)
}
