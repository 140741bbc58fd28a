package audit

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"time"
)

// Version is the record format version written in every line ("v").
const Version = 1

// MaxLine is the largest line a writer produces and a reader accepts, newline
// excluded. Records hold names, hashes and counts, never payloads, so a line
// near this size is already a sign of trouble.
const MaxLine = 64 << 10

// TimeLayout is the fixed-width UTC timestamp of every record (30 bytes).
const TimeLayout = "2006-01-02T15:04:05.000000000Z"

const (
	prefixV   = `{"v":1,"seq":`
	sepTime   = `,"time":"`
	sepPrev   = `","prev":"`
	sepKind   = `","kind":"`
	sepFields = `","fields":`
	sepMAC    = `,"mac":"`
	suffixEnd = `"}`
	// macTail is the length of `,"mac":"` + 64 hex digits + `"}`.
	macTail = len(sepMAC) + 64 + len(suffixEnd)
	maxKind = 32
)

// GenesisPrev is the "prev" of the first record of a log.
const GenesisPrev = "0000000000000000000000000000000000000000000000000000000000000000"

// Record is one parsed line of the log.
type Record struct {
	Seq    uint64
	Time   time.Time
	Prev   string          // 64 lowercase hex digits
	Kind   string          // [a-z_]{1,32}
	Fields json.RawMessage // the exact bytes of the fields object
	MAC    string          // 64 lowercase hex digits
	Line   []byte          // the exact line, without its newline
}

// Hash returns the SHA-256 of the record's exact line, hex encoded: the
// "prev" of the record after it.
func (r *Record) Hash() string { return LineHash(r.Line) }

// LineHash is the chain hash of one line (without its newline).
func LineHash(line []byte) string {
	h := sha256.Sum256(line)
	return hex.EncodeToString(h[:])
}

// header is what the verifier's hot path needs from a line, found by
// position only: no JSON decoding.
type header struct {
	seq    uint64
	prev   []byte // 64 hex bytes, aliasing the line
	kind   []byte
	fields []byte
	body   []byte // the MACed bytes
	mac    []byte // 64 hex bytes
}

var errShape = errors.New("not an audit record")

// splitLine checks a line's fixed skeleton and cuts it into its parts. It
// does not validate the fields object's JSON; the MAC vouches for that.
func splitLine(line []byte, h *header) error {
	n := len(line)
	if n > MaxLine || n < len(prefixV)+1+len(sepTime)+len(TimeLayout)+len(sepPrev)+64+len(sepKind)+1+len(sepFields)+2+macTail {
		return errShape
	}
	if string(line[:len(prefixV)]) != prefixV {
		return errShape
	}
	tail := line[n-macTail:]
	if string(tail[:len(sepMAC)]) != sepMAC || string(tail[macTail-2:]) != suffixEnd {
		return errShape
	}
	h.mac = tail[len(sepMAC) : len(sepMAC)+64]
	h.body = line[:n-macTail]
	i := len(prefixV)
	var seq uint64
	start := i
	for i < n && line[i] >= '0' && line[i] <= '9' {
		if i-start >= 19 {
			return errShape
		}
		seq = seq*10 + uint64(line[i]-'0')
		i++
	}
	if i == start || (line[start] == '0') || seq == 0 {
		return errShape
	}
	h.seq = seq
	rest := line[i : n-macTail]
	if !bytes.HasPrefix(rest, []byte(sepTime)) {
		return errShape
	}
	rest = rest[len(sepTime):]
	if len(rest) < len(TimeLayout) {
		return errShape
	}
	rest = rest[len(TimeLayout):]
	if !bytes.HasPrefix(rest, []byte(sepPrev)) || len(rest) < len(sepPrev)+64 {
		return errShape
	}
	h.prev = rest[len(sepPrev) : len(sepPrev)+64]
	rest = rest[len(sepPrev)+64:]
	if !bytes.HasPrefix(rest, []byte(sepKind)) {
		return errShape
	}
	rest = rest[len(sepKind):]
	k := 0
	for k < len(rest) && k <= maxKind && (rest[k] >= 'a' && rest[k] <= 'z' || rest[k] == '_') {
		k++
	}
	if k == 0 || k > maxKind {
		return errShape
	}
	h.kind = rest[:k]
	rest = rest[k:]
	if !bytes.HasPrefix(rest, []byte(sepFields)) {
		return errShape
	}
	h.fields = rest[len(sepFields):]
	if len(h.fields) < 2 || h.fields[0] != '{' || h.fields[len(h.fields)-1] != '}' {
		return errShape
	}
	return nil
}

