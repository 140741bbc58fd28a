package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpcage/mcpcage/internal/atomicfile"
	"github.com/mcpcage/mcpcage/internal/home"
)

// Defaults for Options.
const (
	DefaultMaxFileSize     = 64 << 20
	DefaultCheckpointEvery = 256
	DefaultLazyWithin      = 10 * time.Millisecond
)

// Names inside the log directory.
const (
	CheckpointName = "checkpoint"
	lockName       = "lock"
)

// Options says where a log lives and how it is kept.
type Options struct {
	Dir    string // the log directory: log files, checkpoint, lock
	KeyDir string // where audit.key lives; keep it outside Dir
	// MaxFileSize starts a new log file once the active one would grow past
	// it; 0 means DefaultMaxFileSize.
	MaxFileSize int64
	// CheckpointEvery signs a checkpoint after every this many records (and
	// after the first record, and on Close); 0 means DefaultCheckpointEvery.
	CheckpointEvery uint64
	// Anchor, when set, is a file (ideally on another device) that receives
	// a copy of every checkpoint and never goes backwards.
	Anchor string
	// AnchorCommand, when set, is run with /bin/sh -c and given every signed
	// checkpoint on its standard input.
	AnchorCommand string
	// Warn receives problems that do not stop a record from being written
	// (an anchor that is ahead of the log, a failing anchor command).
	Warn func(error)
	Now  func() time.Time
	// LazyWithin is how long a record handed to AddLazy may wait for
	// another record's commit to share before one is made for it; 0 means
	// DefaultLazyWithin.
	LazyWithin time.Duration
	// BeforeSync, for tests only, is called with the lines written before
	// each fsync of a log file, under the log's lock: a test blocks in it
	// to hold a commit between its write and its fsync.
	BeforeSync func(lines []byte)
}

// Environment variables read by DefaultOptions.
const (
	EnvAnchor        = "MCPCAGE_AUDIT_ANCHOR"
	EnvAnchorCommand = "MCPCAGE_AUDIT_ANCHOR_CMD"
)

// DefaultOptions is the log of this user: $MCPCAGE_HOME/audit with keys in
// $MCPCAGE_HOME/keys, anchors from the environment.
func DefaultOptions() (Options, error) {
	dir, err := home.Sub("audit")
	if err != nil {
		return Options{}, err
	}
	keys, err := home.Sub("keys")
	if err != nil {
		return Options{}, err
	}
	return Options{
		Dir: dir, KeyDir: keys,
		Anchor:        os.Getenv(EnvAnchor),
		AnchorCommand: os.Getenv(EnvAnchorCommand),
	}, nil
}

// Log appends records. Any number of Logs, in any number of processes, may
// append to one directory at once: each append holds an exclusive file lock
// from reading the head to the fsync of the new line.
type Log struct {
	opts Options
	keys *Keys
	mac  *mac
	lock *writeLock

	mu     sync.Mutex
	closed bool
	f      *os.File // the active file, opened for appending
	fIdx   int
	// The head as this Log last left it; valid while the active file still
	// has the same index and size when the lock is next taken.
	head         head
	appended     bool   // records written since this Log's last checkpoint
	checkpointed uint64 // seq of this Log's last checkpoint
	// writeLine writes one complete line; tests replace it to crash halfway.
	writeLine func(f *os.File, line []byte, seq uint64) error
	buf       []byte // the lines of one commit, reused
	syncs     int    // fsyncs of log files, for tests of group commit

	// Group commit: records wait in queue while a commit runs; the next
	// commit takes them all, with one write and one fsync.
	qmu        sync.Mutex
	queue      []*Pending
	urgent     int         // records in queue added with Add (not AddLazy)
	lazy       *time.Timer // armed while queue holds only AddLazy records
	committing bool
	idle       *sync.Cond // on qmu: signalled when a commit loop ends
}

// Pending is a record handed to Add: Wait says when it is on disk.
type Pending struct {
	kind   string
	fields []byte
	done   chan struct{}
	seq    uint64
	err    error
	failed func(error) // AddLazy's: told when the commit failed
}

