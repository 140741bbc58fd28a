package jsonrpc

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// ParseError says why a line is not an acceptable JSON-RPC message. Code is
// the JSON-RPC error code to answer with (CodeParseError or
// CodeInvalidRequest); ID is the message's id when it could be read, so that
// the error response can be matched by the sender.
type ParseError struct {
	Code   int
	ID     ID
	Reason string
}

func (e *ParseError) Error() string { return e.Reason }

// ErrBatch is returned (wrapped in a *ParseError with CodeInvalidRequest) for
// a JSON array: a batch. SplitBatch splits one.
var ErrBatch = errors.New("JSON-RPC batches are not accepted")

// IsBatch reports whether line holds a JSON array (a JSON-RPC batch) rather
// than a single message. It looks only at the first non-space byte.
func IsBatch(line []byte) bool {
	for _, c := range line {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '[':
			return true
		default:
			return false
		}
	}
	return false
}

var scanPool = sync.Pool{New: func() any { return new(scanner) }}

// Parse validates one line (without its terminator) and returns the message.
// Raw aliases line: the caller must not modify line afterwards.
//
// Besides JSON validity it enforces: valid UTF-8 in every string; no
// duplicate member names in any object, whether exact or differing only in
// letter case (Unicode simple case folding, as encoding/json matches); the
// member names jsonrpc, id, method, params, result and error, and code,
// message and data inside error, spelled exactly (a member that matches one of
// them only when case is ignored is refused); "jsonrpc":"2.0"; ids that are
// strings or numbers (null only in an error response); params an object or
// array; exactly one of result and error in a response.
//
// The whole line is read once, by a hand-written scanner (scan.go) that
// validates UTF-8 and JSON syntax and checks member names in the same pass.
func Parse(line []byte) (*Message, error) {
	if IsBatch(line) {
		return nil, &ParseError{Code: CodeInvalidRequest, Reason: ErrBatch.Error()}
	}
	s := scanPool.Get().(*scanner)
	m, err := s.parse(line)
	s.release()
	scanPool.Put(s)
	if err != nil {
		pe := err.(*ParseError)
		if pe.ID.IsZero() {
			pe.ID = peekID(line)
		}
		return nil, pe
	}
	return m, nil
}

func invalid(format string, args ...any) error {
	return &ParseError{Code: CodeInvalidRequest, Reason: fmt.Sprintf(format, args...)}
}

// memberNames are the names whose exact spelling matters to every peer.
var topNames = []string{"jsonrpc", "id", "method", "params", "result", "error"}
var errorNames = []string{"code", "message", "data"}

