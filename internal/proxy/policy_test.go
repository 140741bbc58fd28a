package proxy

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
)

// blockTool is the trivial policy that shows the seam: it answers calls of
// one tool itself and the server never sees them.
type blockTool struct{ name string }

func (b blockTool) Inspect(ctx context.Context, s *Session, ev *Event) Verdict {
	if ev.Dir != ClientToServer || ev.Msg.Method != "tools/call" {
		return Verdict{}
	}
	if name, _ := member(ev.Msg.Params, "name"); name == b.name {
		return Verdict{Action: Reply, Message: jsonrpc.NewErrorResponse(ev.Msg.ID, jsonrpc.CodeBlocked, "mcpcage blocked tools/call: "+b.name, nil)}
	}
	return Verdict{}
}

// observer records every final outcome and proves it ran before delivery:
// it holds each outcome back briefly and checks nothing was written yet.
type observer struct {
	mu       sync.Mutex
	outcomes []string
	started  int
	ended    []int
}

func (o *observer) Inspect(ctx context.Context, s *Session, ev *Event) Verdict { return Verdict{} }

func (o *observer) Observe(ctx context.Context, s *Session, ev *Event, v Verdict) {
	what := ev.Msg.Method
	if what == "" {
		what = "response to " + ev.Method
	}
	o.mu.Lock()
	o.outcomes = append(o.outcomes, []string{"forward", "reply", "replace", "drop"}[v.Action]+" "+what)
	o.mu.Unlock()
}

func (o *observer) SessionStart(ctx context.Context, s *Session) {
	o.mu.Lock()
	o.started++
	o.mu.Unlock()
}

func (o *observer) SessionEnd(ctx context.Context, s *Session, code int) {
	o.mu.Lock()
	o.ended = append(o.ended, code)
	o.mu.Unlock()
}

func (o *observer) has(want string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, x := range o.outcomes {
		if x == want {
			return true
		}
	}
	return false
}

func TestPolicyBlocksTool(t *testing.T) {
	obs := &observer{}
	c, p := rawSession(t, Config{Policies: []Policy{blockTool{"rm_rf"}, obs}})
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rm_rf","arguments":{}}}`)
	c.expect(`{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"mcpcage blocked tools/call: rm_rf"}}`)
	// Observe ran before the reply was written.
	if !obs.has("reply tools/call") {
		t.Error("observer did not see the reply before it was delivered")
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ls","arguments":{}}}`)
	c.expect(`"id":2`, `"echo":"tools/call"`)
	if !obs.has("forward response to tools/call") {
		t.Error("observer did not see the forwarded response before it was delivered")
	}
	p.toProxy.Close()
	p.wait(t)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.started != 1 || len(obs.ended) != 1 || obs.ended[0] != 0 {
		t.Errorf("lifecycle: started %d, ended %v", obs.started, obs.ended)
	}
}

// asker answers tools/list itself after asking the server, through
// Session.Call, what it says to a method of the proxy's own.
type asker struct{}

func (asker) Inspect(ctx context.Context, s *Session, ev *Event) Verdict {
	if ev.Dir != ClientToServer || ev.Msg.Method != "tools/list" {
		return Verdict{}
	}
	id := ev.Msg.ID
	return Verdict{Async: func(ctx context.Context) Verdict {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		resp, err := s.Call(ctx, "mcpcage/probe", []byte(`{}`))
		if err != nil {
			return Verdict{Action: Reply, Message: jsonrpc.NewErrorResponse(id, jsonrpc.CodeInternalError, err.Error(), nil)}
		}
		if !strings.HasPrefix(resp.ID.String(), `"`+ReservedIDPrefix) {
			return Verdict{Action: Reply, Message: jsonrpc.NewErrorResponse(id, jsonrpc.CodeInternalError, "id not reserved: "+resp.ID.String(), nil)}
		}
		return Verdict{Action: Reply, Message: jsonrpc.NewResponse(id, resp.Result)}
	}}
}

func TestAsyncPolicyCallsServer(t *testing.T) {
	obs := &observer{}
	c, _ := rawSession(t, Config{Policies: []Policy{asker{}, obs}})
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	// The proxy's own request and its answer never reach the client; the
	// client sees only the policy's reply built from it.
	c.expect(`{"jsonrpc":"2.0","id":1,"result":{"echo":"mcpcage/probe"}}`)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	line := c.expect(`"id":2`)
	if strings.Contains(line, ReservedIDPrefix) {
		t.Errorf("a reserved id reached the client: %s", line)
	}
	if !obs.has("reply tools/list") {
		t.Error("observer did not see the async reply")
	}
}

func TestSessionOutsideRun(t *testing.T) {
	s := &Session{}
	if _, err := s.Call(context.Background(), "x", nil); err != ErrNotRunning {
		t.Errorf("Call = %v, want ErrNotRunning", err)
	}
	if err := s.SendToClient([]byte(`{}`)); err != ErrNotRunning {
		t.Errorf("SendToClient = %v", err)
	}
}

func TestSendToClient(t *testing.T) {
	sess := &Session{Name: "raw"}
	c, _ := rawSession(t, Config{Session: sess})
	if err := sess.SendToClient([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"from mcpcage"}}`)); err != nil {
		t.Fatal(err)
	}
	c.expect(`"data":"from mcpcage"`)
	if err := sess.SendToClient([]byte(`{"not":"rpc"}`)); err == nil {
		t.Error("SendToClient accepted an invalid message")
	}
}

func TestReplaceServerResponse(t *testing.T) {
	pol := policyFunc(func(ctx context.Context, s *Session, ev *Event) Verdict {
		if ev.Dir == ServerToClient && ev.Method == "tools/list" {
			return Verdict{Action: Replace, Message: jsonrpc.NewErrorResponse(ev.Msg.ID, jsonrpc.CodeBlocked, "mcpcage blocked tools/list: changed", nil)}
		}
		return Verdict{}
	})
	c, _ := rawSession(t, Config{Policies: []Policy{pol}})
	c.send(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`)
	c.expect(`{"jsonrpc":"2.0","id":"l","error":{"code":-32001,"message":"mcpcage blocked tools/list: changed"}}`)
}

