package guard

import (
	"io"
	"sync"
	"time"

	"github.com/mcpcage/mcpcage/internal/egress"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// Egress records one session's egress gateway (--allow-host) in its audit
// log: every allowed connection when it is allowed (phase open, before a
// byte passes) and when it ends (phase end, with its bytes); every refused
// attempt, the first floodInFull of a session in full (an egress record and
// one stderr line), then summed up like the scanner's reports
// (reports_held); the lines of the gateway's output that were not events
// (an egress_lost record, "N gateway events lost", at most one per
// floodInterval and one at the end); and the gateway's end while the
// server runs (egress_gateway_ended, a stderr line, and Stop is called: a
// session whose connections can no longer be recorded does not go on).
// Events that come before the session's audit log is open wait for it (at
// most maxQueued; past that they are counted as lost).
type Egress struct {
	name    string
	stderr  io.Writer
	refusal func(egress.Event) string // the stderr line for a refusal
	now     func() time.Time

	mu       sync.Mutex
	audit    func(kind string, fields map[string]any)
	queued   []queuedRecord
	refused  []egress.Event // the first refusals, for protect --inspect
	flood    *flood
	lost     int       // lines lost since the last egress_lost record
	lostAt   time.Time // that record's time
	stop     func()
	ended    bool
	lostEver int
}

type queuedRecord struct {
	kind   string
	fields map[string]any
}

const maxQueued = 10000

// NewEgress makes the recorder of a session's gateway events; refusal
// words the stderr line of a refused attempt.
func NewEgress(name string, stderr io.Writer, refusal func(egress.Event) string) *Egress {
	e := &Egress{name: name, stderr: stderr, refusal: refusal, now: time.Now}
	e.flood = newFlood(name, stderr, e.record)
	return e
}

// OnEnd sets what ends the session when the gateway ends while the server
// runs.
func (e *Egress) OnEnd(stop func()) {
	e.mu.Lock()
	e.stop = stop
	e.mu.Unlock()
}

// Attach is given the session's audit recorder once the log is open, and
// records what came before.
func (e *Egress) Attach(a func(kind string, fields map[string]any)) {
	e.mu.Lock()
	e.audit = a
	q := e.queued
	e.queued = nil
	e.mu.Unlock()
	for _, r := range q {
		a(r.kind, r.fields)
	}
}

// record writes one record, or queues it until the log is open.
func (e *Egress) record(kind string, fields map[string]any) {
	e.mu.Lock()
	a := e.audit
	if a == nil {
		if len(e.queued) < maxQueued {
			e.queued = append(e.queued, queuedRecord{kind, fields})
		} else {
			e.lost++
			e.lostEver++
		}
		e.mu.Unlock()
		return
	}
	e.mu.Unlock()
	a(kind, fields)
}

// Event records one event of the gateway.
func (e *Egress) Event(ev egress.Event) {
	if ev.Verdict != "allowed" {
		e.mu.Lock()
		if len(e.refused) < floodInFull {
			e.refused = append(e.refused, ev)
		}
		e.mu.Unlock()
		if !e.flood.pass("refused connections", nil) {
			return
		}
		_, _ = io.WriteString(e.stderr, e.refusal(ev)+"\n")
	}
	e.record("egress", egressFields(e.name, ev))
}

// Lost counts a line of the gateway's output that was not an event.
func (e *Egress) Lost() {
	e.mu.Lock()
	e.lost++
	e.lostEver++
	due := e.audit != nil && e.now().Sub(e.lostAt) >= floodInterval
	e.mu.Unlock()
	if due {
		e.writeLost()
	}
}

func (e *Egress) writeLost() {
	e.mu.Lock()
	n := e.lost
	e.lost = 0
	e.lostAt = e.now()
	e.mu.Unlock()
	if n == 0 {
		return
	}
	untrusted.Fprintf(e.stderr, "mcpcage: egress: %d gateway event(s) of %q lost (lines that were not events); the connections they stood for are not on record\n", n, e.name)
	e.record("egress_lost", map[string]any{"server": e.name, "lost": n})
}

// Ended hears that the gateway's events ended while the server runs: it
// says so, records it, and ends the session.
func (e *Egress) Ended(why string) {
	e.mu.Lock()
	if e.ended {
		e.mu.Unlock()
		return
	}
	e.ended = true
	stop := e.stop
	e.mu.Unlock()
	untrusted.Fprintf(e.stderr, "mcpcage: egress: the egress gateway of %q ended while the server ran (%s); ending the session, whose connections can no longer be recorded\n", e.name, why)
	e.record("egress_gateway_ended", map[string]any{"server": e.name, "why": clip(why, 200)})
	if stop != nil {
		go stop()
	}
}

// Flush writes what is still summed up or counted; call it after the
// gateway stopped, before the session's last record.
func (e *Egress) Flush() {
	e.flood.drain()
	e.writeLost()
}

// Refused returns the first refused attempts, for an inspection that had
// no audit log.
func (e *Egress) Refused() []egress.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]egress.Event(nil), e.refused...)
}

func egressFields(name string, e egress.Event) map[string]any {
	f := map[string]any{
		"server": name, "host": e.Host, "port": e.Port, "verdict": e.Verdict, "via": e.Via,
		"sent": e.Sent, "received": e.Received, "ms": e.MS,
	}
	if e.Reason != "" {
		f["reason"] = e.Reason
	}
	if e.Addr != "" {
		f["addr"] = e.Addr
	}
	if e.Phase != "" {
		f["phase"] = e.Phase
	}
	return f
}
