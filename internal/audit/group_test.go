package audit

import (
	"os"
	"sync"
	"testing"
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
