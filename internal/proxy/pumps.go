package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

func (r *run) pumpClient(in io.Reader) {
	rd := jsonrpc.NewReader(in, r.cfg.MaxLine)
	for ; ; r.flushUnless(rd, ClientToServer) {
		line, err := rd.Next()
		if err != nil {
			var tl *jsonrpc.LineTooLongError
			if errors.As(err, &tl) {
				r.logf("refused a message from the client: %v", err)
				r.refuseClient(Refusal{Reason: err.Error(), Size: tl.Max + 1}, jsonrpc.CodeInvalidRequest)
				continue
			}
			return
		}
		if r.stopped.Load() {
			return
		}
		if blank(line) {
			continue
		}
		if jsonrpc.IsBatch(line) {
			r.refuseClient(Refusal{Reason: "JSON-RPC batches are not accepted", Size: len(line)}, jsonrpc.CodeInvalidRequest)
			continue
		}
		m, err := jsonrpc.Parse(line)
		if err != nil {
			pe := err.(*jsonrpc.ParseError)
			r.logf("refused a malformed message from the client: %s", pe.Reason)
			r.refuseClient(Refusal{ID: pe.ID, Reason: pe.Reason, Size: len(line)}, pe.Code)
			continue
		}
		r.borrowed(m)
		r.fromClient(m)
	}
}

func (r *run) fromClient(m *jsonrpc.Message) {
	ev := &Event{Dir: ClientToServer, Msg: m}
	switch m.Kind {
	case jsonrpc.KindRequest:
		if code, reason := r.admitClientRequest(m); reason != "" {
			r.refuseClient(Refusal{ID: m.ID, Method: m.Method, Reason: reason, Size: len(m.Raw)}, code)
			return
		}
	case jsonrpc.KindResponse:
		r.mu.Lock()
		p, ok := r.pendingS2C.take(m.ID.Key())
		r.mu.Unlock()
		if !ok {
			r.logf("dropped a response from the client to no pending request")
			r.refused(Refusal{Dir: ClientToServer, ID: m.ID, Reason: "a response to no pending request", Size: len(m.Raw)})
			return
		}
		ev.Method, ev.Target = p.method, p.target
	case jsonrpc.KindNotification:
		if m.Method == "notifications/cancelled" {
			r.cancelled(r.pendingC2S, m)
		}
	}
	r.inspect(ev)
}

// admitClientRequest checks a client request against the session's protocol
// era and pending ids; it returns the error to answer with, or "".
func (r *run) admitClientRequest(m *jsonrpc.Message) (code int, reason string) {
	key := m.ID.Key()
	r.mu.Lock()
	_, dup := r.pendingC2S.m[key]
	full := r.pendingC2S.full()
	r.mu.Unlock()
	if dup {
		return jsonrpc.CodeInvalidRequest, "a request with this id is still pending"
	}
	if full {
		return jsonrpc.CodeInvalidRequest, "too many requests are already waiting for the server"
	}
	if v, ok := metaVersion(m); ok {
		if !KnownVersion(v) {
			return jsonrpc.CodeInvalidParams, fmt.Sprintf("protocol version %s is not one this mcpcage understands; it knows %v and %v", clip(v), HandshakeVersions, StatelessVersions)
		}
		r.sess.setProtocolVersion(v)
		return 0, ""
	}
	switch m.Method {
	case "initialize", "ping", "server/discover":
		return 0, ""
	}
	if r.sess.ProtocolVersion() == "" {
		if r.initializing() {
			return jsonrpc.CodeInvalidRequest, clip(m.Method) + " before the server answered initialize: wait for its answer"
		}
		return jsonrpc.CodeInvalidRequest, clip(m.Method) + " before the protocol version is known: send initialize first, or carry _meta[\"" + MetaProtocolVersion + "\"]"
	}
	return 0, ""
}

// initializing reports whether an initialize of the client's is waiting for
// the server's answer.
func (r *run) initializing() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.pendingC2S.m {
		if p.method == "initialize" {
			return true
		}
	}
	return false
}

func (r *run) pumpServer() {
	rd := jsonrpc.NewReader(r.srv.Stdout(), r.cfg.MaxLine)
	for ; ; r.flushUnless(rd, ServerToClient) {
		line, err := rd.Next()
		if err != nil {
			var tl *jsonrpc.LineTooLongError
			if errors.As(err, &tl) {
				r.logf("dropped a message from the server: %v", err)
				r.refused(Refusal{Dir: ServerToClient, Reason: err.Error(), Size: tl.Max + 1})
				continue
			}
			return
		}
		if blank(line) {
			continue
		}
		if jsonrpc.IsBatch(line) {
			r.serverBatch(line)
			continue
		}
		r.serverLine(line)
	}
}

// borrowed is called with each message a pump parsed out of its Reader's
// buffer, which the next read reuses. With policies, which may keep what
// they are shown (an Async verdict, a hold, a record written later), the
// message is copied out here, once; with none, it is forwarded from the
// buffer, and only what the proxy itself keeps is copied (Own before a
// delivery is queued, or an answer is handed to Session.Call).
func (r *run) borrowed(m *jsonrpc.Message) {
	if r.copyAll {
		m.Own()
	}
}

