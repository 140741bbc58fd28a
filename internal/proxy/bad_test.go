package proxy

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
)

// rawClient speaks to the proxy in hand-written lines.
type rawClient struct {
	t     *testing.T
	p     *proxied
	lines chan string
}

func newRawClient(t *testing.T, p *proxied) *rawClient {
	c := &rawClient{t: t, p: p, lines: make(chan string, 100)}
	go func() {
		defer close(c.lines)
		br := bufio.NewReaderSize(p.fromProxy, 1<<20)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				c.lines <- strings.TrimSuffix(line, "\n")
			}
			if err != nil {
				io.Copy(io.Discard, p.fromProxy)
				return
			}
		}
	}()
	return c
}

func (c *rawClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.p.toProxy, line+"\n"); err != nil {
		c.t.Fatalf("write to proxy: %v", err)
	}
}

// expect returns the next line from the proxy and checks it holds every want.
func (c *rawClient) expect(want ...string) string {
	c.t.Helper()
	select {
	case line, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("proxy closed its output; wanted %q", want)
		}
		for _, w := range want {
			if !strings.Contains(line, w) {
				c.t.Fatalf("got %s\nwant it to contain %q", line, w)
			}
		}
		return line
	case <-time.After(10 * time.Second):
		c.t.Fatalf("no message from the proxy; wanted %q", want)
	}
	return ""
}

func (c *rawClient) expectEOF() {
	c.t.Helper()
	select {
	case line, ok := <-c.lines:
		if ok {
			c.t.Fatalf("unexpected message %s", line)
		}
	case <-time.After(10 * time.Second):
		c.t.Fatal("proxy did not close its output")
	}
}

func emit(id int, lines ...string) string {
	var b64 []string
	for _, l := range lines {
		b64 = append(b64, fmt.Sprintf("%q", base64.StdEncoding.EncodeToString([]byte(l))))
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"emit","params":{"b64":[%s]}}`, id, strings.Join(b64, ","))
}

const initReq = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`

func rawSession(t *testing.T, cfg Config, env ...string) (*rawClient, *proxied) {
	srv := startFixture(t, "raw", env...)
	p := startProxy(t, srv, cfg)
	c := newRawClient(t, p)
	c.send(initReq)
	c.expect(`"id":0`, `"protocolVersion"`)
	return c, p
}

func TestBadClientInput(t *testing.T) {
	c, p := rawSession(t, Config{MaxLine: 1024})
	cases := []struct{ line, want1, want2 string }{
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":{"pad":"` + strings.Repeat("a", 2000) + `"}}`, `"id":null`, "longer than the limit of 1024"},
		{`{"jsonrpc":"2.0","id":2,"method":"x","params":{"s":"` + "\xff\xfe" + `"}}`, `"id":2`, "-32700"},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"safe","Name":"evil"}}`, `"id":3`, "differ only in case"},
		{`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"safe","name":"evil"}}`, `"id":4`, "duplicate member name"},
		{`{"jsonrpc":"2.0","id":5,"Method":"tools/call"}`, `"id":5`, `must be spelled \"method\"`},
		{`[{"jsonrpc":"2.0","id":6,"method":"ping"}]`, `"id":null`, "batches are not accepted"},
		{`this is not json`, `"id":null`, "-32700"},
		{`{"jsonrpc":"2.0","id":7,"id":8,"method":"ping"}`, `"id":null`, "duplicate"},
	}
	for _, tc := range cases {
		c.send(tc.line)
		c.expect(tc.want1, tc.want2, `"error"`)
	}
	// The session goes on.
	c.send(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)
	c.expect(`"id":9`, `"echo":"tools/list"`)
	p.toProxy.Close()
	c.expectEOF()
	if code := p.wait(t); code != 0 {
		t.Errorf("exit %d", code)
	}
	if !strings.Contains(p.stderr.String(), "refused a malformed message from the client") {
		t.Errorf("refusals not logged:\n%s", p.stderr)
	}
}

