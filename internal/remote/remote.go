// Package remote is the transport of a remote MCP server: it speaks
// Streamable HTTP (and the older HTTP+SSE, when that is all a server has) to
// one URL, and stdio to the proxy, so that a remote server passes the same
// guard as a caged one (internal/proxy.Server). It holds no policy: what
// the server sends is written to Stdout as it came, one message a line, for
// the proxy's strict parser and the chain to judge.
//
// What it keeps: every request goes to the URL's origin only (a redirect
// elsewhere is refused, never followed); the user's headers go with it and
// nowhere else; no message, line or event is held past the proxy's bound
// (MaxLine); a server that answers with an error status, a body that is not
// JSON, or nothing, gives the client a JSON-RPC error for that request, and
// the server's body is never shown.
package remote

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Options are a remote session's.
type Options struct {
	URL *url.URL
	// Header goes with every request to URL's origin (the user's --header
	// values, already expanded).
	Header http.Header
	// MaxLine bounds every message and event the server sends, in bytes.
	MaxLine int
	// UserAgent names mcpcage to the server.
	UserAgent string
	// Transport carries the requests; nil: a clone of Go's default.
	Transport http.RoundTripper
	// Auth, when not nil, gives each request its bearer token (unless
	// Header has an Authorization) and logs in when the server answers 401.
	Auth Authorizer
}

// Authorizer is the OAuth side of a session (internal/oauth).
type Authorizer interface {
	// Token is the access token to send, "" for none yet.
	Token() (string, error)
	// Unauthorized runs a login after a 401 whose WWW-Authenticate
	// headers are challenge; nil means try again.
	Unauthorized(ctx context.Context, challenge []string) error
}

// inFlight bounds the requests sent at once; the next waits for one to
// end. Each answer holds at most one message of MaxLine bytes at a time
// (and the server's own stream one more), so a server's answers hold at
// most (inFlight+1) × MaxLine: 144 MiB at the default 16m, as a caged
// server's pending requests may (internal/proxy).
const inFlight = 8

// Server is a remote MCP server behind its URL. It implements proxy.Server.
type Server struct {
	opts   Options
	origin string
	client *http.Client

	ctx    context.Context
	cancel context.CancelFunc

	inR  *io.PipeReader
	inW  *io.PipeWriter
	outR *io.PipeReader
	outW *io.PipeWriter
	errR *io.PipeReader
	errW *io.PipeWriter

	outMu sync.Mutex // one line at a time on outW
	errMu sync.Mutex

	mu       sync.Mutex
	session  string   // Mcp-Session-Id, once the server gave one
	protocol string   // the protocol version initialize agreed on
	legacy   *url.URL // HTTP+SSE: where messages are posted ("": Streamable HTTP)

	reqs     sync.WaitGroup // requests in flight
	streams  sync.WaitGroup // the server's own streams (GET)
	sem      chan struct{}
	done     chan struct{}
	stopOnce sync.Once
	endOnce  sync.Once
}

// CheckURL refuses what mcpcage will not talk to: a scheme other than
// https (http only to a loopback address, where nothing travels), user
// information in the URL (a password on the command line), or no host.
func CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("the URL does not parse: %v", errors.Unwrap(err))
	}
	if u.User != nil {
		return nil, errors.New("the URL carries a user name or password; give credentials with --header 'Authorization: Bearer ${TOKEN}' instead")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !Loopback(u.Hostname()) {
			return nil, fmt.Errorf("the URL %q is plain http to a host that is not this machine: headers and tokens would travel in clear; use https", Redacted(u))
		}
	default:
		return nil, fmt.Errorf("the URL %q is not http or https", Redacted(u))
	}
	if u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("the URL %q has no host", Redacted(u))
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// Loopback says whether host is this machine: localhost, or an address in
// 127.0.0.0/8 or ::1.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Redacted is u for records and messages: scheme, host and path, each
// query value replaced by "…" (a query may carry a key).
func Redacted(u *url.URL) string {
	out := u.Scheme + "://" + u.Host + u.EscapedPath()
	if u.RawQuery != "" {
		var keys []string
		for _, kv := range strings.Split(u.RawQuery, "&") {
			k, _, _ := strings.Cut(kv, "=")
			keys = append(keys, k+"=…")
		}
		out += "?" + strings.Join(keys, "&")
	}
	return out
}