func (r *run) serverBatch(line []byte) {
	if v := r.sess.ProtocolVersion(); v != batchVersion {
		r.logf("dropped a batch from the server: batches are legal only in protocol version %s, not %q", batchVersion, v)
		r.refused(Refusal{Dir: ServerToClient, Reason: "a batch outside protocol version " + batchVersion, Size: len(line)})
		return
	}
	items, err := jsonrpc.SplitBatch(line)
	if err != nil {
		r.logf("dropped a malformed batch from the server: %v", err)
		r.refused(Refusal{Dir: ServerToClient, Reason: "malformed batch: " + err.Error(), Size: len(line)})
		return
	}
	for _, it := range items {
		r.serverLine(it)
	}
}

func (r *run) serverLine(line []byte) {
	m, err := jsonrpc.Parse(line)
	if err != nil {
		r.logf("dropped a malformed message from the server: %v", err)
		pe := err.(*jsonrpc.ParseError)
		r.refused(Refusal{Dir: ServerToClient, ID: pe.ID, Reason: pe.Reason, Size: len(line)})
		return
	}
	r.borrowed(m)
	ev := &Event{Dir: ServerToClient, Msg: m}
	switch m.Kind {
	case jsonrpc.KindResponse:
		key := m.ID.Key()
		r.mu.Lock()
		if ch, ok := r.own[key]; ok {
			delete(r.own, key)
			r.mu.Unlock()
			if !r.copyAll {
				m.Own() // the caller keeps it, and the pump reads on
			}
			ch <- m
			return
		}
		p, ok := r.pendingC2S.take(key)
		r.mu.Unlock()
		if !ok {
			r.logf("dropped a response from the server to no pending request")
			r.refused(Refusal{Dir: ServerToClient, ID: m.ID, Reason: "a response to no pending request", Size: len(m.Raw)})
			return
		}
		ev.Method, ev.Target = p.method, p.target
		if p.method == "initialize" && m.Result != nil {
			v, _ := member(m.Result, "protocolVersion")
			if !KnownVersion(v) {
				r.logf("refused the session: the server chose protocol version %s", clip(v))
				r.finish(ev, true, Verdict{Action: Replace, Message: jsonrpc.NewErrorResponse(p.id, jsonrpc.CodeInvalidRequest,
					fmt.Sprintf("mcpcage: the server chose protocol version %s, which this mcpcage does not understand; it knows %v", clip(v), HandshakeVersions), nil)})
				return
			}
			r.sess.setProtocolVersion(v)
		}
	case jsonrpc.KindRequest:
		key := m.ID.Key()
		r.mu.Lock()
		_, dup := r.pendingS2C.m[key]
		full := r.pendingS2C.full()
		r.mu.Unlock()
		if dup {
			r.logf("refused a server request whose id is still pending")
			r.refuseServer(Refusal{ID: m.ID, Method: m.Method, Reason: "a request with this id is still pending", Size: len(m.Raw)})
			return
		}
		if full {
			r.logf("refused a server request: too many of its requests are already waiting for the client")
			r.refuseServer(Refusal{ID: m.ID, Method: m.Method, Reason: "too many requests waiting for the client", Size: len(m.Raw)})
			return
		}
	case jsonrpc.KindNotification:
		if m.Method == "notifications/cancelled" {
			r.cancelled(r.pendingS2C, m)
		}
	}
	r.inspect(ev)
}

// refused shows ref to the refusal observers.
func (r *run) refused(ref Refusal) {
	for _, o := range r.refusalObservers {
		o.ObserveRefusal(r.ctx, r.sess, ref)
	}
}

// refuseClient answers a message of the client's that the proxy refused.
func (r *run) refuseClient(ref Refusal, code int) {
	ref.Dir = ClientToServer
	ref.Answer = jsonrpc.NewErrorResponse(ref.ID, code, "mcpcage: "+ref.Reason, nil)
	r.refused(ref)
	r.replyLater(ClientToServer, ref.Answer)
}

// refuseServer answers a request of the server's that the proxy refused.
func (r *run) refuseServer(ref Refusal) {
	ref.Dir = ServerToClient
	ref.Answer = jsonrpc.NewErrorResponse(ref.ID, jsonrpc.CodeInvalidRequest, "mcpcage: "+ref.Reason, nil)
	r.refused(ref)
	r.replyLater(ServerToClient, ref.Answer)
}

func (r *run) pumpStderr(se io.Reader) {
	name := r.sess.Name
	if name == "" {
		name = "server"
	}
	prefix := "[" + name + "] "
	br := bufio.NewReaderSize(se, 4096)
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		line = append(line, frag...)
		if err == bufio.ErrBufferFull && len(line) < 64<<10 {
			continue
		}
		if len(line) > 0 {
			r.log.WriteLine(prefix + untrusted.Bytes(bytes.TrimRight(line, "\r\n")))
			line = line[:0]
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) WriteLine(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.w, s+"\n")
}

func blank(b []byte) bool {
	return len(bytes.TrimLeft(b, " \t\r")) == 0
}
