package progress

import (
	"bytes"
	"testing"
	"time"
)

// lines is a writer that says when a line was written.
type lines struct {
	bytes.Buffer
	wrote chan struct{}
}

func (l *lines) Write(p []byte) (int, error) {
	n, err := l.Buffer.Write(p)
	l.wrote <- struct{}{}
	return n, err
}

// fake gives a reporter a ticker the test moves by hand, on a clock that
// stands at t0 until advance moves it; tick returns once the tick's line is
// written.
func fake(r *Reporter, w *lines) (tick func(d time.Duration)) {
	c := make(chan time.Time)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r.now = func() time.Time { return t0 }
	r.ticker = func(time.Duration) (<-chan time.Time, func()) { return c, func() {} }
	at := t0
	return func(d time.Duration) {
		at = at.Add(d)
		c <- at
		<-w.wrote
	}
}

func TestStepLines(t *testing.T) {
	for _, tc := range []struct {
		mode     Mode
		terminal bool
		want     string
	}{
		{Auto, true, "mcpcage: installing x (npm) in a container\n" +
			"mcpcage: installing x: still running (10s)\n" +
			"mcpcage: installing x: still running (20s)\n" +
			"mcpcage: x has 3 files\n" +
			"mcpcage: installed x 1.0.0 (in 25s)\n"},
		{Plain, false, "mcpcage: installing x (npm) in a container\n" +
			"mcpcage: installing x: still running (10s)\n" +
			"mcpcage: installing x: still running (20s)\n" +
			"mcpcage: x has 3 files\n" +
			"mcpcage: installed x 1.0.0 (in 25s)\n"},
		{Auto, false, "mcpcage: installing x (npm) in a container\n" +
			"mcpcage: installed x 1.0.0 (in 25s)\n"},
		{Brief, true, "mcpcage: installing x (npm) in a container\n" +
			"mcpcage: installed x 1.0.0 (in 25s)\n"},
		{Quiet, true, ""},
	} {
		b := &lines{wrote: make(chan struct{}, 100)}
		r := New(b, tc.mode, tc.terminal)
		tick := fake(r, b)
		s := r.Start("installing x", "installing x (npm) in a container")
		b.wrote = make(chan struct{}, 100) // the start line is not a tick's
		if r.Mode() == Plain {
			tick(10 * time.Second)
			tick(10 * time.Second)
		}
		s.Note("%s has %d files", "x", 3)
		advance(r, 25*time.Second)
		s.Done("installed %s %s", "x", "1.0.0")
		if got := b.String(); got != tc.want {
			t.Errorf("%s (terminal %v):\n%s\nwant:\n%s", tc.mode, tc.terminal, got, tc.want)
		}
	}
}

// advance sets the fake clock to d after the step's start.
func advance(r *Reporter, d time.Duration) {
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(d)
	r.now = func() time.Time { return t }
}

func TestStopWritesNothing(t *testing.T) {
	b := &lines{wrote: make(chan struct{}, 100)}
	r := New(b, Plain, false)
	fake(r, b)
	r.Start("pulling x", "pulling x").Stop()
	if got := b.String(); got != "mcpcage: pulling x\n" {
		t.Errorf("got %q", got)
	}
	var nilr *Reporter
	s := nilr.Start("a", "b")
	s.Note("c")
	s.Done("d")
	if nilr.Mode() != Quiet {
		t.Error("a nil reporter is not quiet")
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": Auto, "auto": Auto, "plain": Plain, "brief": Brief, "quiet": Quiet} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	if _, err := ParseMode("loud"); err == nil || err.Error() != `progress mode "loud": give auto, plain, brief or quiet` {
		t.Errorf("loud: %v", err)
	}
}
