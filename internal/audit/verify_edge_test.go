package audit

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofrs/flock"
)

// Edges of Verify that mutation testing found unchecked (docs/testing.md):
// the empty log, the head and the unanchored count, the sequence number a
// truncation names, how a problem is printed, and the writers' lock.

func TestProblemString(t *testing.T) {
	for _, tt := range []struct {
		p    Problem
		want string
	}{
		{Problem{Kind: Modified, Message: "m"}, "modified: m"},
		{Problem{Kind: Deleted, File: "audit-000002.log", Message: "m"}, "audit-000002.log: deleted: m"},
		{Problem{Kind: Inserted, File: "f", Line: 3, Message: "m"}, "f line 3: inserted: m"},
	} {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestVerifyEmptyLog(t *testing.T) {
	tl := newTestLog(t, nil)
	// The keys exist (a log was opened) but nothing was written.
	l, err := Open(tl.opts)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	os.Remove(filepath.Join(tl.dir, CheckpointName))
	r := tl.verify(t)
	if !r.OK || r.Problem != nil || r.Records != 0 || r.Head != "" || r.Unanchored != 0 {
		t.Fatalf("empty log without a checkpoint: %+v, problem %v", r, r.Problem)
	}
	// The same with an anchor that was never written.
	r, err = Verify(VerifyOptions{Dir: tl.dir, KeyDir: tl.opts.KeyDir, Anchor: filepath.Join(t.TempDir(), "anchor")})
	if err != nil || !r.OK {
		t.Fatalf("empty log, no anchor yet: %+v, %v", r, err)
	}
}

func TestVerifyHeadAndUnanchored(t *testing.T) {
	tl := newTestLog(t, nil)
	tl.write(t, 10)
	saved := filepath.Join(t.TempDir(), "cp")
	copyFile(t, filepath.Join(tl.dir, CheckpointName), saved)
	tl.write(t, 5)
	r := tl.verify(t)
	lines := readLines(t, tl.path(1))
	last := lines[len(lines)-1]
	if !r.OK || r.Records != 15 || r.Unanchored != 0 || r.Head != LineHash(last[:len(last)-1]) {
		t.Fatalf("intact log: %+v (head of the last line %s)", r, LineHash(last[:len(last)-1]))
	}
	// An older checkpoint put back: the log still reaches it, and the five
	// records after it are the ones a cut could remove unseen.
	copyFile(t, saved, filepath.Join(tl.dir, CheckpointName))
	r = tl.verify(t)
	if !r.OK || r.Records != 15 || r.Unanchored != 5 || r.Checkpoint == nil || r.Checkpoint.Records != 10 {
		t.Fatalf("older checkpoint: %+v, problem %v", r, r.Problem)
	}
}

func TestVerifyTruncationNamesTheFirstMissingRecord(t *testing.T) {
	tl := newTestLog(t, nil)
	tl.write(t, 8)
	lines := readLines(t, tl.path(1))
	writeLines(t, tl.path(1), lines[:5])
	r := tl.verify(t)
	if r.OK || r.Problem == nil || r.Problem.Kind != Truncated || r.Problem.Seq != 6 || r.Problem.Line != 5 || r.Problem.File != FileName(1) {
		t.Fatalf("truncated after record 5: %+v", r.Problem)
	}
}

func TestVerifyWaitsForTheWritersLock(t *testing.T) {
	tl := newTestLog(t, nil)
	tl.write(t, 3)
	// A writer holds the lock across a record, its fsync and the
	// checkpoint: Verify takes its snapshot only after that.
	lk := flock.New(filepath.Join(tl.dir, lockName))
	if err := lk.Lock(); err != nil {
		t.Fatal(err)
	}
	done := make(chan *Report, 1)
	go func() {
		r, err := Verify(VerifyOptions{Dir: tl.dir, KeyDir: tl.opts.KeyDir})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	select {
	case r := <-done:
		t.Fatalf("Verify did not wait for the writer's lock: %+v", r)
	case <-time.After(300 * time.Millisecond):
	}
	lk.Unlock()
	select {
	case r := <-done:
		if r == nil || !r.OK {
			t.Fatalf("after the lock: %+v", r)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Verify still waiting after the lock was released")
	}
}

// TestVerifyDeletedFileNamesItsFirstRecord: a deleted log file is named,
// with the first record that went with it, whether it was the first file or
// a later one.
func TestVerifyDeletedFileNamesItsFirstRecord(t *testing.T) {
	for _, gone := range []int{1, 2} {
		tl := newTestLog(t, func(o *Options) { o.MaxFileSize = 2000 })
		tl.write(t, 40)
		first := 1
		if gone == 2 {
			first += len(readLines(t, tl.path(1)))
		}
		if err := os.Remove(tl.path(gone)); err != nil {
			t.Fatal(err)
		}
		r := tl.verify(t)
		p := r.Problem
		if r.OK || p == nil || p.Kind != Deleted || p.File != FileName(gone) || p.Seq != uint64(first) ||
			!strings.Contains(p.Message, fmt.Sprintf("records from %d on were deleted", first)) {
			t.Errorf("file %d deleted: %+v, want record %d named", gone, p, first)
		}
	}
}

// TestVerifyLastRecordEdited: a changed last record, with no line after it
// to look at, is a modified record.
func TestVerifyLastRecordEdited(t *testing.T) {
	tl := newTestLog(t, nil)
	tl.write(t, 10)
	lines := readLines(t, tl.path(1))
	lines[9] = bytes.Replace(lines[9], []byte(`"demo"`), []byte(`"demx"`), 1)
	writeLines(t, tl.path(1), lines)
	r := tl.verify(t)
	if p := r.Problem; r.OK || p == nil || p.Kind != Modified || p.Line != 10 || !strings.Contains(p.Message, "record 10 was changed") {
		t.Fatalf("last record edited: %+v", p)
	}
}

// TestVerifyEmptyLineInserted: an empty line is a line that is not a record,
// not the end of the log.
func TestVerifyEmptyLineInserted(t *testing.T) {
	tl := newTestLog(t, nil)
	tl.write(t, 10)
	lines := readLines(t, tl.path(1))
	writeLines(t, tl.path(1), append(append(lines[:3:3], []byte("\n")), lines[3:]...))
	r := tl.verify(t)
	if p := r.Problem; r.OK || p == nil || p.Kind != Inserted || p.Line != 4 {
		t.Fatalf("empty line inserted after record 3: %+v", p)
	}
}

// TestVerifyTornTailBound: a crash cuts at most one line, so an unterminated
// tail of up to MaxLine bytes and its newline is a torn line, and one byte
// more is damage, where record 4 was expected.
func TestVerifyTornTailBound(t *testing.T) {
	for _, n := range []int{MaxLine + 1, MaxLine + 2} {
		tl := newTestLog(t, nil)
		tl.write(t, 3)
		f, err := os.OpenFile(tl.path(1), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(bytes.Repeat([]byte("x"), n)); err != nil {
			t.Fatal(err)
		}
		f.Close()
		r := tl.verify(t)
		if n == MaxLine+1 {
			if !r.OK || r.Torn == nil || r.Torn.Bytes != n || r.Torn.Line != 4 {
				t.Errorf("a torn tail of %d bytes: %+v, torn %+v", n, r.Problem, r.Torn)
			}
		} else if p := r.Problem; r.OK || p == nil || p.Kind != Modified || p.Line != 4 || p.Seq != 4 || !strings.Contains(p.Message, "incomplete line") {
			t.Errorf("an unterminated tail of %d bytes: %+v", n, p)
		}
	}
}

// TestVerifyChangedSequenceNumber: a record whose number was changed is a
// changed record, and the message says which number belonged there.
func TestVerifyChangedSequenceNumber(t *testing.T) {
	tl := newTestLog(t, nil)
	tl.write(t, 10)
	lines := readLines(t, tl.path(1))
	lines[4] = bytes.Replace(lines[4], []byte(`"seq":5,`), []byte(`"seq":7,`), 1)
	writeLines(t, tl.path(1), lines)
	r := tl.verify(t)
	if p := r.Problem; r.OK || p == nil || p.Kind != Modified || p.Line != 5 ||
		!strings.Contains(p.Message, "record 7 was changed") || !strings.Contains(p.Message, "(record 5 was expected here)") {
		t.Fatalf("record 5 renumbered 7: %+v", p)
	}
}
