package audit

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/gofrs/flock"
)

// Problem kinds named by Verify.
const (
	Modified          = "modified"
	Deleted           = "deleted"
	Inserted          = "inserted"
	Reordered         = "reordered"
	Truncated         = "truncated"
	Torn              = "torn"
	RolledBack        = "rolled back"
	Rewritten         = "rewritten"
	Forked            = "forked"
	CheckpointMissing = "checkpoint missing"
	CheckpointInvalid = "checkpoint invalid"
)

// Problem is the first thing found wrong with a log.
type Problem struct {
	Kind    string `json:"kind"`
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"` // 1-based line in File
	Seq     uint64 `json:"seq,omitempty"`  // the sequence number expected there
	Message string `json:"message"`
}

func (p *Problem) String() string {
	if p.File == "" {
		return p.Kind + ": " + p.Message
	}
	if p.Line == 0 {
		return fmt.Sprintf("%s: %s: %s", p.File, p.Kind, p.Message)
	}
	return fmt.Sprintf("%s line %d: %s: %s", p.File, p.Line, p.Kind, p.Message)
}

// TornTail describes an incomplete last line: a write a crash interrupted.
// It is not tampering; the next writer cuts it and records a recovery.
type TornTail struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Offset int64  `json:"offset"`
	Bytes  int    `json:"bytes"`
}

// Recovery is a recovery record found in the log.
type Recovery struct {
	File      string `json:"file"`
	Line      int    `json:"line"`
	Seq       uint64 `json:"seq"`
	TornFile  string `json:"torn_file"`
	Offset    int64  `json:"offset"`
	TornBytes int    `json:"torn_bytes"`
}

// Report is the result of Verify.
type Report struct {
	OK         bool        `json:"ok"`
	Records    uint64      `json:"records"`
	Files      []string    `json:"files"`
	Head       string      `json:"head,omitempty"`
	Problem    *Problem    `json:"problem,omitempty"`
	Torn       *TornTail   `json:"torn,omitempty"`
	Recoveries []Recovery  `json:"recoveries,omitempty"`
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	Anchor     *Checkpoint `json:"anchor,omitempty"`
	AnchorPath string      `json:"anchor_path,omitempty"`
	// Unanchored counts the records after the checkpoint: the ones a
	// truncation could remove without being seen.
	Unanchored uint64 `json:"unanchored"`
}

// VerifyOptions says what to verify.
type VerifyOptions struct {
	Dir    string
	KeyDir string
	// Anchor is a checkpoint file kept elsewhere; the log must reach it.
	Anchor string
}

