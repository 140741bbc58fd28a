package remote

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// event is one server-sent event (the HTML living standard's
// text/event-stream): its type ("" for a plain message), its data lines
// joined with "\n", and its id.
type event struct {
	Type string
	Data []byte
	ID   string
}

// errEventTooLong is an event, or one line of the stream, over the bound:
// the stream is abandoned, never read on past what was promised.
var errEventTooLong = errors.New("an event of the server's stream is over the size bound")

// sseReader reads events from a stream, bounded: no line and no event's
// data is ever held past max bytes, whatever the server sends.
type sseReader struct {
	br  *bufio.Reader
	max int
	// afterCR: the last line ended in a lone CR, so a LF that follows is
	// the same line end, not an empty line.
	afterCR bool
}

func newSSEReader(r io.Reader, max int) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// line reads one line without its end (CRLF, LF or CR). A line longer than
// max is errEventTooLong.
func (s *sseReader) line() ([]byte, error) {
	var buf []byte
	for {
		b, err := s.br.ReadByte()
		if err != nil {
			if err == io.EOF && len(buf) > 0 {
				// A last line with no end is not dispatched (the stream
				// ended mid-event), but is not an error either.
				return nil, io.EOF
			}
			return nil, err
		}
		if s.afterCR {
			s.afterCR = false
			if b == '\n' {
				continue
			}
		}
		switch b {
		case '\n':
			return buf, nil
		case '\r':
			s.afterCR = true
			return buf, nil
		}
		if len(buf) >= s.max {
			return nil, errEventTooLong
		}
		buf = append(buf, b)
	}
}

// next reads the next event that has data; comments, retry fields and
// events without data are passed over. io.EOF when the stream ends.
func (s *sseReader) next() (event, error) {
	var ev event
	var data bytes.Buffer
	hasData := false
	for {
		l, err := s.line()
		if err != nil {
			return event{}, err
		}
		if len(l) == 0 {
			if hasData {
				ev.Data = data.Bytes()
				return ev, nil
			}
			ev = event{}
			continue
		}
		if l[0] == ':' {
			continue // a comment (keep-alive)
		}
		field, value := l, []byte(nil)
		if i := bytes.IndexByte(l, ':'); i >= 0 {
			field, value = l[:i], l[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "event":
			ev.Type = string(value)
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			hasData = true
			if data.Len()+len(value) > s.max {
				return event{}, errEventTooLong
			}
			data.Write(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				ev.ID = string(value)
			}
		}
	}
}

// tooLong says, in one line, what bound a stream passed.
func tooLong(max int) error {
	return fmt.Errorf("the server sent an event over %d bytes; the stream was dropped (raise --max-line if the server is trusted to send that much)", max)
}
