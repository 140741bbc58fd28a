package proxy

import (
	"sync"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
)

// heldQueue is how many outcomes bound for one peer may wait behind a hold
// (Event.Hold). Beyond that the goroutine that made them waits too:
// backpressure rather than memory that grows.
const heldQueue = 256

// heldBytes bounds the bytes of the outcomes waiting in one outbox: a peer
// that floods (say, a server's notifications of up to --max-line each while
// an answer waits for its audit record) is read no further ahead than this,
// instead of being copied into memory 256 messages at a time. An outcome
// larger than heldBytes waits alone.
const heldBytes = 1 << 20

// delivery is one outcome on its way to a peer.
type delivery struct {
	dir   Direction // of the message it carries
	out   []byte
	msg   *jsonrpc.Message // nil when out was replaced
	holds []func() []byte
	size  int // len(out) when queued: what it counts against heldBytes
}

// outbox delivers, in order, the outcomes bound for one peer that must wait
// for a hold, and whatever follows them while they wait: the pump goes on
// reading, so that the waits of a burst overlap (an audit group commit)
// instead of adding up. With nothing held, outcomes are written by their
// pump directly, as if there were no outbox.
type outbox struct {
	mu     sync.Mutex
	queued int        // deliveries handed to q and not yet written
	bytes  int        // the bytes of those deliveries
	room   *sync.Cond // on mu: broadcast when queued falls or closed is set
	closed bool       // the writer has ended: deliver writes inline
	q      chan delivery
}

func (r *run) startOutboxes() {
	r.outboxStop = make(chan struct{})
	for i := range r.outboxes {
		o := &outbox{q: make(chan delivery, heldQueue)}
		o.room = sync.NewCond(&o.mu)
		r.outboxes[i] = o
		r.outboxDone.Add(1)
		go func() {
			defer r.outboxDone.Done()
			r.runOutbox(o)
		}()
	}
}

// stopOutboxes writes what the outboxes hold and ends their writers.
func (r *run) stopOutboxes() {
	close(r.outboxStop)
	r.outboxDone.Wait()
}

func (r *run) runOutbox(o *outbox) {
	for {
		select {
		case d := <-o.q:
			r.sendHeld(o, d)
		case <-r.outboxStop:
			for {
				o.mu.Lock()
				if o.queued == 0 {
					o.closed = true
					o.room.Broadcast()
					o.mu.Unlock()
					return
				}
				o.mu.Unlock()
				r.sendHeld(o, <-o.q) // counted, so on its way
			}
		}
	}
}

func (r *run) sendHeld(o *outbox, d delivery) {
	r.waitHolds(&d)
	r.send(d.dir, d.out, d.msg, len(o.q) == 0, true)
	o.mu.Lock()
	o.queued--
	o.bytes -= d.size
	o.room.Broadcast()
	o.mu.Unlock()
}

// waitHolds waits for each hold in turn; a hold that gives a message
// replaces what is delivered.
func (r *run) waitHolds(d *delivery) {
	for _, h := range d.holds {
		if m := h(); m != nil {
			d.out, d.msg = m, nil
		}
	}
}

// deliver forwards out (msg when it is the message read, nil when a policy
// replaced it) to the peer ev travels to, after the holds of ev.
func (r *run) deliver(ev *Event, out []byte, msg *jsonrpc.Message, flush bool) {
	d := delivery{dir: ev.Dir, out: out, msg: msg, holds: ev.holds, size: len(out)}
	o := r.outboxes[ev.Dir-1]
	o.mu.Lock()
	// Beyond heldBytes the pump waits for room (the peer it reads from
	// waits in turn), unless the outbox is empty.
	for !o.closed && o.queued > 0 && o.bytes+d.size > heldBytes {
		o.room.Wait()
	}
	if closed := o.closed; closed || len(d.holds) == 0 && o.queued == 0 {
		o.mu.Unlock()
		r.waitHolds(&d)
		r.send(d.dir, d.out, d.msg, flush || closed, false)
		return
	}
	o.queued++
	o.bytes += d.size
	o.mu.Unlock()
	if msg != nil && !r.copyAll {
		msg.Own() // the pump reads on while the delivery waits
		d.out = msg.Raw
	}
	o.q <- d
}

// send writes one outcome to the peer a message of direction dir goes to,
// tracking it first when it is a request. queued is true for what an outbox
// held: it reaches the server even once its stdin is being shut.
func (r *run) send(dir Direction, out []byte, msg *jsonrpc.Message, flush, queued bool) {
	if dir == ClientToServer {
		r.track(r.pendingC2S, msg, out)
		if queued {
			r.writeQueued(out, flush)
		} else {
			r.writeServer(out, flush)
		}
		return
	}
	r.track(r.pendingS2C, msg, out)
	r.writeClient(out, flush)
}
