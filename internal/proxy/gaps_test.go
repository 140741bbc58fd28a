package proxy

import (
	"bufio"
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
)

// TestKilledServerReason: a client left waiting by a server that was killed
// learns how it ended, not only a status number.
func TestKilledServerReason(t *testing.T) {
	c, p := rawSession(t, Config{})
	c.send(`{"jsonrpc":"2.0","id":"w","method":"hang"}`)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"killself"}`)
	for i := 0; i < 2; i++ {
		c.expect(`"error"`, "the server was killed by signal 9 (status 137) before answering")
	}
	c.expectEOF()
	if code := p.wait(t); code != 137 {
		t.Errorf("Run returned %d, want 137", code)
	}
}

// TestSendToClientSettles: a policy's own answer to a pending request is the
// only answer the client gets for that id: not the server's late one, not
// the error sent when the server exits, not a second one from the policy.
func TestSendToClientSettles(t *testing.T) {
	sess := &Session{Name: "raw"}
	c, p := rawSession(t, Config{Session: sess})
	c.send(`{"jsonrpc":"2.0","id":5,"method":"hang"}`)
	c.send(`{"jsonrpc":"2.0","id":6,"method":"tools/list"}`)
	c.expect(`"id":6`) // the server has read id 5 by now
	if err := sess.SendToClient(jsonrpc.NewErrorResponse(jsonrpc.IntID(5), jsonrpc.CodeInternalError, "timed out", nil)); err != nil {
		t.Fatal(err)
	}
	c.expect(`"id":5`, "timed out")
	if err := sess.SendToClient(jsonrpc.NewErrorResponse(jsonrpc.IntID(5), jsonrpc.CodeInternalError, "again", nil)); err == nil {
		t.Error("SendToClient answered id 5 a second time")
	}
	// A request the server answers cannot be answered again either.
	if err := sess.SendToClient(jsonrpc.NewResponse(jsonrpc.IntID(6), nil)); err == nil {
		t.Error("SendToClient answered id 6, which the server had answered")
	}
	c.send(`{"jsonrpc":"2.0","id":7,"method":"die","params":{"code":3}}`)
	c.expect(`"id":7`, "exited (status 3)")
	c.expectEOF() // and nothing for id 5
	p.wait(t)
}

type refusals struct {
	mu  sync.Mutex
	got []Refusal
}

func (r *refusals) Inspect(ctx context.Context, s *Session, ev *Event) Verdict { return Verdict{} }
func (r *refusals) ObserveRefusal(ctx context.Context, s *Session, ref Refusal) {
	r.mu.Lock()
	r.got = append(r.got, ref)
	r.mu.Unlock()
}

// TestRefusalsObserved: what the proxy turns away on its own reaches a
// RefusalObserver (the audit), with the answer the sender got.
func TestRefusalsObserved(t *testing.T) {
	obs := &refusals{}
	c, p := rawSession(t, Config{Policies: []Policy{obs}})
	c.send(`{"jsonrpc":"2.0","id":2,"method":"x","params":{"a":1,"A":2}}`)
	c.expect(`"id":2`, "differ only in case")
	c.send(`{"jsonrpc":"2.0","id":3,"method":"x","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01"}}}`)
	c.expect(`"id":3`, "1999-01-01")
	c.send(`{"jsonrpc":"2.0","id":5,"method":"x","params":{"_meta":{"io.modelcontextprotocol/protocol\u0056ersion":"1998-01-01"}}}`)
	c.expect(`"id":5`, "1998-01-01")
	c.send(emit(4, `{"jsonrpc":"2.0","method":"n","params":{"k":1,"k":2}}`, `{"jsonrpc":"2.0","id":99,"result":{}}`))
	c.expect(`"id":4`)
	p.toProxy.Close()
	c.expectEOF()
	p.wait(t)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	want := []struct {
		dir    Direction
		id     string
		reason string
		answer bool
	}{
		{ClientToServer, "2", "differ only in case", true},
		{ClientToServer, "3", "1999-01-01", true},
		{ClientToServer, "5", "1998-01-01", true},
		{ServerToClient, "", "duplicate member name", false},
		{ServerToClient, "99", "no pending request", false},
	}
	if len(obs.got) != len(want) {
		t.Fatalf("observed %d refusals, want %d: %+v", len(obs.got), len(want), obs.got)
	}
	for i, w := range want {
		g := obs.got[i]
		if g.Dir != w.dir || g.ID.String() != w.id || !strings.Contains(g.Reason, w.reason) || (g.Answer != nil) != w.answer || g.Size == 0 {
			t.Errorf("refusal %d = %+v (answer %s), want %+v", i, g, g.Answer, w)
		}
	}
}

// TestBlockingStdinCancel: a client stdin in blocking mode (os.Stdin on a
// pipe), which Close does not wake, still lets Run end on cancellation with
// no goroutine left reading it, and is left in blocking mode afterwards.
func TestBlockingStdinCancel(t *testing.T) {
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	probe, err := syscall.Dup(fds[0]) // shares the open file with stdin
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(probe)
	stdin := os.NewFile(uintptr(fds[0]), "stdin") // blocking, like os.Stdin
	client := os.NewFile(uintptr(fds[1]), "client")
	defer client.Close() // the client stays: only cancellation ends the session
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	srv := startFixture(t, "raw")
	before := goleak.IgnoreCurrent()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		Run(ctx, Config{Session: &Session{Name: "raw"}, StopTimeout: 5 * time.Second}, stdin, outW, srv)
		outW.Close()
		close(done)
	}()
	if _, err := client.WriteString(initReq + "\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(outR)
	if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, `"id":0`) {
		t.Fatalf("initialize: %q, %v", line, err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after cancellation with a blocking stdin")
	}
	goleak.VerifyNone(t, before)
	fl, err := unix.FcntlInt(uintptr(probe), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fl&unix.O_NONBLOCK != 0 {
		t.Error("the client's stdin was left in non-blocking mode")
	}
}

// TestClientLeavesWhileServerNotReading: the client sends more than the
// pipes hold to a server that never reads, then goes away. The client pump
// is stuck writing and cannot read the EOF; the session must end anyway.
func TestClientLeavesWhileServerNotReading(t *testing.T) {
	srv := startFixture(t, "stubborn") // never reads its stdin
	cinR, cinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	coutR, coutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer coutR.Close()
	go io.Copy(io.Discard, coutR)
	var stderr recorder
	done := make(chan struct{})
	go func() {
		Run(context.Background(), Config{Session: &Session{Name: "stubborn"}, StopTimeout: 300 * time.Millisecond,
			Stderr: writerFunc(func(b []byte) (int, error) { stderr.add(b); return len(b), nil })}, cinR, coutW, srv)
		coutW.Close()
		close(done)
	}()
	note := []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + strings.Repeat("x", 64<<10) + "\"}}\n")
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for i := 0; i < 200; i++ { // 13 MiB: far more than the pipes hold
			if _, err := cinW.Write(note); err != nil {
				return
			}
		}
	}()
	time.Sleep(time.Second) // every pipe full, the pump stuck writing
	cinW.Close()            // the client goes away
	<-wrote
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not notice the client leave while the server was not reading")
	}
	if !strings.Contains(stderr.String(), "the client left while the server was not reading") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}

// TestTerminalStdinLeftAlone: a terminal on stdin (a person trying mcpcage
// out) is shared with the shell; the proxy never switches it to
// non-blocking mode, and cancellation still ends Run.
func TestTerminalStdinLeftAlone(t *testing.T) {
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	master := os.NewFile(uintptr(mfd), "ptmx")
	defer master.Close()
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(mfd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	sfd, err := unix.Open("/dev/pts/"+strconv.Itoa(n), unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	tty := os.NewFile(uintptr(sfd), "tty") // blocking, as os.Stdin on a terminal is
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	go io.Copy(io.Discard, outR)
	srv := startFixture(t, "raw")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		Run(ctx, Config{Session: &Session{Name: "raw"}, StopTimeout: 5 * time.Second}, tty, outW, srv)
		outW.Close()
		close(done)
	}()
	time.Sleep(300 * time.Millisecond) // the pump is reading the terminal
	fl, err := unix.FcntlInt(uintptr(sfd), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fl&unix.O_NONBLOCK != 0 {
		t.Error("the terminal was switched to non-blocking mode")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after cancellation with a terminal on stdin")
	}
	master.Close() // ends the read still waiting on the terminal
	time.Sleep(100 * time.Millisecond)
	tty.Close()
}
