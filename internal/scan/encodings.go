package scan

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/base32"
	"encoding/base64"
	"io"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// The encodings beside base64 and hex that a payload is hidden in: base32,
// percent-encoding (%73%65...), HTML character references (&#115;&#x65;),
// backslash escapes (\u0073 \x65) and lists of character codes
// (115 101 110 100). Their decoded text goes where base64's goes
// (checkEncoded): scanned with every rule, and reported as prose when it is
// a sentence in a definition.

// minEscapes is how many encoded characters a span of one of the encodings
// below holds at least: fewer is a word or a path, not a hidden sentence.
const minEscapes = 8

// maxSpans is how many spans otherSpans returns from one text.
const maxSpans = 8

// otherSpans returns the spans of s in percent-encoding, HTML character
// references, backslash escapes or (with codes) character codes that
// decode to text, and what each decodes to. A result is read without
// codes: its lists of numbers are data (pixels, coordinates, bytes), and
// looking at every digit of a long result cost a tenth of its time budget.
func otherSpans(s string, codes bool) (raw, dec []string) {
	// Without codes, the next '%', '&' and '\\' are found with IndexByte
	// (a machine's fastest search), each kept until it is passed.
	next := [3]int{-1, -1, -1}
	for i := 0; i < len(s) && len(raw) < maxSpans; {
		if !codes {
			at := len(s)
			for n, c := range [3]byte{'%', '&', '\\'} {
				if next[n] < i {
					next[n] = len(s)
					if k := strings.IndexByte(s[i:], c); k >= 0 {
						next[n] = i + k
					}
				}
				at = min(at, next[n])
			}
			if at == len(s) {
				break
			}
			i = at
		} else if !spanStart[s[i]] {
			i++
			continue
		}
		var end int
		var d string
		var ok bool
		switch c := s[i]; {
		case c == '%':
			end, d, ok = percentSpan(s, i)
		case c == '&':
			end, d, ok = entitySpan(s, i)
		case c == '\\':
			end, d, ok = escapeSpan(s, i)
		case codes && c >= '0' && c <= '9' && (i == 0 || !wordByte(s[i-1])):
			end, d, ok = codesSpan(s, i)
		}
		if end <= i {
			i++
			continue
		}
		if ok {
			raw, dec = append(raw, s[i:end]), append(dec, d)
		}
		i = end
	}
	return raw, dec
}

// spanStart marks the bytes a span of otherSpans starts with.
var spanStart = func() (t [256]bool) {
	for _, c := range []byte("%&\\0123456789") {
		t[c] = true
	}
	return t
}()

// percentSpan reads %XX escapes from s[i], with the unreserved characters
// of a URL between them.
func percentSpan(s string, i int) (int, string, bool) {
	j, n := i, 0
	for j < len(s) {
		if s[j] == '%' && j+2 < len(s) && isHexByte(s[j+1]) && isHexByte(s[j+2]) {
			j += 3
			n++
			continue
		}
		if c := s[j]; n > 0 && (wordByte(c) || c == '.' || c == '~' || c == '-' || c == '+') {
			j++
			continue
		}
		break
	}
	if n < minEscapes {
		return j, "", false
	}
	d, err := url.QueryUnescape(s[i:j])
	if err != nil {
		return j, "", false
	}
	return j, d, textual(d)
}

// entitySpan reads HTML character references (&#115; &#x73;) from s[i],
// with spaces between them.
func entitySpan(s string, i int) (int, string, bool) {
	var b strings.Builder
	j, n := i, 0
	for j+3 < len(s) && s[j] == '&' && s[j+1] == '#' {
		k, base := j+2, 10
		if s[k] == 'x' || s[k] == 'X' {
			k, base = k+1, 16
		}
		e := k
		for e < len(s) && e-k < 7 && (base == 16 && isHexByte(s[e]) || s[e] >= '0' && s[e] <= '9') {
			e++
		}
		if e == k || e >= len(s) || s[e] != ';' {
			break
		}
		v, err := strconv.ParseUint(s[k:e], base, 32)
		if err != nil || !utf8.ValidRune(rune(v)) {
			break
		}
		b.WriteRune(rune(v))
		n++
		j = e + 1
		for j < len(s) && s[j] == ' ' && j+1 < len(s) && s[j+1] == '&' {
			j++
		}
	}
	if n < minEscapes {
		return j, "", false
	}
	return j, b.String(), textual(b.String())
}

// escapeSpan reads backslash escapes (\u0073, \x73, \u{73}) from s[i].
func escapeSpan(s string, i int) (int, string, bool) {
	var b strings.Builder
	j, n := i, 0
	for j+3 < len(s) && s[j] == '\\' {
		k, e := j+2, 0
		switch s[j+1] {
		case 'x':
			e = k + 2
		case 'u':
			if s[k] == '{' {
				k++
				e = strings.IndexByte(s[k:min(len(s), k+7)], '}')
				if e < 0 {
					e = -1
				} else {
					e += k
				}
			} else {
				e = k + 4
			}
		default:
			e = -1
		}
		if e < 0 || e > len(s) || e == k {
			break
		}
		v, err := strconv.ParseUint(s[k:e], 16, 32)
		if err != nil || !utf8.ValidRune(rune(v)) {
			break
		}
		b.WriteRune(rune(v))
		n++
		j = e
		if j < len(s) && s[j] == '}' {
			j++
		}
	}
	if n < minEscapes {
		return j, "", false
	}
	return j, b.String(), textual(b.String())
}

