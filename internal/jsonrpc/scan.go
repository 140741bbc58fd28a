package jsonrpc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// scanner reads one line of JSON once, front to back, and refuses it at the
// first thing outside RFC 8259 or outside the rules of Parse: invalid UTF-8,
// a \u escape that is a lone surrogate, a raw control character in a string,
// and a member name equal to another of the same object, exactly or under
// simple case folding. The grammar is the RFC's, and no more lenient than
// jsontext's defaults (which the fuzz target compares it with): a parser
// differential between the proxy and a peer is the attack this guards
// against, so anything a strict parser would refuse is refused here.
//
// It exists because the proxy parses every byte that passes through it:
// strings, which carry nearly all of a large message's bytes, are searched
// for their end with vector instructions (bytes.IndexByte) and checked
// eight bytes at a time while they hold nothing that needs a closer look.
type scanner struct {
	b     []byte
	i     int
	names [][][]byte          // names seen in each open object, innermost last
	folds []map[string][]byte // folded name -> name, for objects past smallObject
	stack []byte              // open '{' and '[' inside value
	used  int                 // name sets touched since release
	// quote and slash are where the next '"' and '\\' were found in b
	// (len(b): none), valid while i has not passed them; see plainWords.
	quote, slash int
	// words makes plain use plainWords even where special has vector code
	// (tests, so that the portable path is held to the same verdicts).
	words bool
}

// maxDepth bounds nesting, as jsontext does (10000): the stack is a slice,
// so this is about memory, not the goroutine stack.
const maxDepth = 10000

// smallObject is the member count up to which case-folded duplicates are
// found by comparing pairs; larger objects use a map of folded names.
const smallObject = 16

// release drops every reference to the line, so the pooled scanner does not
// keep a message alive.
func (s *scanner) release() {
	s.b = nil
	all := s.names[:s.used]
	for i := range all {
		clear(all[i])
		all[i] = all[i][:0]
	}
	clear(s.folds[:s.used])
	s.used = 0
	s.stack = s.stack[:0]
}

func (s *scanner) fail(what string) error {
	return &ParseError{Code: CodeParseError, Reason: fmt.Sprintf("invalid JSON at byte %d: %s", s.i, what)}
}

// unexpected reports the byte at s.i, or the end of the line.
func (s *scanner) unexpected() error {
	if s.i >= len(s.b) {
		return s.fail("unexpected end of input")
	}
	c := s.b[s.i]
	if c < utf8.RuneSelf {
		return s.fail(fmt.Sprintf("invalid character %q", c))
	}
	return s.fail(fmt.Sprintf("invalid byte 0x%02x", c))
}

// skipSpace moves past JSON whitespace and returns the new offset.
func (s *scanner) skipSpace() int {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return s.i
		}
	}
	return s.i
}

