package proxy

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
)

// heldStdin is a server's stdin whose first write waits for release: a
// server that has not read yet. It records what was written before Close.
type heldStdin struct {
	started chan struct{} // closed when the first write begins
	release chan struct{}
	once    sync.Once

	mu       sync.Mutex
	buf      bytes.Buffer
	atClose  string
	isClosed bool
}

func (h *heldStdin) Write(p []byte) (int, error) {
	h.once.Do(func() { close(h.started); <-h.release })
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.isClosed {
		return 0, io.ErrClosedPipe
	}
	return h.buf.Write(p)
}

func (h *heldStdin) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.isClosed {
		h.isClosed, h.atClose = true, h.buf.String()
	}
	return nil
}

type heldServer struct{ in *heldStdin }

func (s heldServer) Stdin() io.WriteCloser        { return s.in }
func (heldServer) Stdout() io.Reader              { return bytes.NewReader(nil) }
func (heldServer) Stderr() io.Reader              { return nil }
func (heldServer) Wait() (int, error)             { return 0, nil }
func (heldServer) Stop(ctx context.Context) error { return nil }

// What the proxy queued for the server before the shutdown (here the
// -32001 answers to two server requests it refused, the first still being
// written) reaches the server before its stdin is closed: the shutdown
// begins (stdinShut) and only then does the server read.
func TestQueuedAnswersReachServerBeforeStdinCloses(t *testing.T) {
	in := &heldStdin{started: make(chan struct{}), release: make(chan struct{})}
	r := &run{
		cfg:      Config{DrainTimeout: time.Minute, StopTimeout: time.Minute},
		sess:     &Session{Name: "held"},
		srv:      heldServer{in},
		log:      &lineWriter{w: io.Discard},
		toServer: jsonrpc.NewWriter(in),
	}
	r.startReplies()
	r.startOutboxes()
	first := jsonrpc.NewErrorResponse(jsonrpc.ID{}, jsonrpc.CodeBlocked, "mcpcage: first", nil)
	second := jsonrpc.NewErrorResponse(jsonrpc.ID{}, jsonrpc.CodeBlocked, "mcpcage: second", nil)
	r.replyLater(ServerToClient, first)
	<-in.started // the writer is inside the first write
	r.replyLater(ServerToClient, second)
	closed := make(chan struct{})
	go func() { r.closeServerStdin(); close(closed) }()
	for !r.stdinShut.Load() {
		time.Sleep(time.Millisecond) // until the shutdown has begun
	}
	close(in.release)
	<-closed
	r.stopOutboxes()
	close(r.replyStop)
	r.replyDone.Wait()
	if want := string(first) + "\n" + string(second) + "\n"; in.atClose != want {
		t.Fatalf("the server's stdin was closed with %q written, not the answers queued before the shutdown %q", in.atClose, want)
	}
}
