package proxy

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
)

// Server is a running MCP server seen through its stdio: a child process in
// tests, a container in production (internal/cage).
type Server interface {
	Stdin() io.WriteCloser
	Stdout() io.Reader
	Stderr() io.Reader // nil when the server's stderr is not separate
	// Wait blocks until the server has exited and returns its exit status.
	Wait() (int, error)
	// Stop ends the server for good (kill, remove) and releases its resources.
	// It is safe to call more than once and after Wait.
	Stop(ctx context.Context) error
}

// Session is one client-server conversation as policies see it.
type Session struct {
	Name string // the server's name (pins, audit, messages)

	mu              sync.Mutex
	protocolVersion string
	call            func(ctx context.Context, method string, params []byte) (*jsonrpc.Message, error)
	toClient        func(msg []byte) error
}

// ProtocolVersion returns the negotiated MCP protocol version, "" before it is known.
func (s *Session) ProtocolVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.protocolVersion
}

func (s *Session) setProtocolVersion(v string) {
	s.mu.Lock()
	s.protocolVersion = v
	s.mu.Unlock()
}

// ErrNotRunning is returned by Call and Notify outside a running proxy.
var ErrNotRunning = errors.New("proxy: session is not running")

// Call sends a request of the proxy's own to the server, with an id from the
// proxy's reserved namespace, and returns the server's response. The response
// is consumed here and never reaches the client.
//
// Call from a Verdict.Async function. Called from Inspect on a message from
// the server it would wait for an answer that the same goroutine has to
// read, and fail only when ctx ends; from Inspect on a client message it
// works but holds up everything else the client sends meanwhile.
func (s *Session) Call(ctx context.Context, method string, params []byte) (*jsonrpc.Message, error) {
	s.mu.Lock()
	call := s.call
	s.mu.Unlock()
	if call == nil {
		return nil, ErrNotRunning
	}
	return call(ctx, method, params)
}

// SendToClient writes one complete message of the proxy's own to the client.
func (s *Session) SendToClient(msg []byte) error {
	s.mu.Lock()
	f := s.toClient
	s.mu.Unlock()
	if f == nil {
		return ErrNotRunning
	}
	return f(msg)
}

// ExitReasoner is implemented by a Server that can say why it ended when its
// exit status alone would mislead (137 is any SIGKILL; the cage knows when it
// was the memory limit). The reason completes "the server was ...", e.g.
// "killed for using more than its memory limit (--memory)"; "" when there is
// nothing to add. It is asked after Wait has returned.
type ExitReasoner interface {
	ExitReason() string
}