// Wait blocks until the record is on disk (written and fsynced) and
// returns its sequence number, or the error that kept it off the disk.
func (p *Pending) Wait() (uint64, error) {
	<-p.done
	return p.seq, p.err
}

// Done is closed once Wait would not block.
func (p *Pending) Done() <-chan struct{} { return p.done }

type head struct {
	idx    int // active file index, 1-based
	size   int64
	sealed bool // the active file is full (read-only): the next line starts a new one
	seq    uint64
	hash   string
	torn   *tornTail
}

type tornTail struct {
	idx    int
	offset int64
	data   []byte
}

// Open opens (creating when needed) the log and its keys.
func Open(opts Options) (*Log, error) {
	if opts.Dir == "" || opts.KeyDir == "" {
		return nil, errors.New("audit: Options.Dir and Options.KeyDir are required")
	}
	if opts.MaxFileSize <= 0 {
		opts.MaxFileSize = DefaultMaxFileSize
	}
	if opts.CheckpointEvery == 0 {
		opts.CheckpointEvery = DefaultCheckpointEvery
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Warn == nil {
		opts.Warn = func(error) {}
	}
	if opts.LazyWithin <= 0 {
		opts.LazyWithin = DefaultLazyWithin
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, err
	}
	k, err := LoadOrCreateKeys(opts.KeyDir)
	if err != nil {
		return nil, err
	}
	l := &Log{opts: opts, keys: k, mac: newMAC(k.MAC), lock: newWriteLock(filepath.Join(opts.Dir, lockName))}
	l.idle = sync.NewCond(&l.qmu)
	return l, nil
}

// Keys returns the log's keys (for argument fingerprints).
func (l *Log) Keys() *Keys { return l.keys }

// Fingerprint is Fingerprint with this log's argument key.
func (l *Log) Fingerprint(server, tool string, arguments []byte) string {
	return Fingerprint(l.keys.Args, server, tool, arguments)
}

// FileName is the name of log file number idx (1-based).
func FileName(idx int) string { return fmt.Sprintf("log-%06d.jsonl", idx) }

func parseFileName(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, "log-")
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, ".jsonl")
	if !ok || len(s) < 6 {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || FileName(n) != name {
		return 0, false
	}
	return n, true
}

// Files lists the log files of dir by index.
func Files(dir string) ([]int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var idx []int
	for _, e := range ents {
		if n, ok := parseFileName(e.Name()); ok && e.Type().IsRegular() {
			idx = append(idx, n)
		}
	}
	sort.Ints(idx)
	return idx, nil
}

// Append writes one record and returns its sequence number. When it returns
// nil the line is on disk (fsync). fields is a JSON object: a value that
// encoding/json marshals to one, or its compact JSON text as []byte or
// json.RawMessage.
func (l *Log) Append(kind string, fields any) (uint64, error) {
	return l.Add(kind, fields).Wait()
}

// Add hands one record to the log and returns at once; Wait on the result
// tells when it is on disk. Records are written in the order Add was called.
// Records added while a commit is writing and fsyncing wait for the next
// commit and share its single write and fsync (group commit), so a burst
// costs about one fsync, not one each.
func (l *Log) Add(kind string, fields any) *Pending {
	p := newPending(kind, fields)
	if p.err != nil {
		return p
	}
	l.qmu.Lock()
	l.queue = append(l.queue, p)
	l.urgent++
	start := !l.committing
	l.committing = true
	l.qmu.Unlock()
	if start {
		go l.commitLoop(false)
	}
	return p
}

