// Package proxy relays MCP stdio traffic between a client and a server and
// gives policies one place to look at and act on every message.
package proxy

import (
	"context"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
)

// Direction is the way a message travels.
type Direction int

const (
	ClientToServer Direction = iota + 1
	ServerToClient
)

// Event is one valid message seen by the proxy.
type Event struct {
	Dir Direction
	Msg *jsonrpc.Message
	// For a response: the method and raw params of the request it answers
	// (the proxy tracks the peers' pending request ids), empty when unknown.
	Method string
	Params []byte
}

// Action is what a policy decides for a message.
type Action int

const (
	// Forward passes the message on unchanged (the exact bytes).
	Forward Action = iota
	// Reply answers the sender with Verdict.Message and does not forward the
	// message (e.g. an error response to a blocked request).
	Reply
	// Replace forwards Verdict.Message instead of the original.
	Replace
	// Drop discards the message.
	Drop
)

// Verdict is a policy's decision.
type Verdict struct {
	Action  Action
	Message []byte // for Reply and Replace: one complete JSON-RPC message, no newline
	// Async, when set, is run by the proxy in a goroutine it owns; its verdict
	// is then applied. Use it for work that needs Session.Call, so that the
	// pump that delivered the message is not blocked while waiting.
	Async func(ctx context.Context) Verdict
}

// Policy is consulted for every valid message in each direction, in order.
// Policies run in the order given; the first verdict that is not Forward wins
// and later policies do not see the message.
type Policy interface {
	Inspect(ctx context.Context, s *Session, ev *Event) Verdict
}

// Observer is implemented by policies that must see the final outcome of every
// message, including those another policy answered or replaced (auditing). It
// is called synchronously before the outcome is written to either peer, so a
// record can be durable before the response it describes is delivered.
type Observer interface {
	Observe(ctx context.Context, s *Session, ev *Event, v Verdict)
}

// Lifecycle is implemented by policies that want session start and end.
type Lifecycle interface {
	SessionStart(ctx context.Context, s *Session)
	SessionEnd(ctx context.Context, s *Session, exitCode int)
}
