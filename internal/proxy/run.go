package proxy

import (
	"context"
	"errors"
	"io"
	"time"
)

// Config sets up one proxied session.
type Config struct {
	Session  *Session
	Policies []Policy
	// MaxLine is the largest message accepted in either direction, in bytes;
	// 0 means 16 MiB.
	MaxLine int
	// Stderr receives the server's stderr, line by line, prefixed with the
	// server's name, and the proxy's own log lines. Never stdout.
	Stderr io.Writer
	// StopTimeout is how long the server gets after its stdin is closed
	// before it is stopped; 0 means 2 seconds.
	StopTimeout time.Duration
}

// Run relays messages between the client (clientIn, clientOut) and srv until
// the client goes away, ctx is cancelled or the server exits, then shuts the
// server down and returns its exit status.
func Run(ctx context.Context, cfg Config, clientIn io.Reader, clientOut io.Writer, srv Server) (int, error) {
	return 1, errors.New("proxy: not yet available")
}