// AddLazy hands one record to the log without asking for a commit of its
// own: it is written, in order, with the next commit an Add starts, or
// when none comes within Options.LazyWithin by a commit of its own, and
// at the latest by Close. Wait tells when it is on disk; failed (when not
// nil) is told the error of a commit that could not write it, since no
// one may be waiting. A record whose durability nothing waits for (the
// plain outcome of a call already recorded) so costs no fsync of its own
// when more records follow.
func (l *Log) AddLazy(kind string, fields any, failed func(error)) *Pending {
	p := newPending(kind, fields)
	if p.err != nil {
		if failed != nil {
			failed(p.err)
		}
		return p
	}
	p.failed = failed
	l.qmu.Lock()
	l.queue = append(l.queue, p)
	if !l.committing && l.lazy == nil {
		l.lazy = time.AfterFunc(l.opts.LazyWithin, l.flushLazy)
	}
	l.qmu.Unlock()
	return p
}

func newPending(kind string, fields any) *Pending {
	p := &Pending{kind: kind, done: make(chan struct{})}
	switch f := fields.(type) {
	case json.RawMessage:
		p.fields = f
	case []byte:
		p.fields = f
	case nil:
		p.fields = []byte("{}")
	default:
		var err error
		if p.fields, err = json.Marshal(f); err != nil {
			p.err = fmt.Errorf("audit: %w", err)
			close(p.done)
		}
		return p
	}
	// Text from the caller is checked here, in the caller's goroutine;
	// what json.Marshal made is valid by construction, so the commit
	// (which the answer of a call waits for) checks only its shape.
	if !json.Valid(p.fields) {
		p.err = errFields
		close(p.done)
	}
	return p
}

// flushLazy commits what AddLazy left queued, when no commit runs.
func (l *Log) flushLazy() {
	l.qmu.Lock()
	l.lazy = nil
	start := !l.committing && len(l.queue) > 0
	if start {
		l.committing = true
	}
	l.qmu.Unlock()
	if start {
		go l.commitLoop(true)
	}
}

// commitLoop commits what is queued, again and again, while the queue
// holds a record added with Add (any record, the first time round, when
// all is set); it arms the timer for the AddLazy records it leaves.
func (l *Log) commitLoop(all bool) {
	for {
		l.qmu.Lock()
		batch := l.queue
		if len(batch) == 0 || !all && l.urgent == 0 {
			if len(batch) > 0 && l.lazy == nil {
				l.lazy = time.AfterFunc(l.opts.LazyWithin, l.flushLazy)
			}
			l.committing = false
			l.idle.Broadcast()
			l.qmu.Unlock()
			return
		}
		l.queue, l.urgent = nil, 0
		if l.lazy != nil { // what it waited for is in this batch
			l.lazy.Stop()
			l.lazy = nil
		}
		l.qmu.Unlock()
		l.commit(batch)
		for _, p := range batch {
			if p.failed != nil && p.err != nil {
				p.failed(p.err)
			}
		}
		all = false
	}
}

// drain waits until every record added so far, AddLazy's included, has
// been committed.
func (l *Log) drain() {
	l.qmu.Lock()
	for l.committing || len(l.queue) > 0 {
		if !l.committing {
			l.committing = true
			go l.commitLoop(true)
		}
		l.idle.Wait()
	}
	if l.lazy != nil {
		l.lazy.Stop()
		l.lazy = nil
	}
	l.qmu.Unlock()
}

