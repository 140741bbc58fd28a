package egress

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"unicode/utf8"
)

// Bounds of an event, on both sides of the gateway's output: the gateway
// clips what it sends (Bounded), and the reader skips a line past
// MaxEventLine and clips again what it reads. Every field but the counts
// came, in the end, from the cage.
const (
	MaxEventLine   = 8 << 10
	maxHostField   = 253 // a DNS name
	maxReasonField = 256
	maxAddrField   = 64 // an IPv6 address with its port
	maxShortField  = 16 // verdict, via, phase
)

// Bounded returns e with every text field clipped to its bound (on a rune
// boundary): whatever the cage makes the gateway report, an event fits on
// one line of MaxEventLine.
func (e Event) Bounded() Event {
	e.Host = clipField(e.Host, maxHostField)
	e.Reason = clipField(e.Reason, maxReasonField)
	e.Addr = clipField(e.Addr, maxAddrField)
	e.Verdict = clipField(e.Verdict, maxShortField)
	e.Via = clipField(e.Via, maxShortField)
	e.Phase = clipField(e.Phase, maxShortField)
	return e
}

func clipField(s string, n int) string {
	if len(s) <= n {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return strings.ToValidUTF8(s, "\uFFFD") + "…"
}

// EventSink is what ReadEvents hands the gateway's output to; nil
// functions are skipped.
type EventSink struct {
	Ready func(pipes string) // the first line: the gateway serves
	Event func(Event)        // each event, bounded
	Lost  func()             // a line that is not an event: too long, not JSON, no verdict
}

// errLineTooLong marks a line skipped for its length.
var errLineTooLong = errors.New("line too long")

// ReadEvents reads the gateway's output until r ends: its ready line, then
// one event per line. A line that is too long or is not an event is
// skipped and counted (Lost), never the end of the reading. It returns the
// error that ended r (nil for a clean end).
func ReadEvents(r io.Reader, sink EventSink) error {
	br := bufio.NewReaderSize(r, MaxEventLine)
	first := true
	for {
		line, err := readLine(br)
		if err != nil && !errors.Is(err, errLineTooLong) {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if first {
			var rd Ready
			if err == nil && json.Unmarshal(line, &rd) == nil && rd.Ready != "" {
				first = false
				if sink.Ready != nil {
					sink.Ready(rd.Ready)
				}
			}
			continue
		}
		var e Event
		if err != nil || json.Unmarshal(line, &e) != nil || e.Verdict == "" {
			if err != nil || len(bytes.TrimSpace(line)) > 0 {
				if sink.Lost != nil {
					sink.Lost()
				}
			}
			continue
		}
		if sink.Event != nil {
			sink.Event(e.Bounded())
		}
	}
}

// readLine returns the next line without its newline; a line longer than
// the reader's buffer is read to its end and dropped (errLineTooLong). A
// last line without a newline is returned, then io.EOF.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == nil {
		return line[:len(line)-1], nil
	}
	if errors.Is(err, bufio.ErrBufferFull) {
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = br.ReadSlice('\n')
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		return nil, errLineTooLong
	}
	if len(line) > 0 && errors.Is(err, io.EOF) {
		return line, nil
	}
	return nil, err
}
