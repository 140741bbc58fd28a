package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
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
	r.copyAll = len(cfg.Policies) > 0
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
		r.hungUp = true
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
	r.logHeld()
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

type run struct {
	cfg       Config
	sess      *Session
	srv       Server
	ctx       context.Context
	log       *lineWriter
	logMu     sync.Mutex
	logCount  map[string]int // lines written by logf, by format
	observers []Observer
	// copyAll: policies may keep the messages they are shown, so each is
	// copied out of its pump's read buffer (see borrowed).
	copyAll bool

	refusalObservers []RefusalObserver

	toClient *jsonrpc.Writer
	toServer *jsonrpc.Writer

	idPrefix string
	seq      atomic.Uint64
	stopped  atomic.Bool

	serverWrites  atomic.Int32  // writes to the server in progress
	serverWritten atomic.Uint64 // writes to the server done
	stdinShut     atomic.Bool   // stdinClosed, for the pumps' fast path
	serverQueued  atomic.Int64  // replies queued for the server, not yet written
	hungUp        bool          // the client left while the server did not read

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

// maxLogLines is how many lines of one kind (one format) the proxy writes
// in a session: a peer that sends 20,000 malformed lines gets 50 lines on
// stderr, then one saying how many more there were (logHeld), so that it
// cannot fill the user's disk through mcpcage's log.
const maxLogLines = 50

func (r *run) logf(format string, args ...any) {
	r.logMu.Lock()
	if r.logCount == nil {
		r.logCount = map[string]int{}
	}
	r.logCount[format]++
	n := r.logCount[format]
	r.logMu.Unlock()
	if n > maxLogLines {
		return
	}
	r.log.WriteLine(fmt.Sprintf("mcpcage: [%s] %s", r.logName(), fmt.Sprintf(format, args...)))
}

func (r *run) logName() string {
	if r.sess.Name == "" {
		return "server"
	}
	return r.sess.Name
}

// logHeld says how many lines of each kind logf did not write.
func (r *run) logHeld() {
	r.logMu.Lock()
	var held []string
	for f, n := range r.logCount {
		if n > maxLogLines {
			held = append(held, fmt.Sprintf("%d more like %q", n-maxLogLines, strings.SplitN(f, ":", 2)[0]))
		}
	}
	r.logMu.Unlock()
	sort.Strings(held)
	for _, h := range held {
		r.log.WriteLine(fmt.Sprintf("mcpcage: [%s] %s were not shown", r.logName(), h))
	}
}

// closeServerStdin ends what the proxy writes to the server. What is already
// queued for it (answers of the proxy's, held deliveries) is written first,
// for up to DrainTimeout, unless the server stopped reading (hungUp); what
// comes after is dropped.
func (r *run) closeServerStdin() {
	r.mu.Lock()
	already := r.stdinClosed
	r.stdinClosed = true
	r.stdinShut.Store(true)
	r.mu.Unlock()
	if already {
		return
	}
	if !r.hungUp && r.serverQueue() > 0 {
		deadline := time.NewTimer(r.cfg.DrainTimeout)
		tick := time.NewTicker(10 * time.Millisecond)
	wait:
		for r.serverQueue() > 0 {
			select {
			case <-tick.C:
			case <-deadline.C:
				r.logf("the server did not read what mcpcage queued for it before its input was closed")
				break wait
			}
		}
		tick.Stop()
		deadline.Stop()
	}
	_ = r.srv.Stdin().Close()
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

// clip keeps peer-chosen text short and printable in our messages.
func clip(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strconv.Quote(s)
}
