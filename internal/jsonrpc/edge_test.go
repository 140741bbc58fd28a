package jsonrpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// The tests in this file hold the hand-written scanner and framer to their
// boundaries: every place where a comparison could be off by one, a
// condition inverted or an operand swapped without the earlier tests
// noticing (found by mutation testing, docs/testing.md).

// valid is the reference: jsontext's own strict validation (RFC 8259, no
// duplicate names, valid UTF-8). For the lines below, where no JSON-RPC rule
// applies, Parse must accept exactly what it accepts.
func agree(t *testing.T, line string) {
	t.Helper()
	_, err := Parse([]byte(line))
	want := jsontext.Value(line).IsValid()
	if (err == nil) != want {
		t.Errorf("Parse(%q): err %v, but jsontext says valid=%v", line, err, want)
	}
}

func TestScannerStringsAgreeWithJSONText(t *testing.T) {
	specials := []string{
		`"`, `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\x`, `\`, `\u`, `\u1`, `\u12`, `\u123`,
		`\u0041`, `\u00e9`, `\u00E9`, `\uzzzz`, `\u00g0`, `\u00G0`, `\u0/00`, `\u:000`, `\u@000`, `\u[000`,
		"\x00", "\x1f", "\x20", "\x7f", "\x80", "\xc3\xa9", "\xc3", "\xff", "\xed\xa0\x80", "\xf0\x9f\x98\x80",
		`\ud7ff`, `\ud800`, `\udbff`, `\udc00`, `\udfff`, `\ue000`, `\uD7FF`, `\uD800`, `\uDA00`, `\uDBFF`, `\uDC00`, `\uDFFF`, `\uE000`,
		`\ud800\udc00`, `\udbff\udfff`, `\uD800\uDC00`, `\uDBFF\uDFFF`, `\ud800\udbff`, `\ud800\ue000`, `\udc00\ud800`,
		`\ud800\u0041`, `\ud800x`, `\ud800\`, `\ud800\u`, `\ud800\udc0`, `\ud800\n`,
	}
	for _, sp := range specials {
		for pad := 0; pad <= 40; pad++ {
			s := strings.Repeat("a", pad) + sp
			agree(t, `{"jsonrpc":"2.0","method":"m","params":{"s":"`+s+`"}}`)
			agree(t, `{"jsonrpc":"2.0","method":"m","params":{"s":"`+s+strings.Repeat("b", 40-pad)+`"}}`)
			// The line ends inside the string: unterminated, at every offset.
			agree(t, `{"jsonrpc":"2.0","method":"m","params":{"s":"`+s)
		}
	}
}

func TestScannerValuesAgreeWithJSONText(t *testing.T) {
	values := []string{
		"0", "-0", "00", "01", "-01", "1", "9", "10", "99", "-", "-a", "+1", "/", ":", "-/", "-:",
		"0.", "0.0", "0.5", "1.", "1.5", ".5", "1..5", "1.5.5", "0.a",
		"1e", "1e5", "1E5", "1e+5", "1e-5", "1e+", "1e-", "1ee5", "1e5.5", "1.5e3", "1.5E-3", "0e0", "-0.0e-0",
		"1/", "1:", "1e/", "1e:", "1./", "1.:",
		"true", "tru", "truee", "false", "fals", "null", "nul", "nulll", "True", "NULL", "nan", "Infinity",
		`""`, `"a"`, "[]", "[1]", "[1,]", "[,1]", "[1 2]", "{}", `{"a":1}`, `{"a":1,}`, `{"a"}`, `{"a":}`, `{1:1}`,
		`{"a":1 "b":2}`, `[[[]]]`, `[[[]]`, `[{"a":[{"b":{}}]}]`, "[1,[2,[3]]]",
	}
	for _, v := range values {
		agree(t, `{"jsonrpc":"2.0","method":"m","params":[`+v+`]}`)
		agree(t, `{"jsonrpc":"2.0","method":"m","params":{"v":`+v+`}}`)
		agree(t, `{"jsonrpc":"2.0","method":"m","params":[`+v)
	}
}

func TestScannerDepthLimit(t *testing.T) {
	// The limit is jsontext's: 10000 levels, the message object included.
	for _, n := range []int{9998, 9999, 10000, 10001} {
		arrays := `{"jsonrpc":"2.0","method":"m","params":` + strings.Repeat("[", n) + strings.Repeat("]", n) + "}"
		agree(t, arrays)
		objects := `{"jsonrpc":"2.0","method":"m","params":` + strings.Repeat(`{"a":`, n-1) + "{}" + strings.Repeat("}", n-1) + "}"
		agree(t, objects)
	}
}

func TestParseErrorObjectNeedsCodeAndMessage(t *testing.T) {
	for _, e := range []string{`{"code":1}`, `{"message":"m"}`, `{}`, `{"data":1}`} {
		line := `{"jsonrpc":"2.0","id":1,"error":` + e + `}`
		if _, err := Parse([]byte(line)); err == nil {
			t.Errorf("Parse(%s) accepted an error object without code and message", line)
		}
	}
	m, err := Parse([]byte(`{"jsonrpc":"2.0","id":1,"error":{"message":"a\nb \u00e9","code":-5}}`))
	if err != nil || m.Error.Code != -5 || m.Error.Message != "a\nb é" {
		t.Fatalf("error object: %+v, %v", m, err)
	}
}

func TestParseUnescapesMethod(t *testing.T) {
	for line, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"method":"tools\/list"}`:     "tools/list",
		`{"jsonrpc":"2.0","id":1,"method":"tools/\u006cist"}`: "tools/list",
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`:      "tools/list",
		`{"jsonrpc":"2.0","id":1,"method":""}`:                "",
	} {
		m, err := Parse([]byte(line))
		if err != nil || m.Method != want {
			t.Errorf("Parse(%s): method %q, %v; want %q", line, m.Method, err, want)
		}
	}
}