func nearMiss(name []byte, exact []string) (string, bool) {
	for _, n := range exact {
		if string(name) == n {
			return "", false // the usual case: spelled exactly
		}
	}
	ascii := true
	for _, c := range name {
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	for _, n := range exact {
		// Only non-ASCII names can fold to a name of another byte length
		// (KELVIN SIGN, LONG S).
		if ascii && len(name) != len(n) {
			continue
		}
		if string(name) != n && bytes.EqualFold(name, []byte(n)) {
			return n, true
		}
	}
	return "", false
}

func (s *scanner) parse(line []byte) (*Message, error) {
	s.b, s.i = line, 0
	s.quote, s.slash = -1, -1
	s.names, s.folds = s.names[:0], s.folds[:0]
	if c := s.peek(); c != '{' {
		if !valueStart(c) {
			return nil, s.unexpected()
		}
		if _, err := s.value(); err != nil {
			return nil, err
		}
		return nil, invalid("a JSON-RPC message must be a JSON object")
	}
	m := &Message{Raw: line}
	var (
		haveVersion, haveID, haveMethod, haveResult, haveError, nullID bool
	)
	err := s.object(topNames, func(name []byte, start int) error {
		switch string(name) {
		case "jsonrpc":
			if _, err := s.value(); err != nil {
				return err
			}
			if string(line[start:s.i]) != `"2.0"` {
				return invalid(`"jsonrpc" must be "2.0"`)
			}
			haveVersion = true
		case "id":
			k, err := s.value()
			if err != nil {
				return err
			}
			switch k {
			case '"', '0':
				m.ID = ID{raw: string(line[start:s.i])}
			case 'n':
				nullID = true
			default:
				return invalid(`"id" must be a string or a number`)
			}
			haveID = true
		case "method":
			k, err := s.value()
			if err != nil {
				return err
			}
			if k != '"' {
				return invalid(`"method" must be a string`)
			}
			m.Method = unquote(line[start:s.i])
			haveMethod = true
		case "params":
			c := s.peek()
			if c != '{' && c != '[' {
				if !valueStart(c) {
					return s.unexpected()
				}
				return invalid(`"params" must be an object or an array`)
			}
			if c == '[' {
				if _, err := s.value(); err != nil {
					return err
				}
			} else if err := s.object(nil, func(name []byte, at int) error {
				if _, err := s.value(); err != nil {
					return err
				}
				switch string(name) {
				case "_meta":
					m.Meta = line[at:s.i]
				case "name":
					m.Name = line[at:s.i]
				case "uri":
					m.URI = line[at:s.i]
				}
				return nil
			}); err != nil {
				return err
			}
			m.Params = line[start:s.i]
		case "result":
			if _, err := s.value(); err != nil {
				return err
			}
			m.Result = line[start:s.i]
			haveResult = true
		case "error":
			e, err := s.errorObject()
			if err != nil {
				return err
			}
			m.Error = e
			haveError = true
		default:
			if _, err := s.value(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Only whitespace may follow (peek's 0 would not tell a NUL byte from
	// the end of the line).
	if s.skipSpace() < len(s.b) {
		return nil, &ParseError{Code: CodeParseError, Reason: "more than one JSON value on the line"}
	}
	if !haveVersion {
		return nil, invalid(`missing "jsonrpc":"2.0"`)
	}
	switch {
	case haveMethod:
		if haveResult || haveError {
			return nil, invalid(`a message cannot have both "method" and "result" or "error"`)
		}
		if nullID {
			return nil, invalid(`a request id cannot be null`)
		}
		if haveID {
			m.Kind = KindRequest
		} else {
			m.Kind = KindNotification
		}
	case haveResult || haveError:
		if haveResult && haveError {
			return nil, invalid(`a response cannot have both "result" and "error"`)
		}
		if !haveID {
			return nil, invalid(`a response needs an "id"`)
		}
		if nullID && !haveError {
			return nil, invalid(`only an error response can have a null id`)
		}
		m.Kind = KindResponse
	default:
		return nil, invalid(`a message needs "method", "result" or "error"`)
	}
	return m, nil
}

// object reads the members of the object whose '{' is at s.i, handing
// each name and where its value starts to member, which reads the value. A
// name that nearly spells one of names is refused (names nil: any name).
func (s *scanner) object(names []string, member func(name []byte, start int) error) error {
	s.i++
	s.push()
	if s.peek() == '}' {
		s.i++
	} else {
		for {
			name, err := s.memberName()
			if err != nil {
				return err
			}
			if n, ok := nearMiss(name, names); names != nil && ok {
				return invalid("member %q must be spelled %q", shortName(name), n)
			}
			if err := member(name, s.skipSpace()); err != nil {
				return err
			}
			if done, err := s.next(); err != nil {
				return err
			} else if done {
				break
			}
		}
	}
	s.pop()
	return nil
}

func (s *scanner) errorObject() (*Error, error) {
	if c := s.peek(); c != '{' {
		if !valueStart(c) {
			return nil, s.unexpected()
		}
		return nil, invalid(`"error" must be an object`)
	}
	e := &Error{}
	var haveCode, haveMsg bool
	err := s.object(errorNames, func(name []byte, start int) error {
		k, err := s.value()
		if err != nil {
			return err
		}
		v := s.b[start:s.i]
		switch string(name) {
		case "code":
			c, perr := strconv.ParseInt(string(v), 10, 32)
			if k != '0' || perr != nil {
				return invalid(`error "code" must be an integer`)
			}
			e.Code = int(c)
			haveCode = true
		case "message":
			if k != '"' {
				return invalid(`error "message" must be a string`)
			}
			e.Message = unquote(v)
			haveMsg = true
		case "data":
			e.Data = v
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !haveCode || !haveMsg {
		return nil, invalid(`an error object needs "code" and "message"`)
	}
	return e, nil
}

// shortName keeps a peer-chosen name short in an error message, which goes
// back to the peer and into mcpcage's log.
func shortName(b []byte) string {
	if len(b) <= 40 {
		return string(b)
	}
	b = b[:40]
	for len(b) > 0 && !utf8.Valid(b) { // do not cut a character in two
		b = b[:len(b)-1]
	}
	return string(b) + "..."
}

// foldKey maps every rune to the smallest rune of its simple-fold orbit, so
// two names have the same key exactly when strings.EqualFold holds.
func foldKey(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r < utf8.RuneSelf {
			if 'A' <= r && r <= 'Z' {
				r += 'a' - 'A'
			}
			// 'k' and 's' have non-ASCII orbit members (K KELVIN SIGN, ſ):
			// their orbit minimum is still the ASCII capital, handled below.
			if r != 'k' && r != 's' {
				b.WriteRune(r)
				continue
			}
		}
		min := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < min {
				min = f
			}
		}
		b.WriteRune(min)
	}
	return b.String()
}

// unquote returns the text of a string the scanner has validated.
func unquote(raw []byte) string {
	s, _ := String(raw)
	return s
}

// String returns the text of raw, one JSON value (a member that Members or
// the parser found in a validated message, say), and false when raw is not
// a string.
func String(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	b, err := jsontext.AppendUnquote(nil, raw)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// peekID finds the top-level "id" of a line that failed validation, so the
// error response can echo it. It is lenient only in reading: an id that is
// present more than once, or is not a string or number, is not echoed.
func peekID(line []byte) ID {
	d := jsontext.NewDecoder(bytes.NewReader(line), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return ID{}
	}
	var id ID
	seen := 0
	for d.PeekKind() == '"' {
		tok, err := d.ReadToken()
		if err != nil {
			break
		}
		name := tok.String()
		v, err := d.ReadValue()
		if err != nil {
			break
		}
		if strings.EqualFold(name, "id") {
			seen++
			if name == "id" && (v.Kind() == '"' || v.Kind() == '0') && utf8.Valid(v) {
				id = ID{raw: string(v)}
			}
		}
	}
	if seen != 1 {
		return ID{}
	}
	return id
}