func originOf(u *url.URL) string { return strings.ToLower(u.Scheme + "://" + u.Host) }

// Dial prepares a session with the server at opts.URL; nothing is sent
// before the proxy's first message.
func Dial(opts Options) (*Server, error) {
	if opts.URL == nil {
		return nil, errors.New("remote: no URL")
	}
	if opts.MaxLine <= 0 {
		opts.MaxLine = 4 << 20
	}
	rt := opts.Transport
	if rt == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = 0 // a tool may think for minutes
		t.MaxIdleConnsPerHost = inFlight
		rt = t
	}
	s := &Server{opts: opts, origin: originOf(opts.URL), sem: make(chan struct{}, inFlight), done: make(chan struct{})}
	s.client = &http.Client{
		Transport: rt,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if originOf(req.URL) != s.origin {
				return fmt.Errorf("the server redirected to another origin (%s); mcpcage sends its requests and headers to %s only", Redacted(req.URL), s.origin)
			}
			if len(via) >= 5 {
				return errors.New("the server redirected more than 5 times")
			}
			return nil
		},
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.inR, s.inW = io.Pipe()
	s.outR, s.outW = io.Pipe()
	s.errR, s.errW = io.Pipe()
	go s.run()
	return s, nil
}

func (s *Server) Stdin() io.WriteCloser { return s.inW }
func (s *Server) Stdout() io.Reader     { return s.outR }
func (s *Server) Stderr() io.Reader     { return s.errR }

// Wait returns once the client's side has ended and every request and
// stream is done: 0, a remote server has no exit status of its own.
func (s *Server) Wait() (int, error) {
	<-s.done
	return 0, nil
}

// Stop ends the session: the server is told (DELETE, a second at most),
// every request and stream is cancelled.
func (s *Server) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.inR.CloseWithError(io.ErrClosedPipe)
		s.endSession(ctx)
		s.cancel()
		// Nothing reads what is left once the proxy stops.
		s.outR.CloseWithError(io.ErrClosedPipe)
		s.errR.CloseWithError(io.ErrClosedPipe)
	})
	<-s.done
	return nil
}

// run reads the proxy's messages, one a line, and sends each; when the
// proxy closes its end, it waits for what is in flight and ends.
func (s *Server) run() {
	defer close(s.done)
	defer func() {
		// The client's side has ended: what is in flight is answered,
		// then the server is told and its streams closed.
		s.reqs.Wait()
		s.endSession(s.ctx)
		s.cancel()
		s.streams.Wait()
		s.outW.Close()
		s.errW.Close()
	}()
	rd := newLineReader(s.inR, s.opts.MaxLine)
	initialized := false
	for {
		line, err := rd.next()
		if err != nil {
			return
		}
		var head struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(line, &head) // the proxy sent it: it parses
		isRequest := head.Method != "" && len(head.ID) > 0 && string(head.ID) != "null"
		if head.Method == "initialize" && !initialized {
			// The session's id comes with its answer: nothing else goes
			// before it.
			initialized = true
			s.initialize(line, head.ID)
			continue
		}
		select {
		case s.sem <- struct{}{}:
		case <-s.ctx.Done():
			return
		}
		s.reqs.Add(1)
		go func() {
			defer s.reqs.Done()
			defer func() { <-s.sem }()
			s.send(line, head.ID, isRequest)
		}()
	}
}

