package audit

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// More edges of Verify that mutation testing found unchecked
// (docs/testing.md): the snapshot of the files' sizes, how far classify
// looks ahead, and the finer choices of its kind and message.

// writeMany writes n records in one group commit (one fsync, not n).
func writeMany(t *testing.T, tl *testLog, n int) {
	t.Helper()
	l, err := Open(tl.opts)
	if err != nil {
		t.Fatal(err)
	}
	var last *Pending
	for i := 0; i < n; i++ {
		last = l.Add("call", map[string]any{"server": "demo", "tool": "add_note", "n": i})
	}
	if _, err := last.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestWalkStopsAtTheSnapshot: what a writer appended after the sizes were
// taken (Verify takes them under the lock, with fileSizes) is not read, so
// the walk ends where the snapshot did.
func TestWalkStopsAtTheSnapshot(t *testing.T) {
	tl := newTestLog(t, nil)
	tl.write(t, 5)
	sizes := fileSizes(tl.dir, []int{1})
	tl.write(t, 5) // appended after the snapshot
	k, err := LoadKeys(tl.opts.KeyDir)
	if err != nil {
		t.Fatal(err)
	}
	r := &Report{}
	w := &walker{opts: VerifyOptions{Dir: tl.dir, KeyDir: tl.opts.KeyDir}, files: []int{1},
		sizes: sizes, mac: newMAC(k.MAC), r: r, want: map[uint64]string{}}
	if err := w.walk(); err != nil {
		t.Fatal(err)
	}
	if r.Problem != nil || r.Torn != nil || w.seq != 5 || w.lastLine != 5 {
		t.Fatalf("walk of a 5-record snapshot of a 10-record file: seq %d, line %d, problem %v, torn %+v", w.seq, w.lastLine, r.Problem, r.Torn)
	}

	// A file the snapshot has no size for (its Stat failed) is read whole.
	r = &Report{}
	w = &walker{opts: VerifyOptions{Dir: tl.dir, KeyDir: tl.opts.KeyDir}, files: []int{1},
		sizes: map[int]int64{}, mac: newMAC(k.MAC), r: r, want: map[uint64]string{}}
	if err := w.walk(); err != nil {
		t.Fatal(err)
	}
	if r.Problem != nil || w.seq != 10 {
		t.Fatalf("walk of a 10-record file with no size: seq %d, problem %v", w.seq, r.Problem)
	}
}

// TestVerifyLookaheadBound: classify looks at most lookaheadLines lines
// past the bad one for the record that belongs there. Record 1 moved to
// just past that bound reads as deleted; one line nearer, as moved.
func TestVerifyLookaheadBound(t *testing.T) {
	for _, tt := range []struct {
		at   int // index of the line swapped with the first
		kind string
		msg  string
	}{
		{lookaheadLines + 1, Deleted, "the log starts at record"},
		{lookaheadLines, Reordered, "comes before record 1"},
	} {
		tl := newTestLog(t, func(o *Options) { o.MaxFileSize = 1 << 30 })
		writeMany(t, tl, lookaheadLines+2)
		lines := readLines(t, tl.path(1))
		lines[0], lines[tt.at] = lines[tt.at], lines[0]
		writeLines(t, tl.path(1), lines)
		r := tl.verify(t)
		if p := r.Problem; r.OK || p == nil || p.Kind != tt.kind || p.Line != 1 || !strings.Contains(p.Message, tt.msg) {
			t.Errorf("record 1 swapped with line %d: %+v, want %s", tt.at+1, p, tt.kind)
		}
	}
}

// TestVerifyLookaheadPastEmptyLine: an empty line after the bad one does
// not end the lookahead; the moved record after it is still found.
func TestVerifyLookaheadPastEmptyLine(t *testing.T) {
	tl := newTestLog(t, nil)
	tl.write(t, 10)
	lines := readLines(t, tl.path(1))
	// 1 2 3 5 "" 4 6 ...: record 5 before 4, with an empty line between.
	out := append([][]byte{}, lines[:3]...)
	out = append(out, lines[4], []byte("\n"), lines[3])
	out = append(out, lines[5:]...)
	writeLines(t, tl.path(1), out)
	r := tl.verify(t)
	if p := r.Problem; r.OK || p == nil || p.Kind != Reordered || p.Line != 4 || !strings.Contains(p.Message, "record 5 comes before record 4") {
		t.Fatalf("record 5 before 4 with an empty line between: %+v", p)
	}
}

// TestVerifyDeletedFirstRecordsMessage: a log that starts late says where
// it starts, not which record the line before holds (there is none).
func TestVerifyDeletedFirstRecordsMessage(t *testing.T) {
	tl := newTestLog(t, nil)
	tl.write(t, 10)
	lines := readLines(t, tl.path(1))
	writeLines(t, tl.path(1), lines[2:])
	r := tl.verify(t)
	if p := r.Problem; r.OK || p == nil || p.Kind != Deleted || p.Line != 1 ||
		p.Message != "records 1 to 2 are missing: the log starts at record 3" {
		t.Fatalf("first two records deleted: %+v", p)
	}
}

// TestVerifyCopyBeforeTwoWanted: a copy of a later record inserted where
// the wanted record follows at once is an inserted copy, even when the
// wanted record comes once more further on (the first place counts).
func TestVerifyCopyBeforeTwoWanted(t *testing.T) {
	tl := newTestLog(t, nil)
	tl.write(t, 10)
	lines := readLines(t, tl.path(1))
	// 1 2 3 [9] 4 5 6 7 8 [4] 9 10
	out := append([][]byte{}, lines[:3]...)
	out = append(out, lines[8])
	out = append(out, lines[3:8]...)
	out = append(out, lines[3])
	out = append(out, lines[8:]...)
	writeLines(t, tl.path(1), out)
	r := tl.verify(t)
	if p := r.Problem; r.OK || p == nil || p.Kind != Inserted || p.Line != 4 || !strings.Contains(p.Message, "copy of record 9, which comes again later") {
		t.Fatalf("copy of 9 inserted before 4, 4 repeated later: %+v", p)
	}
}

// TestVerifyCopyMeansTheSameBytes: a later record with the same number but
// other bytes (from another log under the same key) is not the copy that
// makes a line an inserted one; the line was moved.
func TestVerifyCopyMeansTheSameBytes(t *testing.T) {
	tl := newTestLog(t, nil)
	tl.write(t, 10)
	other := &testLog{opts: Options{Dir: filepath.Join(filepath.Dir(tl.dir), "other"), KeyDir: tl.opts.KeyDir}}
	other.dir = other.opts.Dir
	l, err := Open(other.opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if _, err := l.Append("call", map[string]any{"server": "other", "n": i}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, tl.path(1))
	theirs := readLines(t, other.path(1))
	if bytes.Equal(lines[4], theirs[4]) {
		t.Fatal("the two logs' record 5 are the same bytes")
	}
	// 1 2 3 5 4 5' 6 ...: record 5 before 4, and another log's record 5 after.
	out := append([][]byte{}, lines[:3]...)
	out = append(out, lines[4], lines[3], theirs[4])
	out = append(out, lines[5:]...)
	writeLines(t, tl.path(1), out)
	r := tl.verify(t)
	if p := r.Problem; r.OK || p == nil || p.Kind != Reordered || p.Line != 4 || !strings.Contains(p.Message, "record 5 comes before record 4") {
		t.Fatalf("record 5 before 4, another record 5 after: %+v", p)
	}
}
