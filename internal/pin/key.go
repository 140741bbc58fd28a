package pin

import (
	"bytes"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// decoders are reused: a fresh jsontext.Decoder costs more than the small
// values it reads.
var decoders = sync.Pool{New: func() any { return jsontext.NewDecoder(bytes.NewReader(nil)) }}

func getDecoder(b []byte) (*jsontext.Decoder, func()) {
	dec := decoders.Get().(*jsontext.Decoder)
	dec.Reset(bytes.NewReader(b))
	return dec, func() {
		dec.Reset(bytes.NewReader(nil)) // drop the reference to b
		decoders.Put(dec)
	}
}

// fastKey finds the string value of the top-level member field of an object
// without a full decode. It handles the plain case only (no escapes in the
// member names it passes or in the value); ok is false whenever anything is
// unusual, and the caller then decodes properly. raw must already be valid
// JSON, as every item from a checked message or pin file is.
func fastKey(raw []byte, field string) (key string, ok bool) {
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return "", false
	}
	i++
	for {
		i = skipWS(raw, i)
		if i >= len(raw) || raw[i] != '"' {
			return "", false
		}
		start := i + 1
		end, esc := scanString(raw, i)
		if end < 0 || esc {
			return "", false
		}
		name := raw[start:end]
		i = skipWS(raw, end+1)
		if i >= len(raw) || raw[i] != ':' {
			return "", false
		}
		i = skipWS(raw, i+1)
		if string(name) == field {
			if i >= len(raw) || raw[i] != '"' {
				return "", false
			}
			vend, esc := scanString(raw, i)
			if vend < 0 || esc {
				return "", false
			}
			return string(raw[i+1 : vend]), true
		}
		i = skipValue(raw, i)
		if i < 0 {
			return "", false
		}
		i = skipWS(raw, i)
		if i >= len(raw) {
			return "", false
		}
		if raw[i] == '}' {
			return "", false // not found: let the decoder say so
		}
		if raw[i] != ',' {
			return "", false
		}
		i++
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the index of the closing quote of the string opening
// at b[i], and whether it holds escapes; -1 when unterminated.
func scanString(b []byte, i int) (int, bool) {
	esc := false
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			esc = true
			j++
		case '"':
			return j, esc
		}
	}
	return -1, esc
}

// skipValue returns the index just after the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end, _ := scanString(b, i)
		if end < 0 {
			return -1
		}
		return end + 1
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _ := scanString(b, j)
				if end < 0 {
					return -1
				}
				j = end
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	return j
}
