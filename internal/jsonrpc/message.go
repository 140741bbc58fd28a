// Package jsonrpc frames and strictly parses the newline-delimited JSON-RPC 2.0
// messages that MCP's stdio transport carries.
//
// Contract: a *Message returned by Parse was valid UTF-8 JSON with no duplicate
// object keys and no keys that differ only in letter case, at any depth, and its
// member names jsonrpc, id, method, params, result and error matched exactly.
// Raw holds the exact bytes that were validated; forwarding Raw forwards what was
// checked and nothing else. Security-relevant fields are never decoded with the
// case-insensitive encoding/json struct decoder.
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
	Result []byte // raw JSON of result, nil when absent
	Error  *Error // error responses
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