func TestBadServerOutput(t *testing.T) {
	c, p := rawSession(t, Config{MaxLine: 1024})
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	c.expect(`"echo":"tools/list"`)
	c.send(`{"jsonrpc":"2.0","id":10,"method":"emit","params":{"pad":5000}}`)
	c.expect(`"id":10`)
	c.send(emit(2,
		"not json at all",
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"`+"\xc3\x28"+`"}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"x","Data":"y"}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"x","data":"y"}}`,
		`[{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"batched"}}]`,
		`{"jsonrpc":"2.0","id":1,"result":{"second":"answer"}}`,
		`{"jsonrpc":"2.0","id":424242,"result":{"unsolicited":true}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"fine"}}`,
	))
	// Only the good notification and emit's own answer get through.
	c.expect(`"data":"fine"`)
	c.expect(`"id":2`, `"result":{}`)
	c.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	c.expect(`"id":3`)
	log := p.stderr.String()
	for _, want := range []string{
		"dropped a malformed message from the server: invalid JSON",
		"dropped a message from the server: message longer than the limit of 1024 bytes",
		"UTF-8",
		"differ only in case",
		"duplicate member name",
		"dropped a batch from the server: batches are legal only in protocol version 2025-03-26",
		"dropped a response from the server to no pending request",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("stderr lacks %q:\n%s", want, log)
		}
	}
}

func TestServerBatchIn20250326(t *testing.T) {
	srv := startFixture(t, "raw", "RAW_VERSION=2025-03-26")
	var mu sync.Mutex
	var seen []string
	pol := policyFunc(func(ctx context.Context, s *Session, ev *Event) Verdict {
		if ev.Dir == ServerToClient && ev.Msg.Kind == jsonrpc.KindNotification {
			mu.Lock()
			seen = append(seen, string(ev.Msg.Params))
			mu.Unlock()
		}
		return Verdict{}
	})
	p := startProxy(t, srv, Config{Policies: []Policy{pol}})
	c := newRawClient(t, p)
	c.send(strings.Replace(initReq, "2025-06-18", "2025-03-26", 1))
	c.expect(`"protocolVersion":"2025-03-26"`)
	c.send(emit(1, `[{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"one"}}, {"jsonrpc":"2.0","method":"n","params":{"a":1,"A":2}}, {"jsonrpc":"2.0","method":"notifications/message","params":{"data":"two"}}]`))
	// Split into single messages: the client never sees a batch.
	c.expect(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"one"}}`)
	c.expect(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"two"}}`)
	c.expect(`"id":1`)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Errorf("policy saw %d batched notifications, want 2 (each inspected, the bad one dropped)", len(seen))
	}
}

type policyFunc func(ctx context.Context, s *Session, ev *Event) Verdict

func (f policyFunc) Inspect(ctx context.Context, s *Session, ev *Event) Verdict { return f(ctx, s, ev) }

func TestServerDiesMidRequest(t *testing.T) {
	c, p := rawSession(t, Config{})
	c.send(`{"jsonrpc":"2.0","id":"pending-a","method":"hang"}`)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"die","params":{"code":7}}`)
	got := map[string]bool{}
	for i := 0; i < 2; i++ {
		line := c.expect(`"error"`, "the server exited (status 7) before answering", "-32603")
		got[strings.Split(line, ",")[1]] = true
	}
	if !got[`"id":"pending-a"`] || !got[`"id":2`] {
		t.Errorf("pending requests not all answered: %v", got)
	}
	c.expectEOF()
	if code := p.wait(t); code != 7 {
		t.Errorf("Run returned %d, want the server's status 7", code)
	}
}

func TestClientDisappears(t *testing.T) {
	c, p := rawSession(t, Config{DrainTimeout: 200 * time.Millisecond})
	c.send(`{"jsonrpc":"2.0","id":1,"method":"hang"}`)
	p.toProxy.Close() // the client is gone; the raw server exits on stdin EOF
	if code := p.wait(t); code != 0 {
		t.Errorf("Run returned %d, want 0", code)
	}
}

