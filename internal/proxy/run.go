package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// Config sets up one proxied session.
type Config struct {
	Session  *Session
	Policies []Policy
	// MaxLine is the largest message accepted in either direction, in bytes;
	// 0 means 16 MiB.
	MaxLine int
	// Stderr receives the server's stderr, line by line, prefixed with the
	// server's name, and the proxy's own log lines. Never stdout.
	Stderr io.Writer
	// StopTimeout is how long the server gets after its stdin is closed
	// before it is stopped; 0 means 2 seconds.
	StopTimeout time.Duration
	// DrainTimeout is how long a client that closed its input (and still
	// reads) waits for the answers to the requests it sent before the
	// server's stdin is closed; 0 means StopTimeout. `echo REQUEST |
	// mcpcage run ...` closes its input at once, before a server that is
	// still starting has read it.
	DrainTimeout time.Duration
}

// Protocol versions the proxy understands. A session whose version is not
// one of these is refused rather than relayed uninspected.
var (
	// HandshakeVersions are negotiated by initialize.
	HandshakeVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}
	// StatelessVersions are carried by every request in
	// _meta["io.modelcontextprotocol/protocolVersion"]; no initialize.
	StatelessVersions = []string{"2026-07-28"}
)

// MetaProtocolVersion is the _meta key of the stateless era.
const MetaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// batchVersion is the only protocol version in which batches are legal.
const batchVersion = "2025-03-26"

// KnownVersion reports whether v is a protocol version the proxy understands.
func KnownVersion(v string) bool {
	for _, k := range HandshakeVersions {
		if v == k {
			return true
		}
	}
	for _, k := range StatelessVersions {
		if v == k {
			return true
		}
	}
	return false
}

// ReservedIDPrefix starts the string ids of the proxy's own requests. The
// rest of such an id is random per session, so no peer can guess it.
const ReservedIDPrefix = "mcpcage-"

