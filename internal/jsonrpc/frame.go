package jsonrpc

import (
	"errors"

	"bufio"
	"bytes"
	"fmt"
	"github.com/go-json-experiment/json/jsontext"
	"io"
	"sync"
)

// DefaultMaxLine is the largest message accepted when no limit is given.
const DefaultMaxLine = 16 << 20

// LineTooLongError is returned by Reader.ReadLine for a line over the limit.
// The line has been consumed and discarded; the Reader can go on.
type LineTooLongError struct{ Max int }

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("message longer than the limit of %d bytes", e.Max)
}

// Reader splits a stream into lines: newline-delimited JSON-RPC framing.
// A line ends at "\n"; a "\r" before it is dropped as well. Lines over the
// limit are skipped without being held in memory.
type Reader struct {
	br  *bufio.Reader
	max int
	acc []byte // a line longer than br's buffer, gathered; reused
	// next is the length, '\n' included, of the line HasLine found at the
	// front of br's buffer (0: none known), so that Next takes it without
	// searching the same bytes again.
	next int
}

// keepAcc is the largest gathering buffer a Reader keeps for the next long
// line; a larger one (up to the limit, 16 MiB by default) is let go.
const keepAcc = 1 << 20

// NewReader returns a Reader of r that refuses lines longer than max bytes
// (max <= 0 means DefaultMaxLine).
func NewReader(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = DefaultMaxLine
	}
	return &Reader{br: bufio.NewReaderSize(r, min(max+2, 256<<10)), max: max}
}

// ReadLine returns the next line without its terminator, in a slice the
// caller owns. Its capacity holds one more byte, a '\n', so that a Writer can
// send the line and its terminator in one write without copying.
// A last line without a terminator is returned before io.EOF.
func (r *Reader) ReadLine() ([]byte, error) {
	line, err := r.Next()
	if err != nil {
		return nil, err
	}
	// append, not make: the new array is not zeroed before the copy (make
	// would clear every byte first, a second pass over a large line).
	return append([]byte(nil), line[:len(line)+1]...)[:len(line)], nil
}

// Next is ReadLine without the copy: the line is returned in the Reader's
// own buffer, and is valid only until the next call of Next or ReadLine
// (or HasLine, which may move what is buffered). Its capacity is one byte
// more, a '\n', as with ReadLine. A caller that keeps the line, or anything
// sliced from it, past that point must copy it (Message.Own).
func (r *Reader) Next() ([]byte, error) {
	if cap(r.acc) > keepAcc {
		r.acc = nil
	}
	acc := r.acc[:0]
	tooLong := false
	for {
		var frag []byte
		var err error
		if n := r.next; n > 0 {
			r.next = 0
			frag, _ = r.br.Peek(n)
			_, _ = r.br.Discard(n)
		} else {
			frag, err = r.br.ReadSlice('\n')
		}
		if err == bufio.ErrBufferFull {
			if !tooLong {
				if len(acc)+len(frag) > r.max+1 { // +1: a "\r" may still be dropped
					tooLong, acc = true, acc[:0]
				} else {
					acc = append(acc, frag...)
				}
			}
			continue
		}
		r.acc = acc
		if err != nil && (err != io.EOF || len(frag)+len(acc) == 0 && !tooLong) {
			if err == io.EOF {
				return nil, io.EOF
			}
			return nil, err
		}
		if tooLong {
			return nil, &LineTooLongError{Max: r.max}
		}
		raw := frag
		frag = bytes.TrimSuffix(frag, []byte{'\n'})
		n := len(acc) + len(frag)
		if n > 0 && (len(frag) > 0 && frag[len(frag)-1] == '\r' || len(frag) == 0 && acc[len(acc)-1] == '\r') {
			n--
		}
		if n > r.max {
			return nil, &LineTooLongError{Max: r.max}
		}
		var line []byte
		if len(acc) == 0 && len(raw) > n {
			line = raw[:n+1] // raw[n] is '\r' or '\n', in the part of the buffer read
		} else {
			// The dropped "\r" may be the last byte of acc (the buffer ended
			// between it and the "\n"): the [:n] drops it.
			acc = append(append(acc, frag...)[:n], '\n')
			r.acc = acc
			line = acc
		}
		line[n] = '\n'
		return line[: n : n+1], nil
	}
}

// Writer writes whole messages, one per line, and is safe for concurrent
// use: two messages never interleave.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	bw  *bufio.Writer
	err error // of a direct write: sticky, as bw's own errors are
}

// directWrite is the size from which a message that carries room for its
// '\n' goes out straight from the caller's slice, in one write, after
// whatever small messages are buffered: copying it into the buffer would
// cost more than the system call it might save.
const directWrite = 16 << 10

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w, bw: bufio.NewWriterSize(w, 64<<10)} }

// WriteMessage writes msg and a newline, and flushes. msg must be one
// complete message without a terminator.
func (w *Writer) WriteMessage(msg []byte) error { return w.Write(msg, true) }

// Write writes msg and a newline. With flush false the message may wait in
// the buffer for a later write; callers pass false only when they are about
// to write again at once (another message is already in hand), so that a
// burst of small messages costs one system call rather than one each. A
// message of directWrite bytes or more with room for its '\n' (as Reader
// gives) is written at once, in one write of its own.
func (w *Writer) Write(msg []byte, flush bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(msg)
	var err error
	switch {
	case w.err != nil:
		return w.err
	case cap(msg) > n && msg[:n+1][n] == '\n' && n >= directWrite:
		if err = w.bw.Flush(); err == nil {
			// A short write leaves part of a line behind: nothing may
			// follow it.
			_, err = w.w.Write(msg[:n+1])
			w.err = err
		}
		return err
	case cap(msg) > n && msg[:n+1][n] == '\n':
		_, err = w.bw.Write(msg[:n+1])
	default:
		_, err = w.bw.Write(msg)
		if err == nil {
			err = w.bw.WriteByte('\n')
		}
	}
	if err == nil && flush {
		err = w.bw.Flush()
	}
	return err
}

// Flush writes out anything held back by Write.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bw.Flush()
}

// HasLine reports whether a complete line is already buffered, so that the
// next ReadLine will not wait for input.
func (r *Reader) HasLine() bool {
	n := r.br.Buffered()
	if n == 0 {
		return false
	}
	b, _ := r.br.Peek(n)
	i := bytes.IndexByte(b, '\n')
	r.next = i + 1
	return i >= 0
}

// SplitBatch returns the elements of a JSON array line, each as its own
// bytes (with capacity for a newline, as ReadLine gives). The elements are
// not validated here: Parse each.
func SplitBatch(line []byte) ([][]byte, error) {
	// Lenient here so that one bad element does not hide the others: each
	// element is then held to Parse's rules on its own.
	d := jsontext.NewDecoder(bytes.NewReader(line), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	tok, err := d.ReadToken()
	if err != nil {
		return nil, err
	}
	if tok.Kind() != '[' {
		return nil, errors.New("not a batch")
	}
	var out [][]byte
	for d.PeekKind() != ']' {
		v, err := d.ReadValue()
		if err != nil {
			return nil, err
		}
		b := make([]byte, len(v)+1)
		copy(b, v)
		b[len(v)] = '\n'
		out = append(out, b[:len(v)])
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("empty batch")
	}
	return out, nil
}
