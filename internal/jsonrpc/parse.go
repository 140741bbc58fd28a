package jsonrpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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

var emptyBuffer = new(bytes.Buffer)

var decPool = sync.Pool{New: func() any { return new(parser) }}

type parser struct {
	dec   jsontext.Decoder
	line  []byte
	names [][][]byte // names seen in each open object, innermost last
	folds []map[string]struct{}
}

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
func Parse(line []byte) (*Message, error) {
	if IsBatch(line) {
		return nil, &ParseError{Code: CodeInvalidRequest, Reason: ErrBatch.Error()}
	}
	p := decPool.Get().(*parser)
	m, err := p.parse(line)
	p.dec.Reset(emptyBuffer) // drop the references to line
	p.line = nil
	for _, names := range p.names[:cap(p.names)] {
		clear(names[:cap(names)])
	}
	decPool.Put(p)
	if err != nil {
		pe, ok := err.(*ParseError)
		if !ok {
			pe = &ParseError{Code: CodeParseError, Reason: describeSyntax(err)}
		}
		if pe.ID.IsZero() {
			pe.ID = peekID(line)
		}
		return nil, pe
	}
	return m, nil
}

func describeSyntax(err error) string {
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		msg := se.Err.Error()
		if errors.Is(se.Err, jsontext.ErrDuplicateName) {
			return fmt.Sprintf("duplicate member name at %s", pointerOr(se.JSONPointer))
		}
		return fmt.Sprintf("invalid JSON at byte %d: %s", se.ByteOffset, msg)
	}
	return "invalid JSON: " + err.Error()
}

func pointerOr(p jsontext.Pointer) string {
	if p == "" {
		return "top level"
	}
	return strconv.Quote(string(p))
}

func invalid(format string, args ...any) error {
	return &ParseError{Code: CodeInvalidRequest, Reason: fmt.Sprintf(format, args...)}
}

// memberNames are the names whose exact spelling matters to every peer.
var topNames = []string{"jsonrpc", "id", "method", "params", "result", "error"}
var errorNames = []string{"code", "message", "data"}

