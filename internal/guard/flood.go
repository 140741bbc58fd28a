package guard

import (
	"io"
	"sort"
	"sync"
	"time"

	"github.com/mcpcage/mcpcage/internal/scan"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// The flood bound: what a server can make a session write at will (a
// report of findings on stderr and in the audit log for each of its
// notifications, a refused record for each malformed line) is written in
// full floodInFull times per kind, then summed up at most once per
// floodInterval, and once more when the session ends. It bounds the
// reports, never the checks: every message is still scanned, withheld and
// refused as configured.
const (
	floodInFull   = 50
	floodInterval = 10 * time.Second
)

// flood counts one session's reports per kind.
type flood struct {
	server string
	stderr io.Writer
	event  func(kind string, fields map[string]any) // the audit log
	now    func() time.Time

	mu    sync.Mutex
	kinds map[string]*floodCount
}

type floodCount struct {
	full  int       // reports written in full
	held  int       // reports held back since the last summary
	high  int       // high-severity findings in them
	since time.Time // the first report held back since the last summary
}

func newFlood(server string, stderr io.Writer, event func(string, map[string]any)) *flood {
	return &flood{server: server, stderr: stderr, event: event, now: time.Now, kinds: map[string]*floodCount{}}
}

// floodKind is the kind a report counts under: what it is about and the
// method, one of the protocol's methods or, for any other, one kind for
// them all, so that a server cannot make a fresh kind per message.
func floodKind(what, method string) string {
	if !protocolMethods[method] {
		method = "other methods"
	}
	if what == "answer" {
		return "answers to " + method
	}
	return method
}

// pass reports whether a report of kind, with findings fs, is written in
// full. When it is not, it is counted, and the summary is written if one is
// due.
func (f *flood) pass(kind string, fs []scan.Finding) bool {
	f.mu.Lock()
	c := f.kinds[kind]
	if c == nil {
		c = &floodCount{}
		f.kinds[kind] = c
	}
	if c.full < floodInFull {
		c.full++
		f.mu.Unlock()
		return true
	}
	now := f.now()
	if c.held == 0 {
		c.since = now
	}
	c.held++
	c.high += scan.Count(fs, scan.High)
	var due *floodCount
	if now.Sub(c.since) >= floodInterval {
		d := *c
		due = &d
		c.held, c.high = 0, 0
	}
	f.mu.Unlock()
	if due != nil {
		f.summary(kind, due, now)
	}
	return false
}

// drain writes the summaries of what is still held back.
func (f *flood) drain() {
	f.mu.Lock()
	var kinds []string
	due := map[string]floodCount{}
	for k, c := range f.kinds {
		if c.held > 0 {
			kinds = append(kinds, k)
			due[k] = *c
			c.held, c.high = 0, 0
		}
	}
	f.mu.Unlock()
	sort.Strings(kinds)
	now := f.now()
	for _, k := range kinds {
		c := due[k]
		f.summary(k, &c, now)
	}
}

func (f *flood) summary(kind string, c *floodCount, now time.Time) {
	secs := int(now.Sub(c.since).Round(time.Second) / time.Second)
	untrusted.Fprintf(f.stderr, "mcpcage: %q: %d more of %s in %ds were not reported one by one (the first %d were; %d high-severity findings among them); each was still checked\n",
		f.server, c.held, kind, secs, floodInFull, c.high)
	if f.event != nil {
		f.event("reports_held", map[string]any{"server": f.server, "of": kind, "held": c.held, "high": c.high, "seconds": secs})
	}
}