// Run relays messages between the client (clientIn, clientOut) and srv until
// the client goes away, ctx is cancelled or the server exits, then shuts the
// server down and returns its exit status.
//
// On client EOF or cancellation the server's stdin is closed, the server gets
// StopTimeout to exit, then it is stopped. If the server goes first, every
// request of the client it left unanswered is answered with an error naming
// how it ended (ExitReasoner). If clientIn is an io.Closer it is closed
// before Run returns, so that the goroutine reading it ends; an *os.File in
// blocking mode (os.Stdin on a pipe), which Close does not wake, is read
// through a non-blocking duplicate whose read deadline ends the read, and
// its blocking mode is restored before Run returns. A terminal is neither
// switched nor closed (see interruptible). Every
// goroutine Run starts has ended when it returns, except a read from another
// clientIn that closing does not interrupt: it ends with the client or the
// process, and handles nothing it reads after Run decided to stop. A client
// that leaves while a write to the server has been stuck for StopTimeout
// (the server stopped reading) ends the session as EOF would, on Linux,
// where the hang-up of an *os.File clientIn can be seen without reading.
func Run(ctx context.Context, cfg Config, clientIn io.Reader, clientOut io.Writer, srv Server) (int, error) {
	if cfg.Session == nil {
		cfg.Session = &Session{}
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = 2 * time.Second
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = cfg.StopTimeout
	}
	if cfg.MaxLine <= 0 {
		cfg.MaxLine = jsonrpc.DefaultMaxLine
	}
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		_ = srv.Stop(ctx)
		return 1, err
	}
	for _, v := range []any{clientIn, clientOut, srv.Stdin(), srv.Stdout()} {
		growPipe(v)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &run{
		cfg:        cfg,
		sess:       cfg.Session,
		srv:        srv,
		ctx:        ctx,
		log:        &lineWriter{w: cfg.Stderr},
		toClient:   jsonrpc.NewWriter(clientOut),
		toServer:   jsonrpc.NewWriter(srv.Stdin()),
		idPrefix:   ReservedIDPrefix + hex.EncodeToString(nonce[:]) + "-",
		pendingC2S: &pendingSet{m: map[string]pending{}},
		pendingS2C: &pendingSet{m: map[string]pending{}},
		own:        map[string]chan *jsonrpc.Message{},
		serverGone: make(chan struct{}),
	}
	for _, p := range cfg.Policies {
		if o, ok := p.(Observer); ok {
			r.observers = append(r.observers, o)
		}
		if o, ok := p.(RefusalObserver); ok {
			r.refusalObservers = append(r.refusalObservers, o)
		}
	}
	r.sess.mu.Lock()
	r.sess.call = r.call
	r.sess.toClient = r.sendToClient
	r.sess.mu.Unlock()
	defer func() {
		r.sess.mu.Lock()
		r.sess.call, r.sess.toClient = nil, nil
		r.sess.mu.Unlock()
	}()
	for _, p := range cfg.Policies {
		if l, ok := p.(Lifecycle); ok {
			l.SessionStart(ctx, r.sess)
		}
	}

	type status struct {
		code int
		err  error
	}
	exitc := make(chan status, 1)
	exited := make(chan struct{})
	go func() {
		code, err := srv.Wait()
		exitc <- status{code, err}
		close(exited)
	}()

	stderrDone := make(chan struct{})
	if se := srv.Stderr(); se != nil {
		go func() { r.pumpStderr(se); close(stderrDone) }()
	} else {
		close(stderrDone)
	}
	r.startReplies()
	r.startOutboxes()
	go func() { r.pumpServer(); close(r.serverGone) }()
	clientDone := make(chan struct{})
	pumpIn, interrupt, restore, closeIn := interruptible(clientIn)
	go func() { r.pumpClient(pumpIn); close(clientDone) }()
	clientGone, watchStop, watchDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() { r.watchHangup(pumpIn, clientGone, watchStop); close(watchDone) }()

	select {
	case <-clientDone:
		r.drain(ctx, exited)
	case <-clientGone:
	case <-ctx.Done():
	case <-r.serverGone:
	}
	close(watchStop)
	<-watchDone

	// Shutdown: the server first, then whatever still waits on it.
	r.closeServerStdin()
	select {
	case <-exited:
		// It ended on its own: let its last output and stderr lines through
		// before Stop releases the streams.
		r.waitBounded(r.serverGone, "")
		r.waitBounded(stderrDone, "")
	case <-time.After(cfg.StopTimeout):
	}
	stopCtx, stopCancel := context.WithTimeout(context.Background(), cfg.StopTimeout+5*time.Second)
	stopErr := srv.Stop(stopCtx)
	stopCancel()
	var code int
	var waitErr error
	select {
	case st := <-exitc:
		code, waitErr = st.code, st.err
	case <-time.After(cfg.StopTimeout):
		r.logf("the server did not exit after being stopped")
		code, waitErr = 1, errors.New("server did not exit")
	}
	r.waitBounded(r.serverGone, "server output")
	cancel()              // fails the proxy's own pending Calls
	r.stopped.Store(true) // the client pump handles nothing more
	r.mu.Lock()
	r.draining = true
	r.mu.Unlock()
	r.asyncs.Wait()
	r.stopOutboxes()
	close(r.replyStop)
	r.replyDone.Wait()
	r.failPending(code, waitErr)
	interrupt()
	c, closer := clientIn.(io.Closer)
	_, isFile := clientIn.(*os.File)
	if closer && !isFile {
		_ = c.Close()
	}
	// A read deadline (an *os.File, see interruptible) or closing (a pipe)
	// ends the client pump's read. Another reader that ignores Close cannot
	// be interrupted: its read ends when the client closes it or the process
	// exits, and what it returns is not handled; the server's exit must not
	// wait for the client. Nor can a pump blocked writing to a server that
	// stopped reading be woken before Stop has closed the server's stdin.
	select {
	case <-clientDone:
	case <-time.After(100 * time.Millisecond):
	}
	restore() // before the Close below, which would make it impossible
	if closer && isFile && closeIn {
		_ = c.Close()
	}
	r.waitBounded(stderrDone, "server stderr")
	for _, p := range cfg.Policies {
		if l, ok := p.(Lifecycle); ok {
			l.SessionEnd(context.WithoutCancel(ctx), r.sess, code)
		}
	}
	if waitErr == nil && stopErr != nil {
		waitErr = stopErr
	}
	return code, waitErr
}

