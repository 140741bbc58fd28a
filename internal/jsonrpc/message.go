// Package jsonrpc frames and strictly parses the newline-delimited JSON-RPC 2.0
// messages that MCP's stdio transport carries.
//
// Framing, byte for byte: a message is one line, the JSON text followed by
// "\n" (0x0A). A "\r" (0x0D) just before the "\n" is dropped on reading; a
// last line without a terminator is still read. Lines of only spaces and tabs
// are skipped by the proxy. A line longer than the limit (DefaultMaxLine,
// 16 MiB, unless the caller gives another) is consumed and discarded without
// being held in memory, and reported as *LineTooLongError. Messages are
// written as their exact bytes followed by one "\n", never re-encoded.
//
// Contract: a *Message returned by Parse was valid UTF-8 JSON with no duplicate
// object keys and no keys that differ only in letter case, at any depth, and its
// member names jsonrpc, id, method, params, result and error matched exactly.
// Raw holds the exact bytes that were validated; forwarding Raw forwards what was
// checked and nothing else. Security-relevant fields are never decoded with the
// case-insensitive encoding/json struct decoder.
//
// In detail, Parse refuses:
//   - invalid JSON, more than one JSON value on a line, and any JSON array
//     (a batch: see SplitBatch);
//   - invalid UTF-8 and invalid \u escapes (lone surrogates) in any string;
//   - two members of one object whose names are equal after unescaping, or
//     equal under Unicode simple case folding ("name" and "Name", "k" and
//     "\u212a" KELVIN SIGN), in any object at any depth;
//   - a top-level member whose name matches jsonrpc, id, method, params,
//     result or error only when case is ignored, and likewise code, message
//     and data inside error;
//   - "jsonrpc" other than "2.0"; an id that is not a string or a number; a
//     null id except in an error response; params that are not an object or
//     an array; a message with method and result or error, or with both
//     result and error, or with none of them; an error without an integer
//     code and a string message.
//
// Ids are kept as their exact JSON text; ID.Key gives the value two ids are
// matched by ("1", "1.0" and "1e0" match; "\u0031" matches "1" as strings; a
// string never matches a number).
package jsonrpc

// Kind says what a message is.
type Kind int

const (
	KindRequest      Kind = iota + 1 // has method and id
	KindNotification                 // has method, no id
	KindResponse                     // has id and result or error
)

// Message is one validated JSON-RPC message.
type Message struct {
	Raw    []byte // the exact validated bytes, without the line terminator
	Kind   Kind
	ID     ID     // zero for notifications
	Method string // requests and notifications
	Params []byte // raw JSON of params, nil when absent
	// Meta is the raw JSON of params' "_meta" member (params an object),
	// nil when absent: found while params was validated, so that a reader
	// of _meta need not search a large params again.
	Meta []byte
	// Name and URI are the raw JSON of params' "name" and "uri" members
	// (params an object), nil when absent, found the same way: what a
	// tools/call or prompts/get and a resources/read ask for.
	Name, URI []byte
	Result    []byte // raw JSON of result, nil when absent
	Error     *Error // error responses
}

// ID is a request id kept as its exact JSON text (a string with its quotes, or a
// number), so ids are compared and echoed without ever being rewritten.
type ID struct{ raw string }

// RawID makes an ID from JSON text that is already known to be a valid id.
func RawID(raw string) ID { return ID{raw: raw} }

// IsZero reports whether the id is absent.
func (id ID) IsZero() bool { return id.raw == "" }

// String returns the id's JSON text.
func (id ID) String() string { return id.raw }

// Error is a JSON-RPC error object.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    []byte `json:"-"` // raw JSON of data, nil when absent
}

func (e *Error) Error() string { return e.Message }

// Standard and MCP error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeBlocked is what mcpcage answers when a policy refuses a request
	// (the brief: "MCP error -32001: mcpcage blocked tools/list: ...").
	CodeBlocked = -32001
)

// Own copies m out of the buffer Parse read it from (a Reader's, through
// Next), so that m stays valid once that buffer is reused: Raw, and Params,
// Meta, Name, URI, Result and Error.Data, which are slices of Raw, then
// point into one new array of m's own. Raw keeps room for a '\n' after it,
// as ReadLine gives. Own is for messages that Parse returned; call it
// before the buffer is written again.
func (m *Message) Own() {
	n := len(m.Raw)
	var raw []byte
	if cap(m.Raw) > n {
		// append, not make: the new array is not zeroed first.
		raw = append([]byte(nil), m.Raw[:n+1]...)
	} else {
		raw = append(make([]byte, 0, n+1), m.Raw...)[:n+1]
	}
	raw[n] = '\n'
	raw = raw[:n]
	m.Params = rebase(m.Raw, raw, m.Params)
	m.Meta = rebase(m.Raw, raw, m.Meta)
	m.Name = rebase(m.Raw, raw, m.Name)
	m.URI = rebase(m.Raw, raw, m.URI)
	m.Result = rebase(m.Raw, raw, m.Result)
	if m.Error != nil {
		e := *m.Error
		e.Data = rebase(m.Raw, raw, e.Data)
		m.Error = &e
	}
	m.Raw = raw
}

// rebase returns the part of to that sub is of from. Parse slices every
// member out of the line without limiting the capacity, so a member's
// offset in the line is the difference of the capacities.
func rebase(from, to, sub []byte) []byte {
	if sub == nil {
		return nil
	}
	off := cap(from) - cap(sub)
	if off < 0 || off+len(sub) > len(from) {
		return append([]byte(nil), sub...) // not a slice of from: copy it alone
	}
	return to[off : off+len(sub)]
}
