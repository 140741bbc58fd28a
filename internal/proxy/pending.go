package proxy

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
)

type pending struct {
	id        jsonrpc.ID
	method    string
	target    string // Event.Target of its answer
	size      int    // bytes of the params (not kept)
	cancelled bool
}

// maxTarget bounds Event.Target: a name or uri is kept for the answer's
// policies (a finding says which tool returned it), not the params.
const maxTarget = 1 << 10

// requestTarget is the Event.Target of the answer to request m.
func requestTarget(m *jsonrpc.Message) string {
	var raw []byte
	switch m.Method {
	case "tools/call", "prompts/get":
		raw = m.Name
	case "resources/read":
		raw = m.URI
	case "tasks/result", "tasks/get", "tasks/cancel":
		jsonrpc.Members(m.Params, func(name string, value []byte) bool {
			if name == "taskId" {
				raw = value
				return false
			}
			return true
		})
	}
	t, _ := jsonrpc.String(raw)
	if len(t) > maxTarget {
		t = t[:maxTarget]
		for len(t) > 0 && !utf8.ValidString(t) {
			t = t[:len(t)-1]
		}
		t = strings.Clone(t) // not the whole name, kept while the request waits
	}
	return t
}

// maxPending and maxPendingBytes bound the requests each peer may have
// waiting for the other: the proxy remembers each one (its id, method and
// target) until it is answered, and counts its params' bytes. Backpressure
// through the pipes keeps an honest client far below them.
const maxPending = 1 << 16

var maxPendingBytes = 128 << 20 // a variable so that tests can lower it

// pendingSet is the requests of one peer waiting for an answer, by id key.
// It is guarded by run.mu.
type pendingSet struct {
	m     map[string]pending
	bytes int // params held
}

func (p *pendingSet) full() bool {
	return len(p.m) >= maxPending || p.bytes >= maxPendingBytes
}

func (p *pendingSet) add(key string, e pending) {
	if old, ok := p.m[key]; ok {
		p.bytes -= old.size
	}
	p.m[key] = e
	p.bytes += e.size
}

func (p *pendingSet) take(key string) (pending, bool) {
	e, ok := p.m[key]
	if ok {
		delete(p.m, key)
		p.bytes -= e.size
	}
	return e, ok
}

// call is Session.Call while the proxy runs.
func (r *run) call(ctx context.Context, method string, params []byte) (*jsonrpc.Message, error) {
	id := jsonrpc.StringID(r.idPrefix + strconv.FormatUint(r.seq.Add(1), 10))
	ch := make(chan *jsonrpc.Message, 1)
	r.mu.Lock()
	if r.stdinClosed {
		r.mu.Unlock()
		return nil, ErrNotRunning
	}
	r.own[id.Key()] = ch
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.own, id.Key())
		r.mu.Unlock()
	}()
	r.writeServer(jsonrpc.NewRequest(id, method, params), true)
	select {
	case m := <-ch:
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-r.ctx.Done():
		return nil, ErrNotRunning
	case <-r.serverGone:
		return nil, fmt.Errorf("proxy: the server exited before answering %s", method)
	}
}

// cancelled marks the pending entry a cancellation names. A late answer is
// still relayed (the peer may send one, and the client would have seen it
// without us), but a server that exits owes no answer to it.
func (r *run) cancelled(pend *pendingSet, m *jsonrpc.Message) {
	raw, ok := memberRaw(m.Params, "requestId")
	if !ok {
		return
	}
	key := jsonrpc.RawID(string(raw)).Key()
	r.mu.Lock()
	if p, ok := pend.m[key]; ok {
		p.cancelled = true
		pend.m[key] = p
	}
	r.mu.Unlock()
}

// track records a request about to be forwarded so that its response can be
// matched, before the write, so that the answer cannot outrun the record.
func (r *run) track(pend *pendingSet, m *jsonrpc.Message, raw []byte) {
	if m == nil {
		var err error
		if m, err = jsonrpc.Parse(raw); err != nil {
			return
		}
	}
	if m.Kind != jsonrpc.KindRequest {
		return
	}
	e := pending{id: m.ID, method: m.Method, target: requestTarget(m), size: len(m.Params)}
	r.mu.Lock()
	pend.add(m.ID.Key(), e)
	r.mu.Unlock()
}

// failPending answers every client request the server left unanswered.
func (r *run) failPending(code int, waitErr error) {
	r.mu.Lock()
	ps := make([]pending, 0, len(r.pendingC2S.m))
	for k, p := range r.pendingC2S.m {
		if !p.cancelled {
			ps = append(ps, p)
		}
		r.pendingC2S.take(k)
	}
	r.mu.Unlock()
	why := fmt.Sprintf("exited (status %d)", code)
	if e, ok := r.srv.(ExitReasoner); ok {
		if reason := e.ExitReason(); reason != "" {
			why = fmt.Sprintf("was %s (status %d)", reason, code)
		}
	} else if waitErr != nil {
		why = fmt.Sprintf("exited (status %d: %v)", code, waitErr)
	}
	for _, p := range ps {
		msg := fmt.Sprintf("mcpcage: the server %s before answering %s", why, clip(p.method))
		r.writeClient(jsonrpc.NewErrorResponse(p.id, jsonrpc.CodeInternalError, msg, nil), true)
	}
}