// gate holds every outcome in Observe until released.
type gate struct {
	observed chan string
	release  chan struct{}
}

func (g *gate) Inspect(ctx context.Context, s *Session, ev *Event) Verdict { return Verdict{} }

func (g *gate) Observe(ctx context.Context, s *Session, ev *Event, v Verdict) {
	if ev.Dir != ServerToClient || ev.Method != "tools/list" {
		return
	}
	g.observed <- ev.Method
	<-g.release
}

// TestObserveBeforeDelivery: while an observer has not returned, the
// outcome it is looking at has not reached the client (an audit record is
// durable before the response it records is delivered).
func TestObserveBeforeDelivery(t *testing.T) {
	g := &gate{observed: make(chan string, 1), release: make(chan struct{})}
	c, _ := rawSession(t, Config{Policies: []Policy{g}})
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	select {
	case <-g.observed:
	case <-time.After(10 * time.Second):
		t.Fatal("observer never called")
	}
	select {
	case line := <-c.lines:
		t.Fatalf("delivered before the observer returned: %s", line)
	case <-time.After(200 * time.Millisecond):
	}
	close(g.release)
	c.expect(`"id":1`, `"echo":"tools/list"`)
}

// later answers tools/call after a wait of its own (an Async verdict) and
// says Forward: the policies after it must still run on the message.
type later struct{}

func (later) Inspect(ctx context.Context, s *Session, ev *Event) Verdict {
	if ev.Dir != ClientToServer || ev.Msg.Method != "tools/call" {
		return Verdict{}
	}
	return Verdict{Async: func(ctx context.Context) Verdict { return Verdict{} }}
}

func TestAsyncForwardRunsTheRest(t *testing.T) {
	for _, ps := range [][]Policy{
		{later{}, blockTool{"rm_rf"}},
		{later{}, later{}, blockTool{"rm_rf"}}, // the second Async runs inline
	} {
		obs := &observer{}
		c, _ := rawSession(t, Config{Policies: append(ps, obs)})
		c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rm_rf","arguments":{}}}`)
		c.expect(`{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"mcpcage blocked tools/call: rm_rf"}}`)
		c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ls","arguments":{}}}`)
		c.expect(`"id":2`, `"echo":"tools/call"`)
		if !obs.has("reply tools/call") || !obs.has("forward response to tools/call") {
			t.Errorf("%d policies: the observer did not see the reply and the forwarded response", len(ps))
		}
	}
}