// commit writes batch under the lock: one write(2), one fsync, then the
// waiters are released, and a checkpoint follows when one is due.
func (l *Log) commit(batch []*Pending) {
	fail := func(err error) {
		for _, p := range batch {
			p.seq, p.err = 0, err
			close(p.done)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		fail(errors.New("audit: log is closed"))
		return
	}
	if err := l.lock.Lock(); err != nil {
		fail(fmt.Errorf("audit: lock %s: %w", l.lock.Path(), err))
		return
	}
	defer l.lock.Unlock()
	h, err := l.readHead()
	if err != nil {
		fail(err)
		return
	}
	if h.torn != nil {
		if err := l.recover(&h); err != nil {
			fail(err)
			return
		}
	}
	before := h.seq
	if err := l.appendBatch(&h, batch); err != nil {
		// Whatever reached the file is read anew by the next commit.
		l.head = head{}
		fail(err)
		return
	}
	for _, p := range batch {
		close(p.done)
	}
	if before == 0 || before/l.opts.CheckpointEvery != h.seq/l.opts.CheckpointEvery {
		if err := l.checkpointLocked(h); err != nil {
			l.opts.Warn(err)
		}
	}
}

// recover cuts a torn tail (a write that a crash interrupted: never
// acknowledged, so nothing that was promised is lost) and writes a recovery
// record that names what was cut, so the chain goes on and the cut is visible.
func (l *Log) recover(h *head) error {
	t := h.torn
	name := filepath.Join(l.opts.Dir, FileName(t.idx))
	if err := os.Truncate(name, t.offset); err != nil {
		return fmt.Errorf("audit: cannot cut torn record: %w", err)
	}
	if f, err := os.OpenFile(name, os.O_WRONLY, 0); err == nil {
		_ = f.Sync()
		f.Close()
	}
	sum := sha256.Sum256(t.data)
	h.torn = nil
	h.size = t.offset
	if t.idx != h.idx { // cannot happen: a torn tail is always in the active file
		return errors.New("audit: torn record outside the active file")
	}
	_, err := l.appendLocked(h, "recovery", map[string]any{
		"file": FileName(t.idx), "offset": t.offset, "torn_bytes": len(t.data),
		"torn_sha256": hex.EncodeToString(sum[:]),
	})
	return err
}

func (l *Log) appendLocked(h *head, kind string, fields any) (uint64, error) {
	fb, err := json.Marshal(fields)
	if err != nil {
		return 0, err
	}
	p := &Pending{kind: kind, fields: fb}
	if err := l.appendBatch(h, []*Pending{p}); err != nil {
		return 0, err
	}
	return p.seq, nil
}

// appendBatch writes the records of batch after h, with one write and one
// fsync (a new file is started when the next line would not fit), and
// moves h past them; each Pending gets its sequence number.
func (l *Log) appendBatch(h *head, batch []*Pending) error {
	type span struct {
		idx        int
		start, end int // in l.buf
	}
	var spans []span
	buf := l.buf[:0]
	seq, prev, idx, size := h.seq, h.hash, h.idx, h.size
	sealed := h.sealed
	now := l.opts.Now()
	for _, p := range batch {
		line, err := encodeLine(l.mac, seq+1, now, prev, p.kind, p.fields)
		if err != nil {
			return err
		}
		if size > 0 && (sealed || size+int64(len(line)) > l.opts.MaxFileSize) {
			idx, size, sealed = idx+1, 0, false
		}
		if len(spans) == 0 || spans[len(spans)-1].idx != idx {
			spans = append(spans, span{idx: idx, start: len(buf)})
		}
		buf = append(buf, line...)
		spans[len(spans)-1].end = len(buf)
		seq++
		size += int64(len(line))
		prev = LineHash(line[:len(line)-1])
		p.seq = seq
	}
	l.buf = buf
	first := h.seq + 1
	for _, sp := range spans {
		if err := l.writeSpan(h, sp.idx, buf[sp.start:sp.end], first); err != nil {
			return err
		}
		first += uint64(bytes.Count(buf[sp.start:sp.end], []byte{'\n'}))
	}
	h.seq, h.hash = seq, prev
	l.head = *h
	l.appended = true
	return nil
}

// writeSpan writes lines (whose first record is number first) to file idx,
// rotating to it when it is not the active file, and fsyncs them.
func (l *Log) writeSpan(h *head, idx int, lines []byte, first uint64) error {
	if idx != h.idx {
		// The full file is sealed before the next one is made, so that a
		// writer holding it open sees with one fstat that it is no longer
		// the end of the log.
		if err := os.Chmod(filepath.Join(l.opts.Dir, FileName(h.idx)), 0o400); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("audit: seal %s: %w", FileName(h.idx), err)
		}
	}
	if l.f == nil || l.fIdx != idx {
		if l.f != nil {
			l.f.Close()
			l.f = nil
		}
		name := filepath.Join(l.opts.Dir, FileName(idx))
		_, statErr := os.Stat(name)
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		if statErr != nil {
			atomicfile.SyncDir(l.opts.Dir)
		}
		l.f, l.fIdx = f, idx
	}
	if idx != h.idx {
		h.idx, h.size, h.sealed = idx, 0, false
	}
	var werr error
	if l.writeLine != nil {
		seq := first
		for rest := lines; len(rest) > 0 && werr == nil; seq++ {
			nl := bytes.IndexByte(rest, '\n') + 1
			werr = l.writeLine(l.f, rest[:nl], seq)
			rest = rest[nl:]
		}
	} else {
		_, werr = l.f.Write(lines)
	}
	if werr != nil {
		return fmt.Errorf("audit: write: %w", werr)
	}
	if l.opts.BeforeSync != nil {
		l.opts.BeforeSync(lines)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("audit: sync: %w", err)
	}
	l.syncs++
	h.size += int64(len(lines))
	return nil
}

