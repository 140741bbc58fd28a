package audit

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
)

// Scan calls fn with every line of the log, in order, across files: rec is
// the parsed record, or nil with err saying why the line is not one. Scan
// does not check MACs or the chain; that is Verify's job.
func Scan(dir string, fn func(file string, line int, rec *Record, err error) error) error {
	return scanTo(dir, int(^uint(0)>>1), -1, fn)
}

// scanTo is Scan that stops at byte offset of file number idx (offset < 0:
// the whole file).
func scanTo(dir string, stopIdx int, stopOffset int64, fn func(file string, line int, rec *Record, err error) error) error {
	files, err := Files(dir)
	if err != nil {
		return err
	}
	for _, idx := range files {
		if idx > stopIdx {
			break
		}
		data, err := os.ReadFile(filepath.Join(dir, FileName(idx)))
		if err != nil {
			return err
		}
		if idx == stopIdx && stopOffset >= 0 && int64(len(data)) > stopOffset {
			data = data[:stopOffset]
		}
		n := 0
		for len(data) > 0 {
			nl := bytes.IndexByte(data, '\n')
			if nl < 0 {
				break // a torn tail is not a record
			}
			n++
			rec, perr := ParseLine(data[:nl])
			if err := fn(FileName(idx), n, rec, perr); err != nil {
				return err
			}
			data = data[nl+1:]
		}
	}
	return nil
}

// Follower reads complete lines as they are appended, across rotation.
type Follower struct {
	dir    string
	idx    int
	offset int64
}

// NewFollower starts after everything the log holds now.
func NewFollower(dir string) (*Follower, error) {
	f := &Follower{dir: dir}
	files, err := Files(dir)
	if err != nil {
		return nil, err
	}
	if len(files) > 0 {
		f.idx = files[len(files)-1]
		st, err := os.Stat(filepath.Join(dir, FileName(f.idx)))
		if err != nil {
			return nil, err
		}
		f.offset = st.Size()
		// Start at a line boundary even when the last line is torn.
		if _, torn, err := lastLine(filepath.Join(dir, FileName(f.idx)), st.Size()); err == nil {
			f.offset -= int64(len(torn))
		}
	}
	return f, nil
}

// ScanBefore is Scan over the records that were in the log when the
// Follower was made, and no others.
func (f *Follower) ScanBefore(fn func(file string, line int, rec *Record, err error) error) error {
	if f.idx == 0 {
		return nil
	}
	return scanTo(f.dir, f.idx, f.offset, fn)
}

// Next returns the complete lines appended since the last call (none when
// nothing new), each without its newline.
func (f *Follower) Next() ([][]byte, error) {
	var out [][]byte
	for {
		files, err := Files(f.dir)
		if err != nil {
			return out, err
		}
		if f.idx == 0 {
			if len(files) == 0 {
				return out, nil
			}
			f.idx = files[0]
		}
		fh, err := os.Open(filepath.Join(f.dir, FileName(f.idx)))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return out, err
		}
		if err == nil {
			if _, err := fh.Seek(f.offset, io.SeekStart); err == nil {
				b, _ := io.ReadAll(fh)
				if end := bytes.LastIndexByte(b, '\n'); end >= 0 {
					for _, l := range bytes.Split(b[:end], []byte("\n")) {
						out = append(out, append([]byte(nil), l...))
					}
					f.offset += int64(end + 1)
				}
			}
			fh.Close()
		}
		next := 0
		for _, i := range files {
			if i > f.idx {
				next = i
				break
			}
		}
		if next == 0 {
			return out, nil
		}
		// The writer only moves to a new file once the old one is done.
		f.idx, f.offset = next, 0
	}
}