// badReply answers tools/call with bytes that are not a JSON-RPC message.
type badReply struct{}

func (badReply) Inspect(ctx context.Context, s *Session, ev *Event) Verdict {
	if ev.Dir != ClientToServer || ev.Msg.Method != "tools/call" {
		return Verdict{}
	}
	return Verdict{Action: Reply, Message: []byte(`{"not":"a message"}`)}
}

// TestInvalidPolicyReplyDropped: a policy's reply that is not a valid
// message never reaches the peer; the message is dropped.
func TestInvalidPolicyReplyDropped(t *testing.T) {
	obs := &observer{}
	c, _ := rawSession(t, Config{Policies: []Policy{badReply{}, obs}})
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ls","arguments":{}}}`)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	c.expect(`"id":2`)
	if !obs.has("drop tools/call") {
		t.Error("the observer did not see the invalid reply turned into a drop")
	}
}

// keeper keeps what it is shown, without copying it, as a policy may (an
// audit record written later, an Async check): the bytes must stay as they
// were while the pumps read on.
type keeper struct {
	mu   sync.Mutex
	kept [][]byte
	was  []string
}

func (k *keeper) Inspect(ctx context.Context, s *Session, ev *Event) Verdict {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, b := range [][]byte{ev.Msg.Raw, ev.Msg.Params, ev.Msg.Result} {
		if b != nil {
			k.kept = append(k.kept, b)
			k.was = append(k.was, string(b))
		}
	}
	return Verdict{}
}

func TestPolicyKeepsWhatItIsShown(t *testing.T) {
	k := &keeper{}
	c, p := rawSession(t, Config{Policies: []Policy{k}})
	for i := 1; i <= 20; i++ {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"m%d","params":{"n":%d}}`, i, i*7919, i))
		c.expect(fmt.Sprintf(`"id":%d`, i))
	}
	p.toProxy.Close()
	c.expectEOF()
	p.wait(t)
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, b := range k.kept {
		if string(b) != k.was[i] {
			t.Fatalf("a message a policy kept changed after it was shown: %q, was %q", b, k.was[i])
		}
	}
	if len(k.kept) < 80 {
		t.Errorf("the policy saw %d slices, want at least 80", len(k.kept))
	}
}

// targets records, for each response, the method and target of the request
// it answers.
type targets struct {
	mu  sync.Mutex
	got map[string]string // response id -> method + " " + target
}

func (p *targets) Inspect(ctx context.Context, s *Session, ev *Event) Verdict {
	if ev.Dir == ServerToClient && ev.Msg.Kind == jsonrpc.KindResponse {
		p.mu.Lock()
		p.got[ev.Msg.ID.String()] = ev.Method + " " + ev.Target
		p.mu.Unlock()
	}
	return Verdict{}
}

// A response's policies see what its request named (the tool, prompt or
// resource), clipped, and not the request's params, which the proxy does
// not keep while the request waits.
func TestResponseTarget(t *testing.T) {
	tp := &targets{got: map[string]string{}}
	c, p := rawSession(t, Config{Policies: []Policy{tp}})
	long := strings.Repeat("é", maxTarget) // 2 bytes a rune
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"name":"not this"},"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///a\u0062"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":5}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"` + long + `"}}`,
	} {
		c.send(line)
	}
	for i := 1; i <= 5; i++ {
		c.expect(fmt.Sprintf(`"id":%d`, i))
	}
	p.toProxy.Close()
	c.expectEOF()
	p.wait(t)
	want := map[string]string{
		"1": "tools/call echo",
		"2": "resources/read file:///ab",
		"3": "prompts/get ",
		"4": "tools/list ",
		"5": "tools/call " + long[:maxTarget],
	}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	for id, w := range want {
		if tp.got[id] != w {
			t.Errorf("answer %s: %.80q, want %.80q", id, tp.got[id], w)
		}
	}
}
