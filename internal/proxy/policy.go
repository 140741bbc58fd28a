// Package proxy relays MCP stdio traffic between a client and a server and
// gives policies one place to look at and act on every message.
//
// Contract of Run:
//   - Every line from either peer is framed and parsed by package jsonrpc.
//     Only messages that pass reach a policy or the other peer, and they are
//     forwarded as their exact bytes (never re-encoded, ids never rewritten).
//   - A malformed message from the client is answered with a JSON-RPC error
//     (-32700 or -32600, the id echoed when it could be read); a batch from
//     the client gets -32600. A malformed message from the server is dropped
//     and logged; a batch from the server is split and each element handled
//     alone, in protocol version 2025-03-26 only (dropped otherwise).
//   - Responses are matched to requests by id value (jsonrpc.ID.Key), per
//     direction. A response that answers no pending request is dropped, so a
//     peer cannot answer twice or answer what was never asked. Policies see
//     the method of the request a response answers, and the name or uri it
//     asked for (Event.Target).
//   - The proxy's own requests (Session.Call) use string ids
//     "mcpcage-<24 random hex digits>-<n>", drawn per session; their answers
//     are consumed and never reach the client.
//   - The protocol version is taken from the server's initialize result
//     (handshake era) or from params._meta["io.modelcontextprotocol/
//     protocolVersion"] of each client request (stateless era). A version
//     outside HandshakeVersions and StatelessVersions is refused with an
//     error to the client, and so is any client request other than
//     initialize, ping and server/discover before a version is known.
//   - Observers see every final outcome before it is written. A pump does
//     not write to the peer it reads from: answers to that peer are queued
//     (256 at most) and written by a goroutine of the session. An outcome
//     an observer held (Event.Hold) is written once the hold is over, by a
//     goroutine of the session, and everything the same pump forwards to
//     that peer meanwhile waits behind it (256 messages and 1 MiB at most,
//     or one larger message alone; then the pump waits), in order.
//   - Shutdown: on client EOF or cancellation, the server's stdin is closed,
//     it gets StopTimeout to exit, then Stop; if the server goes first, each
//     client request it left unanswered (and not cancelled) gets a -32603
//     error naming its exit status. Run returns the server's exit status.
//
// Server stderr is copied to Config.Stderr line by line as "[NAME] line",
// with control characters shown as \xNN; the proxy's own lines are
// "mcpcage: [NAME] ...". Nothing but MCP messages is written to the client.
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
	// For a response: the method of the request it answers (the proxy
	// tracks the peers' pending request ids), and what that request named:
	// its params' "name" (tools/call, prompts/get), "uri" (resources/read)
	// or "taskId" (tasks/result, tasks/get, tasks/cancel) when a string, the
	// first maxTarget bytes of it; both empty when unknown. A request's params are not kept while it waits
	// for its answer: they can be as large as the line limit.
	Method string
	Target string

	holds []func() []byte
}

// Hold makes the delivery of this event's outcome wait until wait returns,
// without holding up the pump that read it: the pump goes on with the next
// message, and what it forwards to the same peer is delivered after this
// one. Call it from Observe, to keep a promise such as "a record is on disk
// before the answer it describes is delivered" while the promises of a
// burst are kept together. wait runs on a goroutine of the session; a
// message it returns is delivered instead of the outcome (say, an error
// response when the promise could not be kept), nil delivers the outcome.
func (ev *Event) Hold(wait func() []byte) {
	ev.holds = append(ev.holds, wait)
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

// Refusal is a message the proxy itself turned away before any policy saw
// it: a line that is not a valid message (too long, malformed, a batch
// where none is allowed), a request outside the session's protocol version
// or with an id still pending, or a response that answers nothing pending.
type Refusal struct {
	Dir    Direction
	ID     jsonrpc.ID // the message's id when it could be read
	Method string     // the message's method when it was valid
	Reason string     // one line, as logged
	Size   int        // bytes of the refused line
	// Answer is the error response sent back to the sender; nil when the
	// message was dropped (the server's malformed output, stray responses).
	Answer []byte
}

// RefusalObserver is implemented by policies that must also see what the
// proxy refused on its own (auditing). Like Observe, it is called
// synchronously before any answer is written.
type RefusalObserver interface {
	ObserveRefusal(ctx context.Context, s *Session, r Refusal)
}