// readHead finds the last record under the lock. It trusts the cached head
// only while the active file has exactly the size this Log left it at.
func (l *Log) readHead() (head, error) {
	// The usual case, this Log wrote the last record: one fstat of the
	// file it holds open. A file another writer appended to has another
	// size; one it rotated away from has been sealed (made read-only)
	// before the new one was made.
	if l.f != nil && l.head.seq > 0 && l.head.idx == l.fIdx && !l.head.sealed {
		if st, err := l.f.Stat(); err == nil && st.Size() == l.head.size && st.Mode().Perm()&0o200 != 0 {
			return l.head, nil
		}
	}
	files, err := Files(l.opts.Dir)
	if err != nil {
		return head{}, err
	}
	if len(files) == 0 {
		return head{idx: 1, hash: GenesisPrev}, nil
	}
	last := files[len(files)-1]
	st, err := os.Stat(filepath.Join(l.opts.Dir, FileName(last)))
	if err != nil {
		return head{}, err
	}
	sealed := st.Mode().Perm()&0o200 == 0
	if l.head.idx == last && l.head.size == st.Size() && l.head.seq > 0 && l.head.sealed == sealed {
		return l.head, nil
	}
	h := head{idx: last, size: st.Size(), sealed: sealed}
	line, torn, err := lastLine(filepath.Join(l.opts.Dir, FileName(last)), st.Size())
	if err != nil {
		return head{}, err
	}
	if torn != nil {
		h.torn = &tornTail{idx: last, offset: st.Size() - int64(len(torn)), data: torn}
	}
	// An active file with no complete line takes its head from the file
	// before it (a crash right after rotation).
	for i := len(files) - 2; line == nil && i >= 0; i-- {
		p := filepath.Join(l.opts.Dir, FileName(files[i]))
		pst, err := os.Stat(p)
		if err != nil {
			return head{}, err
		}
		var ptorn []byte
		line, ptorn, err = lastLine(p, pst.Size())
		if err != nil {
			return head{}, err
		}
		if ptorn != nil {
			return head{}, fmt.Errorf("audit: %s does not end with a complete record: run `mcpcage audit verify`", p)
		}
	}
	if line == nil {
		h.seq, h.hash = 0, GenesisPrev
		return h, nil
	}
	var hd header
	if err := splitLine(line, &hd); err != nil {
		return head{}, fmt.Errorf("audit: the last record of %s is damaged: run `mcpcage audit verify`", FileName(last))
	}
	h.seq, h.hash = hd.seq, LineHash(line)
	return h, nil
}