// TestClientEOFStillGetsAnswers: a client that sends its requests and closes
// its input at once (echo REQUEST | mcpcage run ...) gets the answers of a
// server that takes longer than StopTimeout to start reading.
func TestClientEOFStillGetsAnswers(t *testing.T) {
	srv := startFixture(t, "raw", "RAW_DELAY=1s")
	p := startProxy(t, srv, Config{StopTimeout: 10 * time.Second, DrainTimeout: 30 * time.Second})
	c := newRawClient(t, p)
	c.send(initReq)
	p.toProxy.Close()
	c.expect(`"id":0`, `"protocolVersion"`)
	c.expectEOF()
	if code := p.wait(t); code != 0 {
		t.Errorf("Run returned %d, want 0 (the raw server exits 0 at EOF)", code)
	}
}

func TestStubbornServerIsStopped(t *testing.T) {
	srv := startFixture(t, "stubborn")
	p := startProxy(t, srv, Config{StopTimeout: 200 * time.Millisecond})
	// Only once it has said so does it ignore SIGTERM: closing earlier (a
	// slow start on a loaded machine) tests a fixture that dies of SIGTERM.
	waitFor(t, p.stderr, "not leaving")
	start := time.Now()
	p.toProxy.Close()
	code := p.wait(t)
	if code != 128+9 {
		t.Errorf("Run returned %d, want 137 (killed)", code)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("stop took %v", d)
	}
	// Its stderr reaches ours with its name, and cannot drive the terminal.
	if log := p.stderr.String(); !strings.Contains(log, `[fixture] stubborn: <U+001B>[31mnot leaving<U+001B>[0m`) {
		t.Errorf("stderr not relayed safely:\n%q", log)
	}
}

func TestCancelStopsSession(t *testing.T) {
	srv := startFixture(t, "raw")
	inR, inW := io.Pipe()
	defer inW.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		code, _ := Run(ctx, Config{StopTimeout: 10 * time.Second}, inR, io.Discard, srv)
		done <- code
	}()
	time.Sleep(50 * time.Millisecond)
	cancel() // what SIGINT/SIGTERM do in mcpcage run
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("Run returned %d; the raw server exits 0 when its stdin closes", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestUnknownProtocolVersionRefused(t *testing.T) {
	srv := startFixture(t, "raw", "RAW_VERSION=2031-01-01")
	p := startProxy(t, srv, Config{})
	c := newRawClient(t, p)
	c.send(initReq)
	c.expect(`"id":0`, `"error"`, "protocol version", "2031-01-01", "does not understand")
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	c.expect(`"id":1`, "before the protocol version is known")
}

func TestStatelessEra(t *testing.T) {
	srv := startFixture(t, "raw")
	sess := &Session{Name: "raw"}
	p := startProxy(t, srv, Config{Session: sess})
	c := newRawClient(t, p)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	c.expect(`"id":1`, "before the protocol version is known")
	c.send(`{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	c.expect(`"id":2`, `"echo":"server/discover"`)
	if v := sess.ProtocolVersion(); v != "2026-07-28" {
		t.Errorf("version = %q", v)
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	c.expect(`"id":3`, `"echo":"tools/list"`)
	c.send(`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}}}`)
	c.expect(`"id":4`, `"error"`, "2099-01-01", "not one this mcpcage understands")
}

func TestIDsMatchedByValue(t *testing.T) {
	// A response whose id is spelled differently from the request's is still
	// that request's answer to the client: the policy must see it as such.
	var mu sync.Mutex
	var answered []string
	pol := policyFunc(func(ctx context.Context, s *Session, ev *Event) Verdict {
		if ev.Msg.Kind == jsonrpc.KindResponse {
			mu.Lock()
			answered = append(answered, ev.Method)
			mu.Unlock()
		}
		return Verdict{}
	})
	c, _ := rawSession(t, Config{Policies: []Policy{pol}})
	c.send(`{"jsonrpc":"2.0","id":"7","method":"hang"}`)
	c.send(emit(8, `{"jsonrpc":"2.0","id":"\u0037","result":{"tools":[]}}`))
	c.expect(`"id":"\u0037"`)
	c.expect(`"id":8`)
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(answered, " ") != "initialize hang emit" {
		t.Errorf("policy saw responses to %v, want [initialize hang emit]", answered)
	}
}

func TestTooManyPending(t *testing.T) {
	defer func(n int) { maxPendingBytes = n }(maxPendingBytes)
	maxPendingBytes = 8 << 20
	c, _ := rawSession(t, Config{})
	// Requests the server never answers, whose params add up to the bound.
	pad := strings.Repeat("p", 1<<20)
	var b strings.Builder
	for i := 1; i <= maxPendingBytes>>20; i++ {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"hang","params":{"pad":%q}}`+"\n", i, pad)
	}
	b.WriteString(`{"jsonrpc":"2.0","id":"one-too-many","method":"hang"}`)
	c.send(b.String())
	c.expect(`"id":"one-too-many"`, "too many requests are already waiting for the server")
}

