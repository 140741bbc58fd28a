package proxy

import (
	"bufio"
	"context"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
)

// holdPolicy holds the answer to id 1 until release is closed, lets id 2
// through unheld, and replaces the answer to id 3 from its hold.
type holdPolicy struct{ release chan struct{} }

func (holdPolicy) Inspect(ctx context.Context, s *Session, ev *Event) Verdict { return Verdict{} }

func (p holdPolicy) Observe(ctx context.Context, s *Session, ev *Event, v Verdict) {
	if ev.Dir != ServerToClient || ev.Msg.Kind != jsonrpc.KindResponse {
		return
	}
	switch ev.Msg.ID.String() {
	case "1":
		ev.Hold(func() []byte { <-p.release; return nil })
	case "3":
		id := ev.Msg.ID
		ev.Hold(func() []byte { return jsonrpc.NewErrorResponse(id, jsonrpc.CodeBlocked, "held and refused", nil) })
	}
}

// A held answer does not hold up the pump, but nothing to the same peer
// overtakes it; a hold's message replaces the answer.
func TestHoldKeepsOrder(t *testing.T) {
	srv := newBenchServer(t, 200)
	cinR, cinW, _ := os.Pipe()
	coutR, coutW, _ := os.Pipe()
	p := holdPolicy{release: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		Run(context.Background(), Config{Session: &Session{Name: "hold"}, Policies: []Policy{p}, StopTimeout: time.Second}, cinR, coutW, srv)
		coutW.Close()
		close(done)
	}()
	answers := make(chan string, 10)
	go func() {
		br := bufio.NewReader(coutR)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				close(answers)
				return
			}
			answers <- line
		}
	}()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	for _, id := range []string{"1", "2", "3"} {
		cinW.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{` + meta + `}}` + "\n")
	}
	select {
	case a := <-answers:
		t.Fatalf("an answer overtook the held one: %s", a)
	case <-time.After(300 * time.Millisecond):
	}
	close(p.release)
	var got []string
	for a := range answers {
		got = append(got, a)
		if len(got) == 3 {
			break
		}
	}
	if len(got) != 3 || !strings.Contains(got[0], `"id":1,`) || !strings.Contains(got[1], `"id":2,`) ||
		!strings.Contains(got[2], `"id":3,"error"`) || !strings.Contains(got[2], "held and refused") {
		t.Fatalf("answers: %q", got)
	}
	cinW.Close()
	<-done
	coutR.Close()
}

// floodServer answers the first request it reads, then sends n
// notifications of size bytes each; its stdout is an io.Pipe, so written
// counts exactly what the proxy has read from it.
type floodServer struct {
	inR, inW *os.File
	outR     *io.PipeReader
	outW     *io.PipeWriter
	written  atomic.Int64
	done     chan struct{}
}

func newFloodServer(t *testing.T, n, size int) *floodServer {
	s := &floodServer{done: make(chan struct{})}
	var err error
	if s.inR, s.inW, err = os.Pipe(); err != nil {
		t.Fatal(err)
	}
	s.outR, s.outW = io.Pipe()
	go func() {
		defer close(s.done)
		defer s.outW.Close()
		br := bufio.NewReader(s.inR)
		if _, err := br.ReadString('\n'); err != nil {
			return
		}
		write := func(b []byte) bool {
			k, err := s.outW.Write(b)
			s.written.Add(int64(k))
			return err == nil
		}
		if !write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}` + "\n")) {
			return
		}
		note := []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + strings.Repeat("n", size) + `"}}` + "\n")
		for i := 0; i < n; i++ {
			if !write(note) {
				return
			}
		}
		io.Copy(io.Discard, br)
	}()
	return s
}

func (s *floodServer) Stdin() io.WriteCloser { return s.inW }
func (s *floodServer) Stdout() io.Reader     { return s.outR }
func (s *floodServer) Stderr() io.Reader     { return nil }
func (s *floodServer) Wait() (int, error)    { <-s.done; return 0, nil }
func (s *floodServer) Stop(ctx context.Context) error {
	s.inW.Close()
	s.outR.CloseWithError(io.EOF)
	<-s.done
	s.inR.Close()
	return nil
}

// What waits behind a held answer is bounded in bytes, not only in count:
// a server that floods notifications while an answer waits for its audit
// record is read no further than heldBytes ahead (its writes wait), instead
// of being copied into memory up to 256 messages of up to --max-line each.
// Once the hold is over, everything arrives, in order.
func TestHeldOutcomesAreBoundedInBytes(t *testing.T) {
	const n, size = 64, 256 << 10 // 16 MiB of notifications
	srv := newFloodServer(t, n, size)
	cinR, cinW, _ := os.Pipe()
	coutR, coutW, _ := os.Pipe()
	p := holdPolicy{release: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		Run(context.Background(), Config{Session: &Session{Name: "flood"}, Policies: []Policy{p}, MaxLine: 1 << 20, StopTimeout: time.Second}, cinR, coutW, srv)
		coutW.Close()
		close(done)
	}()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	cinW.WriteString(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `}}` + "\n")
	// Wait until the proxy stops reading: no progress for a while, or all read.
	last, still := int64(-1), 0
	for still < 5 {
		time.Sleep(100 * time.Millisecond)
		w := srv.written.Load()
		if w == last {
			still++
		} else {
			still = 0
		}
		last = w
	}
	// The answer, then notifications up to the bound, one more that did not
	// fit (read, waiting for room), and the Reader's buffer.
	if limit := int64(heldBytes + 3*(size+200)); last > limit {
		t.Errorf("while an answer was held the proxy read %d bytes of the server's output; at most %d should wait", last, limit)
	}
	close(p.release)
	br := bufio.NewReaderSize(coutR, 1<<20)
	first, err := br.ReadString('\n')
	if err != nil || !strings.Contains(first, `"id":1,`) {
		t.Fatalf("first message to the client: %.100q, %v", first, err)
	}
	for i := 0; i < n; i++ {
		line, err := br.ReadString('\n')
		if err != nil || !strings.Contains(line, "notifications/message") || len(line) < size {
			t.Fatalf("notification %d: %.100q, %v", i, line, err)
		}
	}
	cinW.Close()
	<-done
}