// Verify recomputes every MAC and hash of the log, checks the sequence, the
// checkpoint and the anchor, and reports the first problem. The error is for
// what stops the check itself (no key, unreadable files).
func Verify(opts VerifyOptions) (*Report, error) {
	k, err := LoadKeys(opts.KeyDir)
	if err != nil {
		return nil, err
	}
	// A consistent snapshot: under a shared lock (writers hold it
	// exclusively across record, fsync and checkpoint) read the anchor, the
	// checkpoint and the files' sizes; then check those bytes without the
	// lock, so writers wait at most for the snapshot. Where the lock cannot
	// be had (a read-only copy), the order anchor, checkpoint, files is the
	// reverse of the writers', which is right except at the very first
	// record.
	lk := flock.New(filepath.Join(opts.Dir, lockName), flock.SetPermissions(0o600))
	locked := false
	if _, err := os.Stat(opts.Dir); err == nil {
		locked = lk.RLock() == nil
	}
	unlock := func() {
		if locked {
			lk.Unlock()
			locked = false
		}
		lk.Close()
	}
	defer unlock()
	r := &Report{Files: []string{}}
	var anchor *Checkpoint
	var anchorErr error
	if opts.Anchor != "" {
		r.AnchorPath = opts.Anchor
		var ab []byte
		ab, anchorErr = os.ReadFile(opts.Anchor)
		if anchorErr == nil {
			anchor, anchorErr = OpenCheckpoint(ab, k.Public)
		}
	}
	var cp *Checkpoint
	cpBytes, cpErr := os.ReadFile(filepath.Join(opts.Dir, CheckpointName))
	if cpErr == nil {
		cp, cpErr = OpenCheckpoint(cpBytes, k.Public)
	}
	files, err := Files(opts.Dir)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		r.Files = append(r.Files, FileName(f))
	}
	sizes := fileSizes(opts.Dir, files)
	unlock()
	w := &walker{opts: opts, files: files, sizes: sizes, mac: newMAC(k.MAC), r: r, want: map[uint64]string{}}
	if cp != nil {
		w.want[cp.Records] = ""
	}
	if anchor != nil {
		w.want[anchor.Records] = ""
	}
	if err := w.walk(); err != nil {
		return nil, err
	}
	if r.Problem != nil {
		return r, nil
	}
	r.Records = w.seq
	if w.seq > 0 {
		r.Head = string(w.prev[:])
	}
	last := func() (string, int) {
		if len(files) == 0 {
			return "", 0
		}
		return FileName(files[len(files)-1]), w.lastLine
	}
	switch {
	case errors.Is(cpErr, fs.ErrNotExist):
		if w.seq > 0 {
			r.Problem = &Problem{Kind: CheckpointMissing, File: CheckpointName,
				Message: "the signed checkpoint is gone, so a cut at the end of the log cannot be ruled out"}
			return r, nil
		}
	case cpErr != nil:
		r.Problem = &Problem{Kind: CheckpointInvalid, File: CheckpointName, Message: cpErr.Error()}
		return r, nil
	default:
		r.Checkpoint = cp
		if p := w.against(cp, "the checkpoint", Truncated, last); p != nil {
			r.Problem = p
			return r, nil
		}
		r.Unanchored = w.seq - cp.Records
	}
	if opts.Anchor != "" {
		switch {
		case errors.Is(anchorErr, fs.ErrNotExist):
			if w.seq > 0 {
				r.Problem = &Problem{Kind: CheckpointMissing, File: opts.Anchor,
					Message: "the anchor file does not exist, so the log cannot be checked against it (it was removed, or no session has written a checkpoint since the anchor was set)"}
				return r, nil
			}
		case anchorErr != nil:
			r.Problem = &Problem{Kind: CheckpointInvalid, File: opts.Anchor, Message: "anchor: " + anchorErr.Error()}
			return r, nil
		default:
			r.Anchor = anchor
			if p := w.against(anchor, "the anchor "+opts.Anchor, RolledBack, last); p != nil {
				r.Problem = p
				return r, nil
			}
		}
	}
	r.OK = true
	return r, nil
}

// fileSizes is the snapshot of the files' sizes, taken under the lock: the
// walk reads no further, so what a writer appends later is not checked
// against a checkpoint read before it. A file that cannot be stat'ed has no
// size and is read as it is.
func fileSizes(dir string, files []int) map[int]int64 {
	sizes := map[int]int64{}
	for _, f := range files {
		if st, err := os.Stat(filepath.Join(dir, FileName(f))); err == nil {
			sizes[f] = st.Size()
		}
	}
	return sizes
}

type walker struct {
	opts  VerifyOptions
	files []int
	sizes map[int]int64 // file sizes in the snapshot
	mac   *mac
	r     *Report
	seq   uint64 // last good record
	prev  [64]byte
	// want holds the checkpointed sequence numbers whose hashes are kept.
	want     map[uint64]string
	lastLine int
}

// against checks the log against a checkpoint: it must reach it, and its
// record there must be the one that was signed.
func (w *walker) against(c *Checkpoint, what, shortKind string, last func() (string, int)) *Problem {
	signed := c.Time.UTC().Format(time.RFC3339)
	if c.Records > w.seq {
		f, l := last()
		kind := shortKind
		msg := fmt.Sprintf("the log ends at record %d but %s signed at %s covers %d records: ", w.seq, what, signed, c.Records)
		if kind == Truncated {
			if n := c.Records - w.seq; n == 1 {
				msg += "the last record was cut off"
			} else {
				msg += fmt.Sprintf("the last %d records were cut off", n)
			}
		} else {
			msg += "the log and its checkpoint were replaced by an older copy"
		}
		return &Problem{Kind: kind, File: f, Line: l, Seq: w.seq + 1, Message: msg}
	}
	if c.Records > 0 && w.want[c.Records] != c.Head {
		return &Problem{Kind: RolledBack, Seq: c.Records,
			Message: fmt.Sprintf("record %d is not the one %s signed at %s: the log was replaced by another copy", c.Records, what, signed)}
	}
	return nil
}