// lastLine returns the last complete line of a file (nil when none) and the
// bytes after it that lack a newline (nil when none).
func lastLine(path string, size int64) (line, torn []byte, err error) {
	if size == 0 {
		return nil, nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	// A torn tail is shorter than a line, so two lines' worth holds it and
	// the complete line before it.
	win := int64(2*MaxLine + 2)
	if win > size {
		win = size
	}
	buf := make([]byte, win)
	if _, err := f.ReadAt(buf, size-win); err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, err
	}
	nl := bytes.LastIndexByte(buf, '\n')
	if nl < 0 {
		if win == size {
			return nil, buf, nil
		}
		return nil, nil, fmt.Errorf("audit: the end of %s is damaged: run `mcpcage audit verify`", path)
	}
	if nl < len(buf)-1 {
		torn = buf[nl+1:]
	}
	start := bytes.LastIndexByte(buf[:nl], '\n') + 1
	if start == 0 && win < size {
		return nil, nil, fmt.Errorf("audit: the last record of %s is too long: run `mcpcage audit verify`", path)
	}
	return buf[start:nl], torn, nil
}

// Checkpoint signs the current head now.
func (l *Log) Checkpoint() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.lock.Lock(); err != nil {
		return err
	}
	defer l.lock.Unlock()
	h, err := l.readHead()
	if err != nil {
		return err
	}
	if h.seq == 0 {
		return nil
	}
	return l.checkpointLocked(h)
}

func (l *Log) checkpointLocked(h head) error {
	c := &Checkpoint{Records: h.seq, Head: h.hash, Time: l.opts.Now()}
	signed, err := signCheckpoint(c, l.keys)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(l.opts.Dir, CheckpointName), signed, 0o644); err != nil {
		return fmt.Errorf("audit: checkpoint: %w", err)
	}
	l.appended = false
	l.checkpointed = h.seq
	if l.opts.Anchor != "" {
		if err := anchorFile(l.opts.Anchor, c, signed, l.keys, l.hashAt(h)); err != nil {
			l.opts.Warn(err)
		}
	}
	if l.opts.AnchorCommand != "" {
		if err := anchorCommand(l.opts.AnchorCommand, signed); err != nil {
			l.opts.Warn(err)
		}
	}
	return nil
}

// Close signs a checkpoint when this Log wrote records since its last one,
// and releases the files.
func (l *Log) Close() error {
	l.drain()
	l.mu.Lock()
	appended := l.appended && !l.closed
	l.mu.Unlock()
	var err error
	if appended {
		err = l.Checkpoint()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
	l.closed = true
	l.lock.Close()
	return err
}

// AppendDefault writes one record to the user's log and checkpoints it:
// for one-off events such as an approval, from a command that is not a
// session.
func AppendDefault(kind string, fields any) error {
	opts, err := DefaultOptions()
	if err != nil {
		return err
	}
	l, err := Open(opts)
	if err != nil {
		return err
	}
	if _, err := l.Append(kind, fields); err != nil {
		l.Close()
		return err
	}
	return l.Close()
}

// hashAt returns a lookup of record hashes, searching from the newest file
// back, since an anchor is normally only a few records behind the head.
func (l *Log) hashAt(h head) func(seq uint64) (string, error) {
	return func(seq uint64) (string, error) {
		if seq == h.seq {
			return h.hash, nil
		}
		files, err := Files(l.opts.Dir)
		if err != nil {
			return "", err
		}
		for i := len(files) - 1; i >= 0; i-- {
			data, err := os.ReadFile(filepath.Join(l.opts.Dir, FileName(files[i])))
			if err != nil {
				return "", err
			}
			var hd header
			first := true
			for len(data) > 0 {
				nl := bytes.IndexByte(data, '\n')
				if nl < 0 {
					break
				}
				line := data[:nl]
				data = data[nl+1:]
				if splitLine(line, &hd) != nil {
					continue
				}
				if first && hd.seq > seq {
					break
				}
				first = false
				if hd.seq == seq {
					return LineHash(line), nil
				}
			}
		}
		return "", fmt.Errorf("record %d not found", seq)
	}
}

// Head reads the log's last record under the lock and returns its sequence
// number (0 for an empty log); an error means appends would fail.
func (l *Log) Head() (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.lock.Lock(); err != nil {
		return 0, err
	}
	defer l.lock.Unlock()
	h, err := l.readHead()
	return h.seq, err
}
