package proxy

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
)

// memberRaw returns the raw JSON of the member at path inside obj, an
// already validated JSON object (so member names are unique and exact).
func memberRaw(obj []byte, path ...string) ([]byte, bool) {
	if len(obj) == 0 {
		return nil, false
	}
	d := jsontext.NewDecoder(bytes.NewReader(obj))
	for i, name := range path {
		if d.PeekKind() != '{' {
			return nil, false
		}
		if _, err := d.ReadToken(); err != nil {
			return nil, false
		}
		found := false
		for d.PeekKind() == '"' {
			tok, err := d.ReadToken()
			if err != nil {
				return nil, false
			}
			if tok.String() == name {
				found = true
				break
			}
			if err := d.SkipValue(); err != nil {
				return nil, false
			}
		}
		if !found {
			return nil, false
		}
		if i == len(path)-1 {
			v, err := d.ReadValue()
			if err != nil {
				return nil, false
			}
			return bytes.Clone(v), true
		}
	}
	return nil, false
}

// member returns the string member at path, "" and false when it is absent
// or not a string.
func member(obj []byte, path ...string) (string, bool) {
	raw, ok := memberRaw(obj, path...)
	if !ok || len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	s, err := jsontext.AppendUnquote(nil, raw)
	if err != nil {
		return "", false
	}
	return string(s), true
}

// metaVersion returns params._meta["io.modelcontextprotocol/protocolVersion"]
// of a message Parse returned (m.Meta: params' _meta, found while params was
// validated; a large params is not searched again).
func metaVersion(m *jsonrpc.Message) (string, bool) {
	raw, ok := memberRaw(m.Meta, MetaProtocolVersion)
	if !ok {
		return "", false
	}
	if raw[0] != '"' {
		return string(raw), true // present but not a string: unknown
	}
	s, err := jsontext.AppendUnquote(nil, raw)
	if err != nil {
		return "", true
	}
	return string(s), true
}