func TestParseRefusesLongSNames(t *testing.T) {
	// LONG S (U+017F) folds to 's': "paramſ" is one byte longer than
	// "params" and must still be refused as a misspelling of it.
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"x","paramſ":{}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":1,"meſſage":"m"}}`,
		`{"jsonrpc":"2.0","id":1,"reſult":{}}`,
	} {
		_, err := Parse([]byte(line))
		if err == nil || !strings.Contains(err.Error(), "must be spelled") {
			t.Errorf("Parse(%s): %v, want a misspelling refused", line, err)
		}
	}
}

func TestPeekIDOnlyFromAnObject(t *testing.T) {
	for _, line := range []string{`"x" "id" 5`, `1 {"id":5}`, `{"id":5,"ID":6,"jsonrpc":1}`, `{"id":5,"id":5}`, `{"id":true,"jsonrpc":1}`} {
		_, err := Parse([]byte(line))
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("Parse(%s): %v, want a ParseError", line, err)
		}
		if !pe.ID.IsZero() {
			t.Errorf("Parse(%s): echoed id %s", line, pe.ID)
		}
	}
	_, err := Parse([]byte(`{"id":5,"jsonrpc":"1.0","method":"m"}`))
	var pe *ParseError
	if !errors.As(err, &pe) || pe.ID.String() != "5" {
		t.Errorf("id of a refused request not echoed: %v", err)
	}
}