// drain waits, after the client's EOF, until every request the client sent
// is answered (by the server or a policy), the server exits, ctx ends or
// DrainTimeout passes: an EOF ends what the client says, not what it waits
// to hear.
func (r *run) drain(ctx context.Context, exited <-chan struct{}) {
	deadline := time.NewTimer(r.cfg.DrainTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		r.mu.Lock()
		n := len(r.pendingC2S.m)
		r.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return
		case <-exited:
			return
		case <-r.serverGone:
			return
		case <-ctx.Done():
			return
		}
	}
}

// waitBounded waits for a pump to end, but not forever: a Server whose
// streams outlive Stop must not hang the caller.
// what, when given, names the stream in a log line if the wait times out.
func (r *run) waitBounded(done <-chan struct{}, what string) {
	select {
	case <-done:
	case <-time.After(r.cfg.StopTimeout):
		if what != "" {
			r.logf("%s still open after the server was stopped", what)
		}
	}
}

type pending struct {
	id        jsonrpc.ID
	method    string
	params    []byte
	cancelled bool
}

type run struct {
	cfg       Config
	sess      *Session
	srv       Server
	ctx       context.Context
	log       *lineWriter
	observers []Observer

	refusalObservers []RefusalObserver

	toClient *jsonrpc.Writer
	toServer *jsonrpc.Writer

	idPrefix string
	seq      atomic.Uint64
	stopped  atomic.Bool

	serverWrites  atomic.Int32  // writes to the server in progress
	serverWritten atomic.Uint64 // writes to the server done
	stdinShut     atomic.Bool   // stdinClosed, for the pumps' fast path

	mu           sync.Mutex
	pendingC2S   *pendingSet // client requests the server has not answered
	pendingS2C   *pendingSet // server requests the client has not answered
	own          map[string]chan *jsonrpc.Message
	stdinClosed  bool
	draining     bool
	replies      map[Direction]chan []byte // by the direction of what they answer
	replyStop    chan struct{}
	outboxes     [2]*outbox // by Direction-1 of what they carry
	outboxStop   chan struct{}
	outboxDone   sync.WaitGroup
	replyDone    sync.WaitGroup
	serverGone   chan struct{}
	asyncs       sync.WaitGroup
	loggedClient bool
}

func (r *run) logf(format string, args ...any) {
	name := r.sess.Name
	if name == "" {
		name = "server"
	}
	r.log.WriteLine(fmt.Sprintf("mcpcage: [%s] %s", name, fmt.Sprintf(format, args...)))
}

func (r *run) closeServerStdin() {
	r.mu.Lock()
	already := r.stdinClosed
	r.stdinClosed = true
	r.stdinShut.Store(true)
	r.mu.Unlock()
	if !already {
		_ = r.srv.Stdin().Close()
	}
}

// writeServer and writeClient send one message. A pump forwarding to the
// other peer passes flush false and flushes once its input has no complete
// line waiting, so that a burst costs one system call; every other writer
// flushes at once.
//
// A pump does not write back to the peer it reads: that write could wait on
// a peer that is itself waiting for us to read (a full pipe each way). Such
// answers go through replyLater instead.
func (r *run) writeServer(msg []byte, flush bool) {
	if r.stdinShut.Load() {
		return
	}
	r.serverWriting(true)
	_ = r.toServer.Write(msg, flush)
	r.serverWriting(false)
}

// serverWriting counts writes to the server in progress and those done, so
// that watchHangup can tell a server that stopped reading. (Counters, not
// clocks: this runs for every message.)
func (r *run) serverWriting(start bool) {
	if start {
		r.serverWrites.Add(1)
		return
	}
	r.serverWritten.Add(1)
	r.serverWrites.Add(-1)
}