// initialize sends the first request; on a Streamable HTTP server its
// answer names the session, then the server's own stream is opened. A
// server that refuses the POST the way an HTTP+SSE server does (400, 404,
// 405) is tried that older way.
func (s *Server) initialize(line []byte, id json.RawMessage) {
	resp, err := s.post(s.opts.URL, line)
	if err != nil {
		s.answerError(id, err.Error())
		return
	}
	switch resp.StatusCode {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
		resp.Body.Close()
		if err := s.openLegacy(); err != nil {
			s.answerError(id, fmt.Sprintf("the server at %s answered HTTP %d to a Streamable HTTP POST, and %v", Redacted(s.opts.URL), resp.StatusCode, err))
			return
		}
		s.send(line, id, true)
		return
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		if !validSession(sid) {
			resp.Body.Close()
			s.answerError(id, "the server's Mcp-Session-Id is not a short string of visible ASCII; the session was not started")
			return
		}
		s.mu.Lock()
		s.session = sid
		s.mu.Unlock()
	}
	s.readAnswer(resp, id, true, func(msg []byte) {
		var r struct {
			ID     json.RawMessage `json:"id"`
			Result struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"result"`
		}
		if json.Unmarshal(msg, &r) == nil && bytes.Equal(r.ID, id) && validSession(r.Result.ProtocolVersion) {
			s.mu.Lock()
			s.protocol = r.Result.ProtocolVersion
			s.mu.Unlock()
		}
	})
	// The server's own messages (requests of the client, notifications
	// not tied to a request) come on a stream of their own, when it has
	// one.
	s.streams.Add(1)
	go func() {
		defer s.streams.Done()
		s.listen()
	}()
}

// validSession: visible ASCII (0x21-0x7E), as the specification requires
// of a session id, and at most 256 bytes.
func validSession(v string) bool {
	if v == "" || len(v) > 256 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x21 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

// send posts one message and passes on what comes back.
func (s *Server) send(line []byte, id json.RawMessage, isRequest bool) {
	s.mu.Lock()
	target := s.legacy
	s.mu.Unlock()
	if target == nil {
		target = s.opts.URL
	}
	resp, err := s.post(target, line)
	if err != nil {
		if isRequest {
			s.answerError(id, err.Error())
		} else {
			s.say("%v", err)
		}
		return
	}
	if target != s.opts.URL {
		// HTTP+SSE: the answer comes on the stream.
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if resp.StatusCode/100 != 2 && isRequest {
			s.answerError(id, fmt.Sprintf("the server answered HTTP %d", resp.StatusCode))
		}
		return
	}
	s.readAnswer(resp, id, isRequest, nil)
}

// post sends one message to target with the user's headers and the
// session's; a 401 asking for an OAuth token gets a login (one at a time),
// then the same message once more.
func (s *Server) post(target *url.URL, body []byte) (*http.Response, error) {
	resp, err := s.postOnce(target, body)
	if err != nil {
		return nil, err
	}
	challenge := resp.Header.Values("WWW-Authenticate")
	if resp.StatusCode != http.StatusUnauthorized || s.opts.Auth == nil || s.opts.Header.Get("Authorization") != "" || !bearerChallenge(challenge) {
		return resp, nil
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if err := s.opts.Auth.Unauthorized(s.ctx, challenge); err != nil {
		return nil, err
	}
	return s.postOnce(target, body)
}

func (s *Server) postOnce(target *url.URL, body []byte) (*http.Response, error) {
	req, err := s.request(s.ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, s.transportError(err)
	}
	return resp, nil
}

// request is a request to target with the user's headers, the session's
// and its bearer token.
func (s *Server) request(ctx context.Context, method string, target *url.URL, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, target.String(), body)
	if err != nil {
		return nil, err
	}
	s.headers(req)
	if err := s.bearer(req); err != nil {
		return nil, err
	}
	return req, nil
}

// openStream opens an event stream from the URL (GET): the server's own
// stream, or an HTTP+SSE session's.
func (s *Server) openStream() (*http.Response, error) {
	req, err := s.request(s.ctx, http.MethodGet, s.opts.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, s.transportError(err)
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != http.StatusOK || mt != "text/event-stream" {
		resp.Body.Close()
		return nil, fmt.Errorf("its GET (HTTP+SSE) answered HTTP %d with %q", resp.StatusCode, clip(mt, 64))
	}
	return resp, nil
}

// bearerChallenge says whether a 401's WWW-Authenticate asks for a Bearer
// token (OAuth); a server that asks for nothing, or for another scheme,
// wants what --header gives.
func bearerChallenge(challenge []string) bool {
	for _, c := range challenge {
		if f := strings.Fields(c); len(f) > 0 && strings.EqualFold(strings.TrimSuffix(f[0], ","), "bearer") {
			return true
		}
	}
	return false
}

// bearer gives req the session's access token, when there is one and the
// user gave no Authorization of their own.
func (s *Server) bearer(req *http.Request) error {
	if s.opts.Auth == nil || s.opts.Header.Get("Authorization") != "" {
		return nil
	}
	tok, err := s.opts.Auth.Token()
	if err != nil {
		return err
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return nil
}

func (s *Server) headers(req *http.Request) {
	for k, vs := range s.opts.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if s.opts.UserAgent != "" {
		req.Header.Set("User-Agent", s.opts.UserAgent)
	}
	s.mu.Lock()
	if s.session != "" {
		req.Header.Set("Mcp-Session-Id", s.session)
	}
	if s.protocol != "" {
		req.Header.Set("Mcp-Protocol-Version", s.protocol)
	}
	s.mu.Unlock()
}

// transportError is a failed request in one line, without the URL's query.
func (s *Server) transportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if s.ctx.Err() != nil {
		return errors.New("the session ended")
	}
	return fmt.Errorf("cannot reach %s: %v", Redacted(s.opts.URL), err)
}

// readAnswer passes on the server's answer to one POST: a JSON body, or
// the events of a stream, each as one line. A request the server answers
// with an error status, or with nothing, is answered with an error.
func (s *Server) readAnswer(resp *http.Response, id json.RawMessage, isRequest bool, seen func([]byte)) {
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusAccepted && !isRequest {
		return
	}
	if resp.StatusCode/100 != 2 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		why := fmt.Sprintf("the server answered HTTP %d", resp.StatusCode)
		switch {
		case resp.StatusCode == http.StatusUnauthorized:
			why += " (it asks for authorization: give a token with --header 'Authorization: Bearer ${TOKEN}')"
		case resp.StatusCode == http.StatusNotFound && s.sessionID() != "":
			why += " (the server ended the session: start the client's session again)"
		}
		if isRequest {
			s.answerError(id, why)
		} else {
			s.say("%s", why)
		}
		return
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	answered := false
	pass := func(msg []byte) {
		if seen != nil {
			seen(msg)
		}
		if isRequest && answers(msg, id) {
			answered = true
		}
		s.emit(msg)
	}
	switch mt {
	case "text/event-stream":
		if err := s.readStream(resp.Body, pass); err != nil && isRequest && !answered {
			s.answerError(id, err.Error())
			return
		}
	case "application/json":
		body, err := io.ReadAll(io.LimitReader(resp.Body, int64(s.opts.MaxLine)+1))
		switch {
		case err != nil:
			if isRequest {
				s.answerError(id, s.transportError(err).Error())
			}
			return
		case len(body) > s.opts.MaxLine:
			if isRequest {
				s.answerError(id, fmt.Sprintf("the server's answer is over %d bytes; it was dropped (raise --max-line if the server is trusted to send that much)", s.opts.MaxLine))
			}
			return
		}
		if !json.Valid(body) {
			if isRequest {
				s.answerError(id, "the server's answer is not JSON")
			}
			return
		}
		pass(body)
	default:
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		if isRequest {
			s.answerError(id, fmt.Sprintf("the server answered with content of type %q, not JSON", clip(mt, 64)))
		}
		return
	}
	if isRequest && !answered {
		s.answerError(id, "the server ended its answer without answering the request")
	}
}

// answers says whether msg is the answer to the request id.
func answers(msg []byte, id json.RawMessage) bool {
	var r struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	return json.Unmarshal(msg, &r) == nil && r.Method == "" && bytes.Equal(bytes.TrimSpace(r.ID), bytes.TrimSpace(id))
}

// readStream passes on each event's data until the stream ends.
func (s *Server) readStream(body io.Reader, pass func([]byte)) error {
	sr := newSSEReader(body, s.opts.MaxLine)
	for {
		ev, err := sr.next()
		if err != nil {
			if errors.Is(err, errEventTooLong) {
				return tooLong(s.opts.MaxLine)
			}
			if err == io.EOF || s.ctx.Err() != nil {
				return nil
			}
			return s.transportError(err)
		}
		if ev.Type != "" && ev.Type != "message" {
			continue
		}
		pass(ev.Data)
	}
}

// listen opens the server's own stream (GET), if it has one, and passes
// on what comes on it until it ends.
func (s *Server) listen() {
	resp, err := s.openStream()
	if err != nil {
		return // 405: the server has no stream of its own
	}
	defer resp.Body.Close()
	if err := s.readStream(resp.Body, s.emit); err != nil {
		s.say("%v", err)
	}
}

// openLegacy starts an HTTP+SSE session (protocol 2024-11-05): a stream
// from the URL whose first event names where messages are posted, on the
// same origin; what the server sends comes on that stream.
func (s *Server) openLegacy() error {
	resp, err := s.openStream()
	if err != nil {
		return err
	}
	sr := newSSEReader(resp.Body, s.opts.MaxLine)
	endpoint := make(chan error, 1)
	s.streams.Add(1)
	go func() {
		defer s.streams.Done()
		defer resp.Body.Close()
		first := true
		for {
			ev, err := sr.next()
			if err != nil {
				if first {
					endpoint <- errors.New("its stream ended before naming where to post")
				} else if errors.Is(err, errEventTooLong) {
					s.say("%v", tooLong(s.opts.MaxLine))
				}
				return
			}
			if first {
				if ev.Type != "endpoint" {
					continue
				}
				first = false
				err := s.setLegacy(string(ev.Data))
				endpoint <- err
				if err != nil {
					return // the stream is dropped with the endpoint
				}
				continue
			}
			if ev.Type == "" || ev.Type == "message" {
				s.emit(ev.Data)
			}
		}
	}()
	select {
	case err := <-endpoint:
		return err
	case <-time.After(30 * time.Second):
		return errors.New("its stream named no endpoint in 30 s")
	case <-s.ctx.Done():
		return errors.New("the session ended")
	}
}

// setLegacy takes the endpoint an HTTP+SSE server named: a reference
// resolved against the URL, on the URL's origin only.
func (s *Server) setLegacy(ref string) error {
	r, err := url.Parse(strings.TrimSpace(ref))
	if err != nil {
		return errors.New("its stream named an endpoint that does not parse")
	}
	u := s.opts.URL.ResolveReference(r)
	if originOf(u) != s.origin {
		return fmt.Errorf("its stream named an endpoint on another origin (%s); mcpcage posts to %s only", Redacted(u), s.origin)
	}
	s.mu.Lock()
	s.legacy = u
	s.mu.Unlock()
	return nil
}

func (s *Server) sessionID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session
}

// endSession tells a Streamable HTTP server the session is over.
func (s *Server) endSession(ctx context.Context) {
	s.endOnce.Do(func() { s.deleteSession(ctx) })
}

func (s *Server) deleteSession(ctx context.Context) {
	sid := s.sessionID()
	if sid == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	req, err := s.request(ctx, http.MethodDelete, s.opts.URL, nil)
	if err != nil {
		return
	}
	if resp, err := s.client.Do(req); err == nil {
		resp.Body.Close()
	}
}

// emit writes one message of the server's as one line: its JSON with the
// insignificant whitespace taken out, or as it came when it is not JSON
// (the proxy refuses it, on record).
func (s *Server) emit(msg []byte) {
	if len(bytes.TrimSpace(msg)) == 0 {
		return
	}
	var b bytes.Buffer
	if json.Compact(&b, msg) != nil {
		b.Reset()
		b.Write(bytes.ReplaceAll(bytes.ReplaceAll(msg, []byte("\r"), nil), []byte("\n"), nil))
	}
	b.WriteByte('\n')
	s.outMu.Lock()
	defer s.outMu.Unlock()
	_, _ = s.outW.Write(b.Bytes())
}

// answerError answers request id with an error of mcpcage's own.
func (s *Server) answerError(id json.RawMessage, why string) {
	if len(id) == 0 {
		return
	}
	msg, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": -32603, "message": "mcpcage: " + why},
	})
	s.emit(msg)
}

// say writes one line of the bridge's own on the server's stderr, which the
// proxy shows escaped.
func (s *Server) say(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	s.errMu.Lock()
	defer s.errMu.Unlock()
	_, _ = io.WriteString(s.errW, "mcpcage: "+line+"\n")
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// lineReader reads the proxy's messages, one a line, at most max bytes.
type lineReader struct {
	br  *bufio.Reader
	max int
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

func (l *lineReader) next() ([]byte, error) {
	for {
		var line []byte
		for {
			chunk, err := l.br.ReadSlice('\n')
			if len(line)+len(chunk) > l.max+1 {
				return nil, errEventTooLong
			}
			line = append(line, chunk...)
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil {
				return nil, err
			}
			break
		}
		if b := bytes.TrimSpace(line); len(b) > 0 {
			return b, nil
		}
	}
}