func TestShortName(t *testing.T) {
	a40 := strings.Repeat("a", 40)
	for in, want := range map[string]string{
		"":                  "",
		a40[:39]:            a40[:39],
		a40:                 a40,
		a40 + "b":           a40 + "...",
		a40[:39] + "é":      a40[:39] + "...", // é is two bytes: cut before it, not through it
		a40[:38] + "€" + "": a40[:38] + "...",
	} {
		if got := shortName([]byte(in)); got != want {
			t.Errorf("shortName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFoldKeyIsEqualFold(t *testing.T) {
	var runes []rune
	for r := rune(0x20); r < 0x250; r++ {
		runes = append(runes, r)
	}
	runes = append(runes, '\u212a', '\u2126', '\u212b', 'ſ', 'ẞ', 'Ω', 'Å', 'µ', 'Μ', 'μ', 'Σ', 'σ', 'ς', 'Θ', 'θ', 'ϑ', 'ϴ', 'ι', 'ͅ', 'ι', 'Ι', 'ᾳ', 'ᾼ')
	keys := make([]string, len(runes))
	for i, r := range runes {
		keys[i] = foldKey(string(r))
	}
	for i, a := range runes {
		for j, b := range runes {
			if (keys[i] == keys[j]) != strings.EqualFold(string(a), string(b)) {
				t.Fatalf("foldKey(%q)=%q, foldKey(%q)=%q, EqualFold=%v", a, keys[i], b, keys[j], strings.EqualFold(string(a), string(b)))
			}
		}
	}
	if foldKey("ParamS") != foldKey("paramſ") || foldKey("ParamS") == foldKey("param") {
		t.Error("foldKey of whole names")
	}
}

func TestIDKeyNumbers(t *testing.T) {
	same := [][2]string{
		{`123456789`, `123456789.0`}, {`123456789`, `1.23456789e8`}, {`100`, `1e2`}, {`-7`, `-7.00`},
		{`-9223372036854775808`, `-9.223372036854775808e18`}, {`9223372036854775807`, `9223372036854775807`},
		{`1.5`, `15e-1`}, {`1e300`, `10e299`}, {`"a\"b"`, `"a\u0022b"`}, {`"\/"`, `"/"`},
	}
	for _, p := range same {
		if a, b := RawID(p[0]).Key(), RawID(p[1]).Key(); a != b {
			t.Errorf("%s and %s: keys %q and %q differ", p[0], p[1], a, b)
		}
	}
	diff := [][2]string{
		{`1.5`, `1`}, {`1.5`, `2`}, {`-1.5`, `-1`}, {`9.3e18`, `-9223372036854775808`}, {`1e19`, `-9223372036854775808`},
		{`9223372036854775807`, `9223372036854775806`}, {`"1.5"`, `1.5`}, {`0.1`, `0`},
	}
	for _, p := range diff {
		if a, b := RawID(p[0]).Key(), RawID(p[1]).Key(); a == b {
			t.Errorf("%s and %s have the same key %q", p[0], p[1], a)
		}
	}
	if k := RawID(`1e2`).Key(); k != "100" {
		t.Errorf("Key(1e2) = %q, want 100", k)
	}
}

func TestBuildersOptionalMembers(t *testing.T) {
	for _, tt := range []struct {
		got, want string
	}{
		{string(NewRequest(IntID(1), "m", nil)), `{"jsonrpc":"2.0","id":1,"method":"m"}`},
		{string(NewRequest(IntID(1), "m", []byte(`{}`))), `{"jsonrpc":"2.0","id":1,"method":"m","params":{}}`},
		{string(NewNotification("n", nil)), `{"jsonrpc":"2.0","method":"n"}`},
		{string(NewNotification("n", []byte(`[]`))), `{"jsonrpc":"2.0","method":"n","params":[]}`},
		{string(NewResponse(StringID("s"), nil)), `{"jsonrpc":"2.0","id":"s","result":{}}`},
		{string(NewResponse(IntID(-2), []byte(`[1]`))), `{"jsonrpc":"2.0","id":-2,"result":[1]}`},
		{string(NewErrorResponse(ID{}, -32700, "x", nil)), `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`},
		{string(NewErrorResponse(IntID(3), 1, "y", []byte(`null`))), `{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"y","data":null}}`},
	} {
		if tt.got != tt.want {
			t.Errorf("built %s, want %s", tt.got, tt.want)
		}
	}
}

// TestReaderFraming checks every line length around the limit, with each
// terminator, against the framing rule: a line ends at "\n" (or at the end
// of the stream), one "\r" before the end is dropped, and a line longer
// than max afterwards is refused and skipped.
func TestReaderFraming(t *testing.T) {
	for _, max := range []int{1, 2, 3, 15, 16, 17, 31, 32, 33, 300} {
		for n := 0; n <= max+3; n++ {
			for _, term := range []string{"\n", "\r\n", "\r\r\n", "", "\r"} {
				body := strings.Repeat("x", n)
				if n > 1 {
					body = "\r" + body[1:] // a "\r" inside a line stays
				}
				in := body + term + "ok\n"
				if term == "" || term == "\r" {
					in = body + term // the last line of the stream
				}
				want := strings.TrimSuffix(strings.TrimSuffix(body+term, "\n"), "\r")
				r := NewReader(strings.NewReader(in), max)
				line, err := r.ReadLine()
				var tl *LineTooLongError
				switch {
				case len(want) > max:
					if !errors.As(err, &tl) || tl.Max != max {
						t.Errorf("max %d, %q: got %q, %v; want too long", max, in, line, err)
					}
				case term == "" && n == 0:
					if err != io.EOF {
						t.Errorf("max %d, empty stream: %q, %v; want EOF", max, line, err)
					}
					continue
				default:
					if err != nil || string(line) != want {
						t.Errorf("max %d, %q: got %q, %v; want %q", max, in, line, err, want)
					}
				}
				if term == "" || term == "\r" {
					if l, err := r.ReadLine(); err != io.EOF {
						t.Errorf("max %d, %q: after the last line: %q, %v; want EOF", max, in, l, err)
					}
					continue
				}
				if max >= 2 {
					if l, err := r.ReadLine(); err != nil || string(l) != "ok" {
						t.Errorf("max %d, %q: next line %q, %v; want ok", max, in, l, err)
					}
				}
			}
		}
	}
}

func TestReaderDefaultLimit(t *testing.T) {
	for _, max := range []int{0, -1} {
		big := strings.Repeat("y", 1<<20)
		r := NewReader(strings.NewReader(big+"\n"), max)
		line, err := r.ReadLine()
		if err != nil || len(line) != len(big) {
			t.Errorf("NewReader(max %d): a 1 MiB line: %d bytes, %v; want it whole (limit %d)", max, len(line), err, DefaultMaxLine)
		}
		r = NewReader(io.MultiReader(io.LimitReader(zeros{}, DefaultMaxLine+1), strings.NewReader("\n")), max)
		if _, err := r.ReadLine(); err == nil {
			t.Errorf("NewReader(max %d): a line over DefaultMaxLine accepted", max)
		}
	}
}

func TestReaderErrorPassedOn(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader("partial"), iotestErr{boom}), 100)
	if _, err := r.ReadLine(); !errors.Is(err, boom) {
		t.Errorf("read error: %v, want boom", err)
	}
}

// zeros is an endless stream of 'z'.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'z'
	}
	return len(p), nil
}

