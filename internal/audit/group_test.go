package audit

import (
	"bytes"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"
)

// Records added while a commit runs share the next one: a burst costs far
// fewer fsyncs than records, and every record is on disk, in order, when
// its Wait returns.
func TestGroupCommit(t *testing.T) {
	tl := newTestLog(t, nil)
	l, err := Open(tl.opts)
	if err != nil {
		t.Fatal(err)
	}
	const n = 400
	ps := make([]*Pending, n)
	for i := range ps {
		ps[i] = l.Add("call", callFields(i))
	}
	for i, p := range ps {
		seq, err := p.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if seq != uint64(i+1) {
			t.Fatalf("record %d got seq %d: not in the order added", i, seq)
		}
	}
	l.mu.Lock()
	syncs := l.syncs
	l.mu.Unlock()
	if syncs >= n/4 {
		t.Errorf("%d records took %d fsyncs: no group commit", n, syncs)
	}
	// Concurrent Appends from many goroutines likewise.
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				if _, err := l.Append("call", callFields(i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if r := tl.verify(t); !r.OK || r.Records != n+200 {
		t.Fatalf("log after group commits: %+v %v", r, r.Problem)
	}
	t.Logf("%d records in %d fsyncs, then 200 concurrent appends", n, syncs)
}

// Two Logs on one directory, each holding its file open and trusting one
// fstat of it for the end of the log: when the other rotates to a new file,
// the sealed old file tells it, so neither writes past the end (a fork).
func TestTwoLogsRotateUnderEachOther(t *testing.T) {
	tl := newTestLog(t, func(o *Options) { o.MaxFileSize = 3000 })
	a, err := Open(tl.opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(tl.opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 60; i++ {
		l := a
		if i%3 == 2 {
			l = b // b writes less often, so a rotates under b and b under a
		}
		if _, err := l.Append("call", callFields(i)); err != nil {
			t.Fatal(err)
		}
	}
	a.Close()
	b.Close()
	files, _ := Files(tl.dir)
	if len(files) < 4 {
		t.Fatalf("no rotation: %v", files)
	}
	for _, f := range files[:len(files)-1] {
		st, _ := os.Stat(tl.path(f))
		if st.Mode().Perm() != 0o400 {
			t.Errorf("%s: mode %v after rotation, want sealed 0400", FileName(f), st.Mode().Perm())
		}
	}
	if r := tl.verify(t); !r.OK || r.Records != 60 {
		t.Fatalf("two rotating writers: %+v %v", r, r.Problem)
	}
}

// A record added with AddLazy asks for no fsync of its own: it is written
// with the next Add's commit, before that record, in order. Alone, the
// timer writes it; and Close writes what is still queued. A commit that
// fails tells its AddLazy records so.
func TestAddLazy(t *testing.T) {
	tl := newTestLog(t, func(o *Options) { o.LazyWithin = time.Hour })
	l, err := Open(tl.opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append("call_start", callFields(0)); err != nil {
		t.Fatal(err)
	}
	syncs := func() int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.syncs
	}
	within := func(d time.Duration) {
		l.qmu.Lock()
		l.opts.LazyWithin = d
		l.qmu.Unlock()
	}
	before := syncs()
	lazy := l.AddLazy("call", callFields(1), func(err error) { t.Errorf("told %v", err) })
	select {
	case <-lazy.Done():
		t.Fatal("a lazy record was committed on its own before its time")
	default:
	}
	next := l.Add("call_start", callFields(2))
	if seq, err := next.Wait(); err != nil || seq != 3 {
		t.Fatalf("next record: seq %d, %v", seq, err)
	}
	if seq, err := lazy.Wait(); err != nil || seq != 2 {
		t.Fatalf("lazy record: seq %d, %v", seq, err)
	}
	if n := syncs() - before; n != 1 {
		t.Errorf("a lazy record and the next one took %d fsyncs, want 1", n)
	}
	within(time.Millisecond)
	alone := l.AddLazy("call", callFields(3), nil)
	if seq, err := alone.Wait(); err != nil || seq != 4 {
		t.Fatalf("lazy record, alone: seq %d, %v", seq, err)
	}
	within(time.Hour)
	last := l.AddLazy("call", callFields(4), nil)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if seq, err := last.Wait(); err != nil || seq != 5 {
		t.Fatalf("lazy record before Close: seq %d, %v", seq, err)
	}
	if r := tl.verify(t); !r.OK || r.Records != 5 {
		t.Fatalf("log: %+v %v", r, r.Problem)
	}
	within(time.Millisecond)
	told := make(chan error, 1)
	if _, err := l.AddLazy("call", callFields(5), func(err error) { told <- err }).Wait(); err == nil {
		t.Fatal("a lazy record was written to a closed log")
	}
	if err := <-told; err == nil {
		t.Fatal("a failed lazy record was not told")
	}
}

// TestAddRefusesFieldsThatAreNotOneObject: fields given as text are
// checked when they are handed over (the commit checks only their shape),
// and nothing of a refused record reaches the log; the records around it
// are written and verify.
func TestAddRefusesFieldsThatAreNotOneObject(t *testing.T) {
	tl := newTestLog(t, nil)
	l, err := Open(tl.opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append("call", []byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{`{"n":`, `{"n":1}}`, `{"n":1} {"m":2}`, `{"n":"\x01"}`, `{"n":1,}`, `["n"]`, `{"n":1}` + "\n", `{`, ``} {
		for _, fields := range []any{[]byte(bad), json.RawMessage(bad)} {
			if seq, err := l.Add("call", fields).Wait(); err == nil {
				t.Errorf("fields %q (%T) were written as record %d", bad, fields, seq)
			}
		}
	}
	if _, err := l.Append("call", json.RawMessage(`{"n":2}`)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if lines := readLines(t, tl.path(1)); len(lines) != 2 {
		t.Fatalf("the log has %d records, want the 2 valid ones:\n%s", len(lines), bytes.Join(lines, nil))
	}
	if r := tl.verify(t); !r.OK || r.Records != 2 {
		t.Fatalf("verify: %+v problem %v", r, r.Problem)
	}
}
