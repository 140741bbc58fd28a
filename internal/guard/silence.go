package guard

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
	"github.com/mcpcage/mcpcage/internal/proxy"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

func newSilence(cfg Config) *silence {
	return &silence{name: cfg.Name, timeout: cfg.StartTimeout, allowNet: cfg.AllowNet, log: cfg.Stderr}
}

// silence answers a client whose server says nothing at all: a server
// that is a front for a remote service hangs silently without the network
// (@stripe/mcp). Until the server's first message, each client request that
// is forwarded gets a timer; when it fires the client gets an error that says
// what to try, and the late answer, if any, is dropped.
type silence struct {
	name     string
	timeout  time.Duration
	allowNet bool
	log      io.Writer

	mu       sync.Mutex
	heard    bool
	timers   map[string]*time.Timer // by request id Key()
	timedOut map[string]bool
}

func (f *silence) Inspect(ctx context.Context, s *proxy.Session, ev *proxy.Event) proxy.Verdict {
	if f.timeout <= 0 {
		return proxy.Verdict{Action: proxy.Forward}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch ev.Dir {
	case proxy.ServerToClient:
		if !f.heard {
			f.heard = true
			f.stopAll()
		}
		if ev.Msg.Kind == jsonrpc.KindResponse && f.timedOut[ev.Msg.ID.Key()] {
			return proxy.Verdict{Action: proxy.Drop}
		}
	case proxy.ClientToServer:
		if f.heard || ev.Msg.Kind != jsonrpc.KindRequest {
			break
		}
		if f.timers == nil {
			f.timers = map[string]*time.Timer{}
		}
		id, method := ev.Msg.ID, ev.Msg.Method
		f.timers[id.Key()] = time.AfterFunc(f.timeout, func() { f.fire(s, id, method) })
	}
	return proxy.Verdict{Action: proxy.Forward}
}

// Observe drops the timer of a request that a later policy answered itself
// (a locked session): the server was never asked, its silence means nothing.
func (f *silence) Observe(ctx context.Context, s *proxy.Session, ev *proxy.Event, v proxy.Verdict) {
	if ev.Dir != proxy.ClientToServer || ev.Msg.Kind != jsonrpc.KindRequest || v.Action == proxy.Forward || v.Action == proxy.Replace {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.timers[ev.Msg.ID.Key()]; t != nil {
		t.Stop()
		delete(f.timers, ev.Msg.ID.Key())
	}
}

func (f *silence) stopAll() {
	for k, t := range f.timers {
		t.Stop()
		delete(f.timers, k)
	}
}

func (f *silence) fire(s *proxy.Session, id jsonrpc.ID, method string) {
	f.mu.Lock()
	if f.heard || f.timers[id.Key()] == nil {
		f.mu.Unlock()
		return
	}
	delete(f.timers, id.Key())
	if f.timedOut == nil {
		f.timedOut = map[string]bool{}
	}
	f.timedOut[id.Key()] = true
	f.mu.Unlock()
	msg := fmt.Sprintf("mcpcage: %q did not answer %s within %s", f.name, method, f.timeout)
	hint := ""
	if !f.allowNet {
		msg += "; it may need the network (mcpcage run --allow-net)"
		hint = "mcpcage: hint: servers that front a remote service wait silently without the network: add --allow-net if you trust it with the network"
	}
	untrusted.Fprintf(f.log, "%s\n", msg)
	if hint != "" {
		untrusted.Fprintf(f.log, "%s\n", hint)
	}
	_ = s.SendToClient(jsonrpc.NewErrorResponse(id, jsonrpc.CodeInternalError, msg, nil))
}

func (f *silence) SessionStart(ctx context.Context, s *proxy.Session) {}

func (f *silence) SessionEnd(ctx context.Context, s *proxy.Session, exitCode int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.heard = true
	f.stopAll()
}