type iotestErr struct{ err error }

func (e iotestErr) Read([]byte) (int, error) { return 0, e.err }

func TestSplitBatch(t *testing.T) {
	parts, err := SplitBatch([]byte(` [ {"a":1} , 2,"x" ] `))
	if err != nil || len(parts) != 3 || string(parts[0]) != `{"a":1}` || string(parts[2]) != `"x"` {
		t.Fatalf("SplitBatch: %q, %v", parts, err)
	}
	for _, p := range parts {
		if cap(p) <= len(p) || p[:len(p)+1][len(p)] != '\n' {
			t.Errorf("element %q has no newline in its capacity", p)
		}
	}
	for _, bad := range []string{`[]`, `{}`, `[1,`, `[1 2]`, ``} {
		if _, err := SplitBatch([]byte(bad)); err == nil {
			t.Errorf("SplitBatch(%q) accepted", bad)
		}
	}
}

func TestWriterTerminatorFromCapacity(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	withNL := []byte("one\n")[:3]
	withOther := []byte("two!")[:3]
	if err := w.Write(withNL, false); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(withOther, false); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Errorf("Write(flush false) wrote at once: %q", out.String())
	}
	if err := w.WriteMessage([]byte("three")); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "one\ntwo\nthree\n" {
		t.Errorf("written %q", got)
	}
	if err := w.Write([]byte("four"), false); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil || !strings.HasSuffix(out.String(), "four\n") {
		t.Errorf("Flush: %q, %v", out.String(), err)
	}
}