// hostileStderr holds, line by line, C1 controls as runes (CSI, OSC), the
// same as raw bytes, bidirectional controls, a zero-width space and an
// invalid byte: each would steer or fool a terminal if relayed as is.
const hostileStderr = "csi \u009b2J osc \u009d0;owned\u0007\n" +
	"raw \x9b2J \x9d0;owned\n" +
	"file \u202etxt.exe \u2066x\u2069\n" +
	"zw d\u200bo \xff end\n"

func TestServerStderrEscaped(t *testing.T) {
	srv := startFixture(t, "hostile-stderr")
	p := startProxy(t, srv, Config{})
	p.toProxy.Close()
	p.wait(t)
	log := p.stderr.String()
	for _, want := range []string{
		"[fixture] csi <U+009B>2J osc <U+009D>0;owned<U+0007>\n",
		"[fixture] raw <0x9B>2J <0x9D>0;owned\n",
		"[fixture] file <U+202E>txt.exe <U+2066>x<U+2069>\n",
		"[fixture] zw d<U+200B>o <0xFF> end\n",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	for _, bad := range []string{"\u009b", "\u009d", "\x9b", "\u202e", "\u2066", "\u200b", "\xff"} {
		if strings.Contains(log, bad) {
			t.Errorf("stderr relays %q raw:\n%q", bad, log)
		}
	}
}

// waitFor waits until rec holds want, for as long as a loaded machine may
// take to start a process.
func waitFor(t *testing.T, rec *recorder, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(rec.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q on the server's stderr after 30s:\n%s", want, rec.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServerLogFloodBounded: 300 malformed lines from the server give 50
// lines on stderr and, at the end, one saying how many more there were; the
// session goes on.
func TestServerLogFloodBounded(t *testing.T) {
	c, p := rawSession(t, Config{MaxLine: 1 << 20})
	var lines []string
	for i := 0; i < 300; i++ {
		lines = append(lines, "not json "+strconv.Itoa(i))
	}
	c.send(emit(2, lines...))
	c.expect(`"id":2`, `"result":{}`)
	c.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	c.expect(`"id":3`)
	p.toProxy.Close()
	c.expectEOF()
	p.wait(t)
	log := p.stderr.String()
	if n := strings.Count(log, "dropped a malformed message from the server: "); n != maxLogLines {
		t.Errorf("%d lines about malformed messages, want %d", n, maxLogLines)
	}
	if !strings.Contains(log, `250 more like "dropped a malformed message from the server" were not shown`) {
		t.Errorf("no count of the lines not shown:\n%s", log[max(0, len(log)-500):])
	}
}