// watchHangup closes gone when the client has closed its end of in while a
// write to the server has been stuck for StopTimeout: the client pump,
// waiting on that write, cannot read the client's EOF, and a server that
// stopped reading would otherwise keep the session open forever.
func (r *run) watchHangup(in io.Reader, gone chan<- struct{}, stop <-chan struct{}) {
	f, ok := in.(*os.File)
	if !ok {
		return
	}
	raw, err := f.SyscallConn()
	if err != nil {
		return
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var done uint64
	stuck := time.Now()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			if d := r.serverWritten.Load(); r.serverWrites.Load() == 0 || d != done {
				done, stuck = d, now
			}
			if now.Sub(stuck) < r.cfg.StopTimeout {
				continue
			}
		}
		hup := false
		if raw.Control(func(fd uintptr) { hup = hungUp(fd) }) != nil {
			return
		}
		if hup {
			r.logf("the client left while the server was not reading its input; ending the session")
			close(gone)
			return
		}
	}
}

func (r *run) writeClient(msg []byte, flush bool) {
	if err := r.toClient.Write(msg, flush); err != nil {
		r.clientWriteFailed(err)
	}
}

func (r *run) clientWriteFailed(err error) {
	r.mu.Lock()
	first := !r.loggedClient
	r.loggedClient = true
	r.mu.Unlock()
	if first {
		r.logf("cannot write to the client: %v", err)
	}
}

// maxPending and maxPendingBytes bound the requests each peer may have
// waiting for the other: the proxy remembers each one, with its params,
// until it is answered. Backpressure through the pipes keeps an honest
// client far below them.
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
		p.bytes -= len(old.params)
	}
	p.m[key] = e
	p.bytes += len(e.params)
}

func (p *pendingSet) take(key string) (pending, bool) {
	e, ok := p.m[key]
	if ok {
		delete(p.m, key)
		p.bytes -= len(e.params)
	}
	return e, ok
}

// replyQueue is how many answers to one peer may wait for it to read them.
// Beyond that the pump that makes them waits too: backpressure, as the peer
// would meet without the proxy, rather than memory that grows.
const replyQueue = 256

// replyLater answers the peer a pump reads from through that peer's reply
// queue, written by a goroutine of the session, so the pump goes on reading
// unless the peer has stopped reading its answers altogether.
// dir is the direction of the message being answered.
func (r *run) replyLater(dir Direction, msg []byte) {
	select {
	case r.replies[dir] <- msg:
	case <-r.replyStop:
	}
}

// startReplies starts the writers of the two reply queues. They stop when
// replyStop is closed, after writing what is already queued.
func (r *run) startReplies() {
	r.replies = map[Direction]chan []byte{
		ClientToServer: make(chan []byte, replyQueue), // answers to the client
		ServerToClient: make(chan []byte, replyQueue), // answers to the server
	}
	r.replyStop = make(chan struct{})
	writer := func(q chan []byte, write func([]byte, bool)) {
		defer r.replyDone.Done()
		for {
			select {
			case msg := <-q:
				write(msg, true)
			case <-r.replyStop:
				for {
					select {
					case msg := <-q:
						write(msg, true)
					default:
						return
					}
				}
			}
		}
	}
	r.replyDone.Add(2)
	go writer(r.replies[ClientToServer], r.writeClient)
	go writer(r.replies[ServerToClient], r.writeServer)
}

// goAsync runs f on a goroutine the session owns and waits for before Run
// returns; once Run has begun to drain them, f runs on the caller instead.
func (r *run) goAsync(f func()) {
	r.mu.Lock()
	if r.draining {
		r.mu.Unlock()
		f()
		return
	}
	r.asyncs.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.asyncs.Done()
		f()
	}()
}

// flushUnless flushes what the pump reading rd forwarded (to the other
// peer), unless rd already holds another complete line, whose handling will
// write or flush again right away.
func (r *run) flushUnless(rd *jsonrpc.Reader, dir Direction) {
	if rd.HasLine() {
		return
	}
	if dir == ServerToClient {
		if err := r.toClient.Flush(); err != nil {
			r.clientWriteFailed(err)
		}
		return
	}
	if !r.stdinShut.Load() {
		r.serverWriting(true)
		_ = r.toServer.Flush()
		r.serverWriting(false)
	}
}

