// Package progress writes the lines a person reads while mcpcage does
// something slow (a package install, a cage image pulled or built): what it
// does, that it is still at it, and how long it took. The lines go to the
// writer given (stderr), never to stdout, which carries the MCP stream.
//
// How much is said is a Mode:
//
//	plain  every line: a step's start, a tick every 10 s while it runs
//	       ("mcpcage: installing X: still running (20s)"), its details, its end
//	brief  a step's start and end lines only (what a client's log keeps)
//	quiet  none; warnings and errors are not progress and are still written
//	auto   plain when stderr is a terminal, else brief (the default)
//
// A nil *Reporter is quiet.
package progress

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Mode says how much progress is written.
type Mode string

// The modes (see the package doc).
const (
	Auto  Mode = "auto"
	Plain Mode = "plain"
	Brief Mode = "brief"
	Quiet Mode = "quiet"
)

// Env is the variable that sets the mode where no --progress flag is given
// (a client config's env block).
const Env = "MCPCAGE_PROGRESS"

// Every is how often a running step says it is still running (plain).
const Every = 10 * time.Second

// ParseMode reads a --progress or MCPCAGE_PROGRESS value; "" is auto.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return Auto, nil
	case Auto, Plain, Brief, Quiet:
		return m, nil
	}
	return "", fmt.Errorf("progress mode %q: give auto, plain, brief or quiet", s)
}

// Reporter writes progress lines in one mode.
type Reporter struct {
	w    io.Writer
	mode Mode // Plain, Brief or Quiet
	// ticker is time.NewTicker's channel and stop; tests replace it.
	ticker func(time.Duration) (<-chan time.Time, func())
	now    func() time.Time
	mu     sync.Mutex // one line at a time from the step's ticker and its owner
}

// New returns a reporter writing to w; terminal says whether w is one
// (which auto needs).
func New(w io.Writer, m Mode, terminal bool) *Reporter {
	if m == Auto || m == "" {
		m = Brief
		if terminal {
			m = Plain
		}
	}
	return &Reporter{w: w, mode: m, now: time.Now, ticker: func(d time.Duration) (<-chan time.Time, func()) {
		t := time.NewTicker(d)
		return t.C, t.Stop
	}}
}

// Mode is the mode in effect: plain, brief or quiet.
func (r *Reporter) Mode() Mode {
	if r == nil {
		return Quiet
	}
	return r.mode
}

func (r *Reporter) line(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.w, "mcpcage: "+format+"\n", args...)
}

// Step is one slow thing being done, from Start to Done or Stop.
type Step struct {
	r     *Reporter
	label string
	start time.Time
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// Start writes the line that says what is being done ("mcpcage: " + line)
// and, in plain mode, ticks "mcpcage: LABEL: still running (Ns)" every
// Every until Done or Stop. line is mcpcage's own text: a name from a
// package or a registry in it must be cleaned by the caller.
func (r *Reporter) Start(label, line string) *Step {
	s := &Step{r: r, label: label, stop: make(chan struct{}), done: make(chan struct{})}
	if r == nil || r.mode == Quiet {
		close(s.done)
		return s
	}
	s.start = r.now()
	r.line("%s", line)
	if r.mode != Plain {
		close(s.done)
		return s
	}
	c, stop := r.ticker(Every)
	go func() {
		defer close(s.done)
		defer stop()
		for {
			select {
			case <-s.stop:
				return
			case t := <-c:
				r.line("%s: still running (%s)", label, t.Sub(s.start).Round(time.Second))
			}
		}
	}()
	return s
}

// Note writes a detail of the step, in plain mode only.
func (s *Step) Note(format string, args ...any) {
	if s.r.Mode() == Plain {
		s.r.line(format, args...)
	}
}

// Done ends the step with its line, the time it took appended:
// "mcpcage: installed X 1.0.0 (in 12s)".
func (s *Step) Done(format string, args ...any) {
	s.Stop()
	if m := s.r.Mode(); m == Plain || m == Brief {
		s.r.line("%s (in %s)", fmt.Sprintf(format, args...), s.r.now().Sub(s.start).Round(time.Second))
	}
}

// Stop ends the step without a line (it failed: its error says so).
func (s *Step) Stop() {
	s.once.Do(func() { close(s.stop) })
	<-s.done
}
