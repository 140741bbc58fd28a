package guard

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
	"github.com/mcpcage/mcpcage/internal/proxy"
)

func msg(t *testing.T, s string) *jsonrpc.Message {
	t.Helper()
	m, err := jsonrpc.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestFirstReply(t *testing.T) {
	ctx := context.Background()
	sess := &proxy.Session{Name: "quiet"}
	log := &lockedBuffer{}
	f := &silence{name: "quiet", timeout: 30 * time.Millisecond, log: log}

	init := msg(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	if v := f.Inspect(ctx, sess, &proxy.Event{Dir: proxy.ClientToServer, Msg: init}); v.Action != proxy.Forward {
		t.Fatalf("verdict %v", v.Action)
	}
	// A request another policy answered itself has no timer.
	blocked := msg(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	f.Inspect(ctx, sess, &proxy.Event{Dir: proxy.ClientToServer, Msg: blocked})
	f.Observe(ctx, sess, &proxy.Event{Dir: proxy.ClientToServer, Msg: blocked}, proxy.Verdict{Action: proxy.Reply})

	// Wait for the timer (generously: the machine may be busy); the one of
	// id 2, had it existed, would have fired by then too.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(log.String(), "did not answer") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	out := log.String()
	if !strings.Contains(out, `"quiet" did not answer initialize within 30ms; it may need the network (mcpcage run --allow-net)`) {
		t.Errorf("no timeout line: %q", out)
	}
	if strings.Contains(out, "tools/list") {
		t.Errorf("a request answered by a policy timed out: %q", out)
	}
	// The late answer is dropped: the client already has an error for id 1.
	late := msg(t, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	if v := f.Inspect(ctx, sess, &proxy.Event{Dir: proxy.ServerToClient, Msg: late}); v.Action != proxy.Drop {
		t.Errorf("late answer: verdict %v, want Drop", v.Action)
	}

	// Once the server has spoken, nothing is timed any more.
	f2 := &silence{name: "talks", timeout: 30 * time.Millisecond, log: log}
	f2.Inspect(ctx, sess, &proxy.Event{Dir: proxy.ClientToServer, Msg: init})
	f2.Inspect(ctx, sess, &proxy.Event{Dir: proxy.ServerToClient, Msg: msg(t, `{"jsonrpc":"2.0","method":"notifications/message","params":{}}`)})
	f2.Inspect(ctx, sess, &proxy.Event{Dir: proxy.ClientToServer, Msg: blocked})
	time.Sleep(200 * time.Millisecond)
	if strings.Contains(log.String(), `"talks"`) {
		t.Errorf("a server that spoke was timed out: %q", log.String())
	}
	if v := f2.Inspect(ctx, sess, &proxy.Event{Dir: proxy.ServerToClient, Msg: late}); v.Action != proxy.Forward {
		t.Errorf("answer: verdict %v, want Forward", v.Action)
	}
	f.SessionEnd(ctx, sess, 0)
	f2.SessionEnd(ctx, sess, 0)
}