func isLowerHex(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ParseLine parses one line (without its newline) strictly: the skeleton in
// the order the package doc gives, a well-formed timestamp and hex, and a
// fields object that is valid JSON. It does not check the MAC or the chain.
func ParseLine(line []byte) (*Record, error) {
	var h header
	if err := splitLine(line, &h); err != nil {
		return nil, err
	}
	if !isLowerHex(h.prev) || !isLowerHex(h.mac) {
		return nil, errors.New("audit record: prev and mac must be lowercase hex")
	}
	ts := line[len(prefixV)+len(strconv.FormatUint(h.seq, 10))+len(sepTime):][:len(TimeLayout)]
	t, err := time.Parse(TimeLayout, string(ts))
	if err != nil || t.Format(TimeLayout) != string(ts) {
		return nil, errors.New("audit record: bad timestamp")
	}
	if !json.Valid(h.fields) || bytes.IndexByte(line, '\n') >= 0 {
		return nil, errors.New("audit record: fields are not a JSON object")
	}
	return &Record{
		Seq: h.seq, Time: t, Prev: string(h.prev), Kind: string(h.kind),
		Fields: json.RawMessage(h.fields), MAC: string(h.mac), Line: line,
	}, nil
}

// mac computes records' MACs: HMAC-SHA256(key, SHA-256(body)). MACing the
// body's hash rather than the body lets the verifier hash each line once:
// the SHA-256 state after the body gives the body hash, and the same state
// continued over the MAC's tail gives the chain hash of the whole line.
type mac struct {
	h       hash.Hash // HMAC, reset per record
	d       hash.Hash // SHA-256, reset per record
	bodySum [sha256.Size]byte
	sum     [sha256.Size]byte
	lineSum [sha256.Size]byte
	hex     [64]byte
}

func newMAC(key []byte) *mac { return &mac{h: hmac.New(sha256.New, key), d: sha256.New()} }

// of returns the hex MAC of body.
func (m *mac) of(body []byte) []byte {
	m.d.Reset()
	m.d.Write(body)
	m.d.Sum(m.bodySum[:0])
	return m.over()
}

func (m *mac) over() []byte {
	m.h.Reset()
	m.h.Write(m.bodySum[:])
	m.h.Sum(m.sum[:0])
	hex.Encode(m.hex[:], m.sum[:])
	return m.hex[:]
}

// check returns the hex MAC of a line's body (its first n bytes) and the
// SHA-256 of the whole line, hashing the body once.
func (m *mac) check(line []byte, n int) ([]byte, *[sha256.Size]byte) {
	m.d.Reset()
	m.d.Write(line[:n])
	m.d.Sum(m.bodySum[:0])
	m.d.Write(line[n:])
	m.d.Sum(m.lineSum[:0])
	return m.over(), &m.lineSum
}

// errFields is a record's fields that are not one JSON object on one line.
var errFields = errors.New("audit: record fields must be one compact JSON object")

// encodeLine builds the exact bytes of a record, newline included. fields
// is valid JSON already (newPending and appendLocked see to it, off the
// commit's path): only its shape is checked here.
func encodeLine(m *mac, seq uint64, t time.Time, prev, kind string, fields []byte) ([]byte, error) {
	if len(kind) == 0 || len(kind) > maxKind {
		return nil, fmt.Errorf("audit: bad record kind %q", kind)
	}
	for i := 0; i < len(kind); i++ {
		if !(kind[i] >= 'a' && kind[i] <= 'z' || kind[i] == '_') {
			return nil, fmt.Errorf("audit: bad record kind %q", kind)
		}
	}
	if len(fields) < 2 || fields[0] != '{' || bytes.IndexByte(fields, '\n') >= 0 {
		return nil, errFields
	}
	b := make([]byte, 0, 160+len(fields)+macTail)
	b = append(b, prefixV...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, sepTime...)
	b = t.UTC().AppendFormat(b, TimeLayout)
	b = append(b, sepPrev...)
	b = append(b, prev...)
	b = append(b, sepKind...)
	b = append(b, kind...)
	b = append(b, sepFields...)
	b = append(b, fields...)
	sum := m.of(b)
	b = append(b, sepMAC...)
	b = append(b, sum...)
	b = append(b, suffixEnd...)
	if len(b) > MaxLine {
		return nil, fmt.Errorf("audit: record of %d bytes is larger than %d", len(b), MaxLine)
	}
	return append(b, '\n'), nil
}
