package proxy

import (
	"github.com/mcpcage/mcpcage/internal/jsonrpc"
)

// memberRaw returns the raw JSON of the member at path inside obj, an
// already validated JSON object (so member names are unique and exact). The
// value is a slice of obj (jsonrpc.Members), not a copy.
func memberRaw(obj []byte, path ...string) ([]byte, bool) {
	for _, name := range path {
		var found []byte
		jsonrpc.Members(obj, func(n string, v []byte) bool {
			if n == name {
				found = v
				return false
			}
			return true
		})
		if found == nil {
			return nil, false
		}
		obj = found
	}
	return obj, len(path) > 0
}

// member returns the string member at path, "" and false when it is absent
// or not a string.
func member(obj []byte, path ...string) (string, bool) {
	raw, ok := memberRaw(obj, path...)
	if !ok {
		return "", false
	}
	return jsonrpc.String(raw)
}

// metaVersion returns params._meta["io.modelcontextprotocol/protocolVersion"]
// of a message Parse returned (m.Meta: params' _meta, found while params was
// validated; a large params is not searched again).
func metaVersion(m *jsonrpc.Message) (string, bool) {
	raw, ok := memberRaw(m.Meta, MetaProtocolVersion)
	if !ok {
		return "", false
	}
	if s, ok := jsonrpc.String(raw); ok {
		return s, true
	}
	return string(raw), true // present but not a string: unknown
}