func (w *walker) walk() (err error) {
	// A file cut short by someone else while it is mapped faults on access;
	// that must be an error, not a crash.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("a log file changed while it was being verified (%v); run verify again", r)
		}
	}()
	copy(w.prev[:], GenesisPrev)
	for i, idx := range w.files {
		if i == 0 && idx != 1 || i > 0 && idx != w.files[i-1]+1 {
			missing := 1
			if i > 0 {
				missing = w.files[i-1] + 1
			}
			w.r.Problem = &Problem{Kind: Deleted, File: FileName(missing), Seq: w.seq + 1,
				Message: fmt.Sprintf("the log file %s is missing: records from %d on were deleted with it", FileName(missing), w.seq+1)}
			return nil
		}
		data, release, err := readAll(filepath.Join(w.opts.Dir, FileName(idx)))
		if err != nil {
			return err
		}
		if n, ok := w.sizes[idx]; ok && int64(len(data)) > n {
			data = data[:n] // appended after the snapshot
		}
		done := w.file(i, data)
		release()
		if done {
			return nil
		}
	}
	return nil
}

// file walks one file; it reports whether the walk is over (a problem).
func (w *walker) file(fi int, data []byte) bool {
	name := FileName(w.files[fi])
	var h header
	pos, lineNo := 0, 0
	last := fi == len(w.files)-1
	for pos < len(data) {
		nl := bytes.IndexByte(data[pos:], '\n')
		if nl < 0 {
			if last && len(data)-pos <= MaxLine+1 {
				w.r.Torn = &TornTail{File: name, Line: lineNo + 1, Offset: int64(pos), Bytes: len(data) - pos}
				w.lastLine = lineNo
				return false
			}
			w.r.Problem = &Problem{Kind: Modified, File: name, Line: lineNo + 1, Seq: w.seq + 1,
				Message: "an incomplete line in the middle of the log (a crash can only cut the last line of the last file)"}
			return true
		}
		line := data[pos : pos+nl]
		lineNo++
		if splitLine(line, &h) != nil || h.seq != w.seq+1 || !bytes.Equal(h.prev, w.prev[:]) {
			w.r.Problem = w.classify(name, lineNo, line, w.lookahead(fi, data, pos+nl+1))
			return true
		}
		m, sum := w.mac.check(line, len(h.body))
		if !bytes.Equal(m, h.mac) {
			w.r.Problem = w.classify(name, lineNo, line, w.lookahead(fi, data, pos+nl+1))
			return true
		}
		if string(h.kind) == "recovery" {
			w.recovery(name, lineNo, h)
		}
		hex.Encode(w.prev[:], sum[:])
		w.seq = h.seq
		if _, ok := w.want[h.seq]; ok {
			w.want[h.seq] = string(w.prev[:])
		}
		pos += nl + 1
	}
	w.lastLine = lineNo
	return false
}

func (w *walker) recovery(file string, line int, h header) {
	var f struct {
		File      string `json:"file"`
		Offset    int64  `json:"offset"`
		TornBytes int    `json:"torn_bytes"`
	}
	_ = json.Unmarshal(h.fields, &f)
	w.r.Recoveries = append(w.r.Recoveries, Recovery{File: file, Line: line, Seq: h.seq, TornFile: f.File, Offset: f.Offset, TornBytes: f.TornBytes})
}

// lookaheadLines bounds how far classify looks for where a record went.
const lookaheadLines = 4096