// codesSpan reads a list of character codes from s[i]: decimal numbers
// (or 0x numbers) of printable characters, each after one separator (a
// space, a comma or a semicolon, and spaces after it).
func codesSpan(s string, i int) (int, string, bool) {
	// Most numbers of a text are alone ("in 2024 the"): a list has a
	// separator and another number right after the first.
	e := i
	for e < len(s) && (s[e] >= '0' && s[e] <= '9' || s[e] == 'x' || s[e] == 'X' || isHexByte(s[e])) {
		e++
	}
	if e >= len(s) || s[e] != ',' && s[e] != ';' && s[e] != ' ' {
		return e, "", false
	}
	k := e + 1
	for k < len(s) && s[k] == ' ' {
		k++
	}
	if k >= len(s) || s[k] < '0' || s[k] > '9' {
		return k, "", false
	}
	var b strings.Builder
	j, n, end := i, 0, i
	for j < len(s) {
		k, base := j, 10
		if j+1 < len(s) && s[j] == '0' && (s[j+1] == 'x' || s[j+1] == 'X') {
			k, base = j+2, 16
		}
		e := k
		for e < len(s) && e-k < 6 && (base == 16 && isHexByte(s[e]) || s[e] >= '0' && s[e] <= '9') {
			e++
		}
		if e == k || e < len(s) && wordByte(s[e]) {
			break
		}
		v, err := strconv.ParseUint(s[k:e], base, 32)
		if err != nil || !utf8.ValidRune(rune(v)) || !unicode.IsPrint(rune(v)) {
			break
		}
		b.WriteRune(rune(v))
		n++
		end = e
		j = e
		if j < len(s) && (s[j] == ',' || s[j] == ';' || s[j] == ' ') {
			j++
		}
		for j < len(s) && s[j] == ' ' {
			j++
		}
		if j == end {
			break
		}
	}
	if n < minEscapes {
		// Past the first number: a list shorter than minEscapes holds no
		// span from a later number either.
		return max(end, i+1), "", false
	}
	return end, b.String(), textual(b.String())
}

// decodeBase32 decodes a run of the base32 alphabet (A-Z, 2-7, padded with
// '=') when it decodes to text.
func decodeBase32(run string) (string, bool) {
	t := strings.TrimRight(run, "=")
	if len(t) < 24 {
		return "", false
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; !(c >= 'A' && c <= 'Z' || c >= '2' && c <= '7') {
			return "", false
		}
	}
	b, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(t)
	if err != nil || !utf8.Valid(b) || !textual(string(b)) {
		return "", false
	}
	return string(b), true
}

// textual reports decoded bytes that are text: valid UTF-8, nine in ten
// runes printable, with a space between words.
func textual(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	printable, spaces, n := 0, 0, 0
	for _, c := range s {
		n++
		if unicode.IsPrint(c) || c == '\n' || c == '\t' {
			printable++
		}
		if c == ' ' {
			spaces++
		}
	}
	return n > 0 && printable*10 >= n*9 && spaces > 0
}

// maxJSONStrings is how many strings jsonText reads from a decoded payload.
const maxJSONStrings = 64

// jsonText returns the strings of dec, one sentence each, when dec is a
// JSON object or array: a payload is often one ({"task": "..."}), and its
// quotes and braces would hide its sentence from proseLike.
func jsonText(dec string) (string, bool) {
	t := strings.TrimSpace(dec)
	if len(t) < 2 || t[0] != '{' && t[0] != '[' {
		return "", false
	}
	d := jsontext.NewDecoder(strings.NewReader(t))
	var b strings.Builder
	for n := 0; n < maxJSONStrings; {
		tok, err := d.ReadToken()
		if err != nil {
			break
		}
		if tok.Kind() == '"' {
			b.WriteString(tok.String())
			b.WriteString(".\n")
			n++
		}
	}
	return b.String(), b.Len() > 0
}

// maxInflated is how much decodeCompressed inflates at most: a payload is
// a sentence or a page, and a compression bomb stops here.
const maxInflated = 64 << 10

// decodeCompressed decodes a base64 run (of encoding enc) that holds gzip
// or zlib data, and inflates it, when what it inflates to is text.
func decodeCompressed(run string, enc *base64.Encoding) (string, bool) {
	t := strings.TrimRight(run, "=")
	if len(t) < 24 {
		return "", false
	}
	var head [3]byte
	if n, err := enc.Decode(head[:], []byte(t[:4])); err != nil || n < 2 {
		return "", false
	}
	gz := head[0] == 0x1f && head[1] == 0x8b
	zl := head[0] == 0x78 && (head[1] == 0x01 || head[1] == 0x5e || head[1] == 0x9c || head[1] == 0xda)
	if !gz && !zl {
		return "", false
	}
	b, err := enc.DecodeString(t)
	if err != nil {
		return "", false
	}
	var r io.Reader
	if gz {
		r, err = gzip.NewReader(bytes.NewReader(b))
	} else {
		r, err = zlib.NewReader(bytes.NewReader(b))
	}
	if err != nil {
		return "", false
	}
	out, err := io.ReadAll(io.LimitReader(r, maxInflated))
	if err != nil && len(out) == 0 || !textual(string(out)) {
		return "", false
	}
	return string(out), true
}