// peek returns the next byte that is not whitespace, 0 at the end.
func (s *scanner) peek() byte {
	s.skipSpace()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func valueStart(c byte) bool {
	switch c {
	case '{', '[', '"', 't', 'f', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

// value reads one value and returns its kind: '{', '[', '"', '0' (a number),
// 't', 'f' or 'n'.
func (s *scanner) value() (byte, error) {
	switch c := s.peek(); c {
	case '{', '[':
		return c, s.composite()
	default:
		return s.scalar()
	}
}

func (s *scanner) scalar() (byte, error) {
	switch c := s.peek(); c {
	case '"':
		_, err := s.str()
		return '"', err
	case 't':
		return 't', s.literal("true")
	case 'f':
		return 'f', s.literal("false")
	case 'n':
		return 'n', s.literal("null")
	default:
		if c == '-' || '0' <= c && c <= '9' {
			return '0', s.number()
		}
		return 0, s.unexpected()
	}
}

func (s *scanner) literal(lit string) error {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return s.fail("invalid literal, expected " + lit)
	}
	s.i += len(lit)
	return nil
}

func digit(c byte) bool { return '0' <= c && c <= '9' }

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() error {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && digit(b[i]):
		for i < len(b) && digit(b[i]) {
			i++
		}
	default:
		s.i = i
		return s.unexpected()
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !digit(b[i]) {
			s.i = i
			return s.fail("a number needs digits after '.'")
		}
		for i < len(b) && digit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !digit(b[i]) {
			s.i = i
			return s.fail("a number needs digits in its exponent")
		}
		for i < len(b) && digit(b[i]) {
			i++
		}
	}
	s.i = i
	return nil
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// plain returns the first index from i on of a byte that a string needs a
// closer look at ('"', '\\', below 0x20, at or above 0x80), or len(s.b).
// On amd64 with AVX2 one pass looks for all four, 32 bytes a compare
// (special); elsewhere plainWords does.
func (s *scanner) plain(i int) int {
	if !s.words {
		if j, ok := special(s.b[i:]); ok {
			return i + j
		}
	}
	return s.plainWords(i)
}

// plainWords is plain without vector code of its own: the next '"' and
// '\\' are found with bytes.IndexByte (vector instructions where Go has
// them) and remembered, so that no byte is searched for either twice in one
// line however often a string stops; the bytes before the nearer of the two
// are checked for the rest 32 and then eight at a time.
func (s *scanner) plainWords(i int) int {
	b := s.b
	if s.quote < i {
		s.quote = nextByte(b, i, '"')
	}
	if s.slash < i {
		s.slash = nextByte(b, i, '\\')
	}
	end := min(s.quote, s.slash)
	// (x-lsb*0x20)|x flags a byte below 0x20 or at or above 0x80; a borrow
	// can flag bytes above a real hit only, so the lowest flag is real.
	const c = lsb * 0x20
	for i+32 <= end {
		w := b[i : i+32]
		x0, x1 := binary.LittleEndian.Uint64(w), binary.LittleEndian.Uint64(w[8:])
		x2, x3 := binary.LittleEndian.Uint64(w[16:]), binary.LittleEndian.Uint64(w[24:])
		if ((x0-c)|x0|(x1-c)|x1|(x2-c)|x2|(x3-c)|x3)&msb != 0 {
			break
		}
		i += 32
	}
	for i+8 <= end {
		x := binary.LittleEndian.Uint64(b[i:])
		if f := ((x - c) | x) & msb; f != 0 {
			return i + bits.TrailingZeros64(f)>>3
		}
		i += 8
	}
	for ; i < end; i++ {
		if b[i] < 0x20 || b[i] >= utf8.RuneSelf {
			return i
		}
	}
	return end
}

// nextByte is the index of the first c in b from i on, or len(b).
func nextByte(b []byte, i int, c byte) int {
	if j := bytes.IndexByte(b[i:], c); j >= 0 {
		return i + j
	}
	return len(b)
}

// str reads a string starting at s.i and returns whether it had escapes.
func (s *scanner) str() (escaped bool, err error) {
	b := s.b
	i := s.i + 1
	for {
		i = s.plain(i)
		if i >= len(b) {
			s.i = i
			return false, s.fail("unterminated string")
		}
		switch c := b[i]; {
		case c == '"':
			s.i = i + 1
			return escaped, nil
		case c == '\\':
			escaped = true
			n, err := s.escape(i)
			if err != nil {
				return false, err
			}
			i += n
		case c < 0x20:
			s.i = i
			return false, s.fail("control character in a string")
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				s.i = i
				return false, s.fail("invalid UTF-8 in a string")
			}
			i += size
		}
	}
}

// escape checks the escape at b[i] ('\\') and returns its length.
func (s *scanner) escape(i int) (int, error) {
	b := s.b
	if i+1 >= len(b) {
		s.i = i
		return 0, s.fail("unterminated string")
	}
	switch b[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, nil
	case 'u':
		r, ok := hex4(b[i+2:])
		if !ok {
			s.i = i
			return 0, s.fail("invalid \\u escape")
		}
		if r < 0xD800 || r > 0xDFFF {
			return 6, nil
		}
		// A surrogate must be a high one followed at once by a low one.
		if r <= 0xDBFF && i+12 <= len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
			if lo, ok := hex4(b[i+8:]); ok && 0xDC00 <= lo && lo <= 0xDFFF {
				return 12, nil
			}
		}
		s.i = i
		return 0, s.fail("invalid \\u escape: lone surrogate")
	default:
		s.i = i
		return 0, s.fail("invalid escape")
	}
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// composite reads an object or an array, iteratively: nesting costs a byte
// of s.stack, not a frame of the goroutine's stack.
func (s *scanner) composite() error {
	base, outer := len(s.stack), len(s.names)
	for {
		// A value is expected here.
		switch c := s.peek(); c {
		case '{', '[':
			if outer+len(s.stack)-base >= maxDepth {
				return s.fail("nested too deeply")
			}
			s.i++
			s.stack = append(s.stack, c)
			if c == '{' {
				s.push()
				if s.peek() != '}' {
					if _, err := s.memberName(); err != nil {
						return err
					}
					continue
				}
			} else if s.peek() != ']' {
				continue
			}
		default:
			if _, err := s.scalar(); err != nil {
				return err
			}
		}
		// After a value: close what ends here, or go on to the next element.
		for {
			if len(s.stack) == base {
				return nil
			}
			top := s.stack[len(s.stack)-1]
			c := s.peek()
			if c == ',' {
				s.i++
				if top == '{' {
					if _, err := s.memberName(); err != nil {
						return err
					}
				}
				break
			}
			if c != top+2 { // '{'+2 is '}', '['+2 is ']'
				if top == '{' {
					return s.fail("expected ',' or '}' after an object member")
				}
				return s.fail("expected ',' or ']' after an array element")
			}
			s.i++
			s.stack = s.stack[:len(s.stack)-1]
			if top == '{' {
				s.pop()
			}
		}
	}
}

// next moves past the ',' between members of an object or its closing
// '}', reporting which.
func (s *scanner) next() (closed bool, err error) {
	switch s.peek() {
	case ',':
		s.i++
		return false, nil
	case '}':
		s.i++
		return true, nil
	}
	return false, s.fail("expected ',' or '}' after an object member")
}

// memberName reads a member name and the ':' after it, and records the name
// in the innermost object. The name aliases the line when it has no
// escapes, so that the common case costs no allocation.
func (s *scanner) memberName() ([]byte, error) {
	if s.peek() != '"' {
		return nil, s.fail("expected a member name")
	}
	start := s.i
	escaped, err := s.str()
	if err != nil {
		return nil, err
	}
	name := s.b[start+1 : s.i-1]
	if escaped {
		name, _ = jsontext.AppendUnquote(nil, s.b[start:s.i])
	}
	if err := s.addName(name); err != nil {
		return nil, err
	}
	if s.peek() != ':' {
		return nil, s.fail("expected ':' after a member name")
	}
	s.i++
	return name, nil
}

// push opens an object's name set, reusing an earlier one's storage.
func (s *scanner) push() {
	n := len(s.names)
	if n < cap(s.names) {
		s.names = s.names[:n+1]
		clear(s.names[n]) // an earlier object's names at this depth
		s.names[n] = s.names[n][:0]
	} else {
		s.names = append(s.names, make([][]byte, 0, 8))
	}
	s.folds = append(s.folds, nil)
	s.used = max(s.used, n+1)
}

func (s *scanner) pop() {
	s.names = s.names[:len(s.names)-1]
	s.folds = s.folds[:len(s.folds)-1]
}

// duplicate reports an exact duplicate name by its JSON pointer, as
// jsontext finds it: the error path may be slow, and a pointer tells the
// sender where to look.
func (s *scanner) duplicate(name []byte) error {
	_, err := jsontext.NewDecoder(bytes.NewReader(s.b)).ReadValue()
	var se *jsontext.SyntacticError
	if errors.As(err, &se) && errors.Is(se.Err, jsontext.ErrDuplicateName) {
		at := "top level"
		if se.JSONPointer != "" {
			at = strconv.Quote(string(se.JSONPointer))
		}
		return &ParseError{Code: CodeParseError, Reason: "duplicate member name at " + at}
	}
	return &ParseError{Code: CodeParseError, Reason: fmt.Sprintf("duplicate member name %q", shortName(name))}
}

func caseDuplicate(a, b []byte) error {
	return invalid("member names that differ only in case: %q and %q", shortName(a), shortName(b))
}

func (s *scanner) addName(name []byte) error {
	i := len(s.names) - 1
	if f := s.folds[i]; f != nil {
		k := foldKey(string(name))
		if old, dup := f[k]; dup {
			if bytes.Equal(old, name) {
				return s.duplicate(name)
			}
			return caseDuplicate(old, name)
		}
		f[k] = name
		return nil
	}
	names := s.names[i]
	for _, n := range names {
		if len(n) == len(name) && string(n) == string(name) {
			return s.duplicate(name)
		}
		if bytes.EqualFold(n, name) {
			return caseDuplicate(n, name)
		}
	}
	names = append(names, name)
	if len(names) > smallObject {
		f := make(map[string][]byte, len(names)*2)
		for _, n := range names {
			f[foldKey(string(n))] = n
		}
		s.folds[i] = f
	}
	s.names[i] = names
	return nil
}
