package proxy

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
)

// writeServer and writeClient send one message. A pump forwarding to the
// other peer passes flush false and flushes once its input has no complete
// line waiting, so that a burst costs one system call; every other writer
// flushes at once.
//
// A pump does not write back to the peer it reads: that write could wait on
// a peer that is itself waiting for us to read (a full pipe each way). Such
// answers go through replyLater instead.
//
// Once the server's stdin is being shut, writeServer drops msg, but what was
// queued before (a reply queue, an outbox) goes through writeQueued:
// closeServerStdin waits for it.
func (r *run) writeServer(msg []byte, flush bool) {
	if r.stdinShut.Load() {
		return
	}
	r.writeQueued(msg, flush)
}

func (r *run) writeQueued(msg []byte, flush bool) {
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

// replyQueue is how many answers to one peer may wait for it to read them.
// Beyond that the pump that makes them waits too: backpressure, as the peer
// would meet without the proxy, rather than memory that grows.
const replyQueue = 256

// replyLater answers the peer a pump reads from through that peer's reply
// queue, written by a goroutine of the session, so the pump goes on reading
// unless the peer has stopped reading its answers altogether.
// dir is the direction of the message being answered.
func (r *run) replyLater(dir Direction, msg []byte) {
	if dir == ServerToClient {
		r.serverQueued.Add(1)
	}
	select {
	case r.replies[dir] <- msg:
	case <-r.replyStop:
		if dir == ServerToClient {
			r.serverQueued.Add(-1)
		}
	}
}

// serverQueue is how many messages queued for the server are not written
// yet.
func (r *run) serverQueue() int64 {
	o := r.outboxes[ClientToServer-1]
	o.mu.Lock()
	defer o.mu.Unlock()
	return r.serverQueued.Load() + int64(o.queued)
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
	go writer(r.replies[ServerToClient], func(msg []byte, flush bool) {
		r.writeQueued(msg, flush)
		r.serverQueued.Add(-1)
	})
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