func (r *run) sendToClient(msg []byte) error {
	m, err := jsonrpc.Parse(msg)
	if err != nil {
		return fmt.Errorf("proxy: SendToClient: not a valid message: %w", err)
	}
	if m.Kind == jsonrpc.KindResponse {
		// A response settles the request it answers: the server's own
		// answer, if it comes, is then dropped, and so is the error the
		// proxy would send at the end, so that no id is answered twice.
		r.mu.Lock()
		_, ok := r.pendingC2S.take(m.ID.Key())
		r.mu.Unlock()
		if !ok {
			return fmt.Errorf("proxy: SendToClient: no request of the client with id %s is waiting for an answer", clip(m.ID.String()))
		}
	}
	return r.toClient.WriteMessage(msg)
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

func (r *run) pumpClient(in io.Reader) {
	rd := jsonrpc.NewReader(in, r.cfg.MaxLine)
	for ; ; r.flushUnless(rd, ClientToServer) {
		line, err := rd.ReadLine()
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
		ev.Method, ev.Params = p.method, p.params
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
	if v, ok := metaVersion(m.Params); ok {
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
		line, err := rd.ReadLine()
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
	ev := &Event{Dir: ServerToClient, Msg: m}
	switch m.Kind {
	case jsonrpc.KindResponse:
		key := m.ID.Key()
		r.mu.Lock()
		if ch, ok := r.own[key]; ok {
			delete(r.own, key)
			r.mu.Unlock()
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
		ev.Method, ev.Params = p.method, p.params
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

// inspect runs the policy chain on ev and applies the verdict, now or, for
// an Async verdict, from a goroutine the session owns.
func (r *run) inspect(ev *Event) {
	for i, p := range r.cfg.Policies {
		v := p.Inspect(r.ctx, r.sess, ev)
		if v.Async != nil {
			rest := r.cfg.Policies[i+1:]
			r.goAsync(func() {
				v := v.Async(r.ctx)
				if v.Action == Forward && v.Async == nil {
					v = r.chain(rest, ev)
				}
				r.finish(ev, false, v)
			})
			return
		}
		if v.Action != Forward {
			r.finish(ev, true, v)
			return
		}
	}
	r.finish(ev, true, Verdict{})
}

// chain runs the rest of the policies once an Async verdict said Forward;
// being already off the pump, it runs further Async work inline.
func (r *run) chain(ps []Policy, ev *Event) Verdict {
	for _, p := range ps {
		v := p.Inspect(r.ctx, r.sess, ev)
		if v.Async != nil {
			v = v.Async(r.ctx)
		}
		if v.Action != Forward {
			return v
		}
	}
	return Verdict{}
}

// finish applies a verdict: observers first, synchronously, then delivery.
// sync is true on the pump that read ev, false on an Async goroutine.
func (r *run) finish(ev *Event, sync bool, v Verdict) {
	flush := !sync
	v.Async = nil
	if (v.Action == Reply || v.Action == Replace) && !validMessage(v.Message) {
		r.logf("a policy gave an invalid message for %s; dropping it", describe(ev))
		v = Verdict{Action: Drop}
	}
	for _, o := range r.observers {
		o.Observe(r.ctx, r.sess, ev, v)
	}
	out, msg := ev.Msg.Raw, ev.Msg
	if v.Action == Drop || v.Action == Reply {
		// Nothing goes on to the other peer: the holds are waited for here.
		d := delivery{out: v.Message, holds: ev.holds}
		r.waitHolds(&d)
		v.Message = d.out
	}
	switch v.Action {
	case Drop:
		return
	case Reply:
		switch {
		case sync:
			r.replyLater(ev.Dir, v.Message)
		case ev.Dir == ClientToServer:
			r.writeClient(v.Message, true)
		default:
			r.writeServer(v.Message, true)
		}
		return
	case Replace:
		out, msg = v.Message, nil
	}
	r.deliver(ev, out, msg, flush)
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
	r.mu.Lock()
	pend.add(m.ID.Key(), pending{id: m.ID, method: m.Method, params: m.Params})
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

func validMessage(b []byte) bool {
	_, err := jsonrpc.Parse(b)
	return err == nil
}

func describe(ev *Event) string {
	if ev.Msg.Method != "" {
		return clip(ev.Msg.Method)
	}
	if ev.Method != "" {
		return "the response to " + clip(ev.Method)
	}
	return "a message"
}

// clip keeps peer-chosen text short and printable in our messages.
func clip(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strconv.Quote(s)
}
