package guard

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/mcpcage/mcpcage/internal/egress"
	"github.com/mcpcage/mcpcage/internal/proxy"
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
// server runs (egress_gateway_ended and a stderr line; the cage ends the
// session). It writes into the audit log the guard opened before the cage
// started (Guard.Egress); with no log (protect --inspect) it keeps the
// first refusals only (Refused). It is a proxy.Lifecycle: at the session's
// end it writes what it still sums up.
type Egress struct {
	name   string
	stderr io.Writer
	audit  func(kind string, fields map[string]any) // nil: no log
	now    func() time.Time
	flood  *flood

	mu      sync.Mutex
	refused []egress.Event // the first refusals, for protect --inspect
	lost    int            // lines lost since the last egress_lost record
	lostAt  time.Time      // that record's time
	ended   bool
}

// NewEgress makes the recorder of a session's gateway events into audit
// (nil for none).
func NewEgress(name string, stderr io.Writer, audit func(kind string, fields map[string]any)) *Egress {
	e := &Egress{name: name, stderr: stderr, audit: audit, now: time.Now}
	e.flood = newFlood(name, stderr, e.record)
	return e
}

func (e *Egress) record(kind string, fields map[string]any) {
	if e.audit != nil {
		e.audit(kind, fields)
	}
}

// Inspect implements proxy.Policy: it decides nothing.
func (e *Egress) Inspect(ctx context.Context, s *proxy.Session, ev *proxy.Event) proxy.Verdict {
	return proxy.Verdict{}
}

// SessionStart implements proxy.Lifecycle.
func (e *Egress) SessionStart(ctx context.Context, s *proxy.Session) {}

// SessionEnd writes what is still summed up or counted: the gateway has
// stopped with the server (cage.Started.Stop).
func (e *Egress) SessionEnd(ctx context.Context, s *proxy.Session, code int) { e.Flush() }

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
		_, _ = io.WriteString(e.stderr, egress.Refusal(e.name, ev)+"\n")
	}
	e.record("egress", egressFields(e.name, ev))
}

// Lost counts a line of the gateway's output that was not an event.
func (e *Egress) Lost() {
	e.mu.Lock()
	e.lost++
	due := e.now().Sub(e.lostAt) >= floodInterval
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
// says so and records it; the cage ends the session.
func (e *Egress) Ended(why string) {
	e.mu.Lock()
	if e.ended {
		e.mu.Unlock()
		return
	}
	e.ended = true
	e.mu.Unlock()
	untrusted.Fprintf(e.stderr, "mcpcage: egress: the egress gateway of %q ended while the server ran (%s); ending the session, whose connections can no longer be recorded\n", e.name, why)
	e.record("egress_gateway_ended", map[string]any{"server": e.name, "why": clip(why, 200)})
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