func nearMiss(name []byte, exact []string) (string, bool) {
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

func (p *parser) parse(line []byte) (*Message, error) {
	// A *bytes.Buffer is parsed in place, without copying into the
	// decoder. Defaults: strict UTF-8, exact duplicate names refused.
	p.dec.Reset(bytes.NewBuffer(line))
	p.line = line
	p.names = p.names[:0]
	p.folds = p.folds[:0]
	d := &p.dec

	tok, err := d.ReadToken()
	if err != nil {
		return nil, err
	}
	if tok.Kind() != '{' {
		return nil, invalid("a JSON-RPC message must be a JSON object")
	}
	p.push()
	m := &Message{Raw: line}
	var (
		haveVersion, haveID, haveMethod, haveResult, haveError, nullID bool
	)
	for d.PeekKind() != '}' {
		name, err := p.readName()
		if err != nil {
			return nil, err
		}
		if n, ok := nearMiss(name, topNames); ok {
			return nil, invalid("member %q must be spelled %q", shortName(name), n)
		}
		switch string(name) {
		case "jsonrpc":
			v, err := d.ReadValue()
			if err != nil {
				return nil, err
			}
			if string(v) != `"2.0"` {
				return nil, invalid(`"jsonrpc" must be "2.0"`)
			}
			haveVersion = true
		case "id":
			v, err := d.ReadValue()
			if err != nil {
				return nil, err
			}
			switch v.Kind() {
			case '"', '0':
				m.ID = ID{raw: string(v)}
			case 'n':
				nullID = true
			default:
				return nil, invalid(`"id" must be a string or a number`)
			}
			haveID = true
		case "method":
			v, err := d.ReadValue()
			if err != nil {
				return nil, err
			}
			if v.Kind() != '"' {
				return nil, invalid(`"method" must be a string`)
			}
			m.Method, err = unquote(v)
			if err != nil {
				return nil, err
			}
			haveMethod = true
		case "params":
			if k := d.PeekKind(); k != '{' && k != '[' {
				if k == 0 {
					_, err := d.ReadToken()
					return nil, err
				}
				return nil, invalid(`"params" must be an object or an array`)
			}
			start := d.InputOffset()
			if err := p.walk(); err != nil {
				return nil, err
			}
			m.Params = trimValue(line[start:d.InputOffset()])
		case "result":
			start := d.InputOffset()
			if err := p.walk(); err != nil {
				return nil, err
			}
			m.Result = trimValue(line[start:d.InputOffset()])
			haveResult = true
		case "error":
			e, err := p.errorObject(line)
			if err != nil {
				return nil, err
			}
			m.Error = e
			haveError = true
		default:
			if err := p.walk(); err != nil {
				return nil, err
			}
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, err
	}
	p.pop()
	if _, err := d.ReadToken(); err != io.EOF {
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

func (p *parser) errorObject(line []byte) (*Error, error) {
	d := &p.dec
	if d.PeekKind() != '{' {
		if d.PeekKind() == 0 {
			_, err := d.ReadToken()
			return nil, err
		}
		return nil, invalid(`"error" must be an object`)
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, err
	}
	p.push()
	e := &Error{}
	var haveCode, haveMsg bool
	for d.PeekKind() != '}' {
		name, err := p.readName()
		if err != nil {
			return nil, err
		}
		if n, ok := nearMiss(name, errorNames); ok {
			return nil, invalid("member %q must be spelled %q", shortName(name), n)
		}
		switch string(name) {
		case "code":
			v, err := d.ReadValue()
			if err != nil {
				return nil, err
			}
			c, perr := strconv.ParseInt(string(v), 10, 32)
			if v.Kind() != '0' || perr != nil {
				return nil, invalid(`error "code" must be an integer`)
			}
			e.Code = int(c)
			haveCode = true
		case "message":
			v, err := d.ReadValue()
			if err != nil {
				return nil, err
			}
			if v.Kind() != '"' {
				return nil, invalid(`error "message" must be a string`)
			}
			if e.Message, err = unquote(v); err != nil {
				return nil, err
			}
			haveMsg = true
		case "data":
			start := d.InputOffset()
			if err := p.walk(); err != nil {
				return nil, err
			}
			e.Data = trimValue(line[start:d.InputOffset()])
		default:
			if err := p.walk(); err != nil {
				return nil, err
			}
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, err
	}
	p.pop()
	if !haveCode || !haveMsg {
		return nil, invalid(`an error object needs "code" and "message"`)
	}
	return e, nil
}

// walk consumes one value, checking member names in every object inside it.
func (p *parser) walk() error {
	d := &p.dec
	base := d.StackDepth()
	for {
		if depth := d.StackDepth(); depth > base {
			if k, n := d.StackIndex(depth); k == '{' && n%2 == 0 && d.PeekKind() == '"' {
				if _, err := p.readName(); err != nil {
					return err
				}
				continue
			}
		}
		tok, err := d.ReadToken()
		if err != nil {
			return err
		}
		switch tok.Kind() {
		case '{':
			p.push()
		case '}':
			p.pop()
		}
		if d.StackDepth() == base {
			return nil
		}
	}
}

// push opens an object's name set, reusing an earlier one's storage.
func (p *parser) push() {
	n := len(p.names)
	if n < cap(p.names) {
		p.names = p.names[:n+1]
		p.names[n] = p.names[n][:0]
	} else {
		p.names = append(p.names, make([][]byte, 0, 8))
	}
	p.folds = append(p.folds, nil)
}

// readName reads an object member name and records it in the innermost
// object. The name aliases the line when it has no escapes, so that the
// common case costs no allocation.
func (p *parser) readName() ([]byte, error) {
	d := &p.dec
	before := d.InputOffset()
	tok, err := d.ReadToken()
	if err != nil {
		return nil, err
	}
	raw := skipSeparators(p.line[before:d.InputOffset()])
	var name []byte
	if len(raw) >= 2 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		name = raw[1 : len(raw)-1]
	} else {
		name = []byte(tok.String())
	}
	return name, p.addName(name)
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

func (p *parser) pop() {
	p.names = p.names[:len(p.names)-1]
	p.folds = p.folds[:len(p.folds)-1]
}

// smallObject is the member count up to which case-folded duplicates are
// found by comparing pairs; larger objects use a map of folded names.
const smallObject = 16

func (p *parser) addName(name []byte) error {
	i := len(p.names) - 1
	names := p.names[i]
	if f := p.folds[i]; f != nil {
		k := foldKey(string(name))
		if _, dup := f[k]; dup {
			return invalid("member names that differ only in case: %q", shortName(name))
		}
		f[k] = struct{}{}
		return nil
	}
	for _, n := range names {
		if bytes.EqualFold(n, name) {
			return invalid("member names that differ only in case: %q and %q", shortName(n), shortName(name))
		}
	}
	names = append(names, name)
	if len(names) > smallObject {
		f := make(map[string]struct{}, len(names)*2)
		for _, n := range names {
			f[foldKey(string(n))] = struct{}{}
		}
		p.folds[i] = f
	}
	p.names[i] = names
	return nil
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

func unquote(v jsontext.Value) (string, error) {
	b, err := jsontext.AppendUnquote(nil, v)
	return string(b), err
}

// trimValue drops what can come between the previous token and a value.
func trimValue(b []byte) []byte {
	for len(b) > 0 {
		switch b[0] {
		case ' ', '\t', '\r', '\n', ':', ',':
			b = b[1:]
		default:
			return b
		}
	}
	return b
}

// skipSeparators drops what can come between the previous token and a name.
func skipSeparators(b []byte) []byte {
	for len(b) > 0 {
		switch b[0] {
		case ' ', '\t', '\r', '\n', ',', '{':
			b = b[1:]
		default:
			return b
		}
	}
	return b
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