func TestUnexpectedByteNamed(t *testing.T) {
	for v, want := range map[string]string{
		"@":    `invalid character '@'`,
		"\x7f": `invalid character '\x7f'`,
		"\x80": "invalid byte 0x80",
		"\xff": "invalid byte 0xff",
	} {
		_, err := Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"x","params":[` + v + `]}`))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("params [%q]: %v, want %q", v, err, want)
		}
	}
}

// TestReaderAtTheBufferCap: limits above the buffer's cap (256 KiB) are
// read in several fragments; a line of exactly the limit, with "\r\n", must
// pass, one byte more must not.
func TestReaderAtTheBufferCap(t *testing.T) {
	const max = 2*256<<10 - 1
	for _, tt := range []struct {
		n    int
		term string
		ok   bool
	}{{max, "\r\n", true}, {max, "\n", true}, {max + 1, "\r\n", false}, {max + 1, "\n", false}, {max - 1, "\r\n", true}} {
		in := strings.Repeat("x", tt.n) + tt.term + "next\n"
		r := NewReader(strings.NewReader(in), max)
		line, err := r.ReadLine()
		if tt.ok != (err == nil) || tt.ok && len(line) != tt.n {
			t.Errorf("%d bytes + %q: %d bytes, %v; want ok=%v", tt.n, tt.term, len(line), err, tt.ok)
		}
		if l, err := r.ReadLine(); err != nil || string(l) != "next" {
			t.Errorf("%d bytes + %q: next line %q, %v", tt.n, tt.term, l, err)
		}
	}
}

// TestReaderCRAtTheBufferEdge: with the default limit, a line whose "\r"
// is the last byte of the reader's 256 KiB buffer and whose "\n" comes in
// the next read. Such a line from a server used to crash mcpcage (a slice
// bounds panic in ReadLine).
func TestReaderCRAtTheBufferEdge(t *testing.T) {
	for _, n := range []int{256<<10 - 2, 256<<10 - 1, 256 << 10, 512<<10 - 1} {
		r := NewReader(strings.NewReader(strings.Repeat("x", n)+"\r\nnext\n"), 0)
		line, err := r.ReadLine()
		if err != nil || len(line) != n || bytes.IndexByte(line, '\r') >= 0 {
			t.Errorf("%d bytes + CRLF: %d bytes, %v", n, len(line), err)
		}
		if l, err := r.ReadLine(); err != nil || string(l) != "next" {
			t.Errorf("%d bytes + CRLF: next line %q, %v", n, l, err)
		}
	}
}

// TestReaderTooLongLineIsNotHeld: a line over the limit is skipped as it
// streams by, not gathered first (a server could otherwise make mcpcage
// allocate without bound).
func TestReaderTooLongLineIsNotHeld(t *testing.T) {
	in := io.MultiReader(io.LimitReader(zeros{}, 64<<20), strings.NewReader("\nok\n"))
	r := NewReader(in, 1024)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := r.ReadLine()
	runtime.ReadMemStats(&after)
	var tl *LineTooLongError
	if !errors.As(err, &tl) {
		t.Fatalf("64 MiB line: %v, want too long", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
		t.Errorf("skipping a 64 MiB line allocated %d bytes", n)
	}
	if l, err := r.ReadLine(); err != nil || string(l) != "ok" {
		t.Errorf("after it: %q, %v", l, err)
	}
}

func TestHasLine(t *testing.T) {
	r0 := NewReader(strings.NewReader("a\n\nb"), 10)
	r0.ReadLine()
	if !r0.HasLine() {
		t.Error("HasLine with an empty line buffered")
	}
	r := NewReader(strings.NewReader("a\nb"), 10)
	if r.HasLine() {
		t.Error("HasLine before any read")
	}
	if _, err := r.ReadLine(); err != nil {
		t.Fatal(err)
	}
	if r.HasLine() {
		t.Error(`HasLine with only "b" buffered`)
	}
	r = NewReader(strings.NewReader("a\nb\n"), 10)
	r.ReadLine()
	if !r.HasLine() {
		t.Error(`HasLine with "b\n" buffered`)
	}
}

// TestNextAfterHasLine: the line HasLine found is the one Next gives (Next
// takes it without searching again), a "\r" before its "\n" dropped, and
// the lines after it follow, whether HasLine was asked once, twice or not.
func TestNextAfterHasLine(t *testing.T) {
	in := "one\ntwo\r\n\nthree\nfour"
	want := []string{"one", "two", "", "three", "four"}
	for asks := range 3 {
		r := NewReader(strings.NewReader(in), 10)
		if _, err := r.Next(); err != nil { // fills the buffer
			t.Fatal(err)
		}
		for _, w := range want[1:] {
			for range asks {
				r.HasLine()
			}
			l, err := r.Next()
			if err != nil || string(l) != w || cap(l) <= len(l) || l[:len(l)+1][len(l)] != '\n' {
				t.Fatalf("asked %d times: Next = %q, %v; want %q with room for a '\\n'", asks, l, err, w)
			}
		}
		if l, err := r.Next(); err != io.EOF {
			t.Fatalf("asked %d times: after the last line %q, %v", asks, l, err)
		}
	}
}

func ExampleID_Key() {
	fmt.Println(RawID(`1.0`).Key(), RawID(`"\u0031"`).Key())
	// Output: 1 "1"
}

// TestErrorsSayWhere: a missing separator names the container it is
// missing in, and an exact duplicate name is reported by its JSON pointer,
// so that the sender can find it.
func TestErrorsSayWhere(t *testing.T) {
	for params, want := range map[string]string{
		`[1 2]`:                 "expected ',' or ']' after an array element",
		`[[1] 2]`:               "expected ',' or ']' after an array element",
		`{"a":1 "b":2}`:         "expected ',' or '}' after an object member",
		`{"a":[1] "b":2}`:       "expected ',' or '}' after an object member",
		`{"a":1,"a":2}`:         `duplicate member name at "/params/a"`,
		`[{"x":{"k":1,"k":1}}]`: `duplicate member name at "/params/0/x/k"`,
		`{"a":tru}`:             "invalid literal, expected true",
		`{"_meta":nul}`:         "invalid literal, expected null",
	} {
		_, err := Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"x","params":` + params + `}`))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("params %s: %v, want %q", params, err, want)
		}
	}
	// A member the parser does not know is read as strictly.
	if _, err := Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"x","extra":tru}`)); err == nil || !strings.Contains(err.Error(), "invalid literal, expected true") {
		t.Errorf("an unknown member's bad value: %v", err)
	}
}

// lineAtATime hands out one line per Read, so that a bufio.Reader over it
// reads each line into the start of its buffer, over the one before.
type lineAtATime struct{ lines []string }

func (l *lineAtATime) Read(p []byte) (int, error) {
	if len(l.lines) == 0 {
		return 0, io.EOF
	}
	n := copy(p, l.lines[0])
	l.lines[0] = l.lines[0][n:]
	if l.lines[0] == "" {
		l.lines = l.lines[1:]
	}
	return n, nil
}

func TestNextReusesOwnCopies(t *testing.T) {
	first := `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":{"d":"first"}}}`
	second := `{"jsonrpc":"2.0","id":2,"result":{"r":"second-second-second-second-sec"}}`
	third := `{"jsonrpc":"2.0","id":3,"method":"m","params":{"p":"third-third-third-third-third-t"}}`
	r := NewReader(&lineAtATime{lines: []string{first + "\r\n", second + "\n", third + "\n"}}, 0)
	var kept, borrowed []*Message
	for range 3 {
		line, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if cap(line) <= len(line) || line[:len(line)+1][len(line)] != '\n' {
			t.Fatalf("Next gave no room for the terminator: %q", line[:cap(line)])
		}
		m, err := Parse(line)
		if err != nil {
			t.Fatal(err)
		}
		b := *m
		borrowed = append(borrowed, &b)
		m.Own()
		kept = append(kept, m)
	}
	if string(borrowed[0].Raw) == first {
		t.Fatal("the reader did not reuse its buffer: this test shows nothing")
	}
	if string(kept[0].Raw) != first || string(kept[0].Error.Data) != `{"d":"first"}` ||
		string(kept[1].Result) != `{"r":"second-second-second-second-sec"}` ||
		string(kept[2].Params) != `{"p":"third-third-third-third-third-t"}` {
		t.Errorf("owned messages changed when the buffer was reused: %q %q %q %q",
			kept[0].Raw, kept[0].Error.Data, kept[1].Result, kept[2].Params)
	}
	for _, m := range kept {
		if n := len(m.Raw); cap(m.Raw) <= n || m.Raw[:n+1][n] != '\n' {
			t.Errorf("an owned Raw has no '\\n' after it: %q", m.Raw)
		}
	}
}