// lookahead returns lines after pos, crossing into the next files.
func (w *walker) lookahead(fi int, data []byte, pos int) [][]byte {
	var out [][]byte
	for len(out) < lookaheadLines {
		if pos >= len(data) {
			fi++
			if fi >= len(w.files) {
				break
			}
			d, err := os.ReadFile(filepath.Join(w.opts.Dir, FileName(w.files[fi])))
			if err != nil {
				break
			}
			data, pos = d, 0
			continue
		}
		nl := bytes.IndexByte(data[pos:], '\n')
		if nl < 0 {
			break
		}
		out = append(out, data[pos:pos+nl])
		pos += nl + 1
	}
	return out
}

type lineInfo struct {
	shape bool // has the record skeleton
	macOK bool
	h     header
	hash  string
}

func (w *walker) inspect(line []byte) lineInfo {
	var li lineInfo
	li.hash = LineHash(line)
	if splitLine(line, &li.h) != nil {
		return li
	}
	li.shape = true
	li.macOK = bytes.Equal(w.mac.of(li.h.body), li.h.mac)
	return li
}

// classify names what is wrong at the first bad line, from the line itself
// and the lines after it.
func (w *walker) classify(file string, lineNo int, line []byte, next [][]byte) *Problem {
	want := w.seq + 1
	prev := string(w.prev[:])
	p := &Problem{File: file, Line: lineNo, Seq: want}
	cur := w.inspect(line)
	var n1 *lineInfo
	if len(next) > 0 {
		li := w.inspect(next[0])
		n1 = &li
	}
	fits := func(li *lineInfo) bool {
		return li != nil && li.macOK && li.h.seq == want && string(li.h.prev) == prev
	}
	switch {
	case !cur.shape || !cur.macOK:
		switch {
		case fits(n1):
			p.Kind = Inserted
			p.Message = fmt.Sprintf("this line is not a record of this log: the chain goes from record %d straight to the next line", w.seq)
		case cur.shape && n1 != nil && n1.shape && !n1.macOK && string(n1.h.prev) == cur.hash:
			p.Kind = Rewritten
			p.Message = fmt.Sprintf("from record %d on the hash chain holds together but no MAC is valid: the log was rewritten by someone without the key (or the key was replaced)", want)
		case !cur.shape:
			p.Kind = Modified
			p.Message = fmt.Sprintf("record %d is not a well-formed record any more", want)
		default:
			p.Kind = Modified
			p.Message = fmt.Sprintf("record %d was changed: its MAC does not match its bytes", cur.h.seq)
			if cur.h.seq != want {
				p.Message += fmt.Sprintf(" (record %d was expected here)", want)
			}
		}
	case cur.h.seq > want:
		at, again := -1, false
		for i, l := range next {
			li := w.inspect(l)
			if !li.macOK {
				continue
			}
			if li.h.seq == want && at < 0 {
				at = i
			}
			if li.h.seq == cur.h.seq && string(li.hash) == cur.hash {
				again = true
			}
		}
		if at == 0 && again {
			p.Kind = Inserted
			p.Message = fmt.Sprintf("this line is a copy of record %d, which comes again later: a copy was inserted", cur.h.seq)
		} else if at >= 0 {
			p.Kind = Reordered
			p.Message = fmt.Sprintf("record %d comes before record %d: records were swapped or moved", cur.h.seq, want)
		} else {
			p.Kind = Deleted
			what := fmt.Sprintf("records %d to %d are missing", want, cur.h.seq-1)
			if cur.h.seq == want+1 {
				what = fmt.Sprintf("record %d is missing", want)
			}
			if w.seq == 0 {
				p.Message = fmt.Sprintf("%s: the log starts at record %d", what, cur.h.seq)
			} else {
				p.Message = fmt.Sprintf("%s: the line before holds record %d and this one record %d", what, w.seq, cur.h.seq)
			}
		}
	case cur.h.seq < want:
		p.Kind = Inserted
		p.Message = fmt.Sprintf("this line repeats record %d, which came earlier: a copy was inserted", cur.h.seq)
	default: // right number, valid MAC, wrong link
		p.Kind = Forked
		p.Message = fmt.Sprintf("record %d does not link to the record before it: it comes from another copy of the log", want)
	}
	return p
}
