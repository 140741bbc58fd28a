package jsonrpc

import (
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// The builders make messages of mcpcage's own. Their inputs are trusted to be
// valid JSON (params, result, data) and valid UTF-8 (method, message is
// replaced where invalid); ids are echoed as their exact text.

// NewRequest returns a request with the given id, method and params (nil for none).
func NewRequest(id ID, method string, params []byte) []byte {
	b := append([]byte(`{"jsonrpc":"2.0","id":`), id.raw...)
	b = append(b, `,"method":`...)
	b = appendString(b, method)
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

// NewNotification returns a notification with the given method and params (nil for none).
func NewNotification(method string, params []byte) []byte {
	b := appendString([]byte(`{"jsonrpc":"2.0","method":`), method)
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

// NewResponse returns a successful response to id with result (nil means {}).
func NewResponse(id ID, result []byte) []byte {
	if result == nil {
		result = []byte(`{}`)
	}
	b := append([]byte(`{"jsonrpc":"2.0","id":`), idText(id)...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

// NewErrorResponse returns an error response to id (the zero ID gives
// "id":null) with code, message and optional raw JSON data.
func NewErrorResponse(id ID, code int, message string, data []byte) []byte {
	b := append([]byte(`{"jsonrpc":"2.0","id":`), idText(id)...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = appendString(b, message)
	if data != nil {
		b = append(b, `,"data":`...)
		b = append(b, data...)
	}
	return append(b, "}}"...)
}

// StringID returns the ID whose JSON text is the quoted s.
func StringID(s string) ID { return ID{raw: string(appendString(nil, s))} }

// IntID returns the ID whose JSON text is n.
func IntID(n int64) ID { return ID{raw: strconv.FormatInt(n, 10)} }

func idText(id ID) string {
	if id.raw == "" {
		return "null"
	}
	return id.raw
}

func appendString(b []byte, s string) []byte {
	// On invalid UTF-8 AppendQuote substitutes U+FFFD and still returns
	// valid JSON, which is what an error message should carry.
	out, _ := jsontext.AppendQuote(b, s)
	return out
}

// Key returns a canonical form of the id's value, equal for two ids that any
// reasonable peer would consider the same request: strings compare by their
// unescaped value ("\u0031" is "1"), numbers by their numeric value (1, 1.0
// and 1e0 are one id), and a string never equals a number. The proxy matches
// responses to requests by Key so that a differently spelled echo of an id
// cannot slip past it.
func (id ID) Key() string {
	if id.raw == "" {
		return ""
	}
	if id.raw[0] == '"' {
		if strings.IndexByte(id.raw, '\\') < 0 {
			return id.raw // no escapes: already the one spelling of its value
		}
		s, err := jsontext.AppendUnquote(nil, id.raw)
		if err != nil {
			return "x" + id.raw
		}
		q, _ := jsontext.AppendQuote(nil, s)
		return string(q)
	}
	if n, err := strconv.ParseInt(id.raw, 10, 64); err == nil {
		if k := strconv.FormatInt(n, 10); k != id.raw {
			return k
		}
		return id.raw // the usual small integer: no allocation
	}
	f, err := strconv.ParseFloat(id.raw, 64)
	if err != nil {
		return "x" + id.raw
	}
	if f == float64(int64(f)) && f >= -1<<63 && f < 1<<63 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