// writes records each Write it is given, and fails them once fail is set.
type writes struct {
	calls [][]byte
	fail  bool
}

func (w *writes) Write(p []byte) (int, error) {
	if w.fail {
		return len(p) / 2, errors.New("short write")
	}
	w.calls = append(w.calls, p)
	return len(p), nil
}

func TestWriterLargeMessageOneWriteNoCopy(t *testing.T) {
	rec := &writes{}
	w := NewWriter(rec)
	if err := w.Write([]byte("small"), false); err != nil {
		t.Fatal(err)
	}
	big := append(bytes.Repeat([]byte("b"), directWrite), '\n')
	if err := w.Write(big[:directWrite], false); err != nil {
		t.Fatal(err)
	}
	if len(rec.calls) != 2 || string(rec.calls[0]) != "small\n" || len(rec.calls[1]) != directWrite+1 || &rec.calls[1][0] != &big[0] {
		t.Fatalf("want the buffered message, then the large one straight from its slice: %d writes", len(rec.calls))
	}
	rec.fail = true
	if err := w.Write(big[:directWrite], true); err == nil {
		t.Fatal("a failed write was not reported")
	}
	rec.fail = false
	if err := w.WriteMessage([]byte("after")); err == nil || len(rec.calls) != 2 {
		t.Errorf("a message was written after a short write left part of a line: %v, %d writes", err, len(rec.calls))
	}
}

// TestControlByteInLongString puts a raw control byte at every position of
// a long string of letters and digits (bytes that the word-at-a-time checks
// of plain() pass without a false alarm, so those checks alone must find
// it): every one is refused. A flag test that missed bytes below 0x20 in
// the 32- or 8-byte loops would let them through.
func TestControlByteInLongString(t *testing.T) {
	body := strings.Repeat("AZ09QR", 20) // 120 bytes, all in 0x30-0x5a
	for _, c := range []byte{0x00, 0x01, 0x09, 0x1f} {
		for p := 0; p < len(body); p++ {
			s := []byte(body)
			s[p] = c
			line := []byte(`{"jsonrpc":"2.0","method":"x","params":{"s":"` + string(s) + `"}}`)
			_, err := Parse(line)
			if err == nil || !strings.Contains(err.Error(), "control character") {
				t.Fatalf("byte %#x at %d of a %d-byte string: got %v, want a control character refused", c, p, len(s), err)
			}
		}
	}
	if _, err := Parse([]byte(`{"jsonrpc":"2.0","method":"x","params":{"s":"` + body + `"}}`)); err != nil {
		t.Fatalf("the string without a control byte: %v", err)
	}
}
