package fuzz

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
)

var parseSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":{"k":[1,{"n":null}]}}}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"a"}]}}`,
	`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"m","data":{}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"name":1,"Name":2}}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":{"k":1,"\u212a":2}}`,
	`{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`,
	`{"jsonrpc":"2.0","id":1,"Method":"x"}`,
	`[{"jsonrpc":"2.0","id":1,"method":"x"}]`,
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}",
	`{"jsonrpc":"2.0","id":1.5e3,"result":{}}`,
	`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"a":{"_meta":1}, "\u005fmeta" :{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
}

// FuzzParse: whatever Parse accepts really is strict, and it never panics.
func FuzzParse(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add([]byte(s))
	}
	vectors, _ := filepath.Glob("../internal/jsonrpc/testdata/*.json")
	for _, v := range vectors {
		if b, err := os.ReadFile(v); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := jsonrpc.Parse(line)
		if err != nil {
			var pe *jsonrpc.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error is not a *ParseError: %v", err)
			}
			if pe.Code != jsonrpc.CodeParseError && pe.Code != jsonrpc.CodeInvalidRequest {
				t.Fatalf("code %d", pe.Code)
			}
			if !pe.ID.IsZero() && !utf8.ValidString(pe.ID.String()) {
				t.Fatalf("echoed id is not UTF-8: %q", pe.ID)
			}
			return
		}
		if !bytes.Equal(m.Raw, line) {
			t.Fatal("Raw differs from the input")
		}
		if !utf8.Valid(line) {
			t.Fatal("accepted invalid UTF-8")
		}
		if err := checkNames(line); err != nil {
			t.Fatalf("accepted %q: %v", line, err)
		}
		switch m.Kind {
		case jsonrpc.KindRequest:
			if m.ID.IsZero() || m.Method == "" && !bytes.Contains(line, []byte(`"method"`)) {
				t.Fatal("request without id or method")
			}
		case jsonrpc.KindNotification:
			if !m.ID.IsZero() {
				t.Fatal("notification with an id")
			}
		case jsonrpc.KindResponse:
			if (m.Result == nil) == (m.Error == nil) {
				t.Fatal("response needs exactly one of result and error")
			}
		default:
			t.Fatalf("kind %d", m.Kind)
		}
		if want := metaOf(m.Params); !bytes.Equal(m.Meta, want) || (m.Meta == nil) != (want == nil) {
			t.Fatalf("Meta %q, want %q", m.Meta, want)
		}
		// What the proxy would send back must itself parse.
		if _, err := jsonrpc.Parse(jsonrpc.NewErrorResponse(m.ID, jsonrpc.CodeBlocked, string(line), nil)); err != nil {
			t.Fatalf("error response to an accepted message does not parse: %v", err)
		}
	})
}

// metaOf is an independent reading of params' own "_meta" member: nil
// when params is not an object or has none.
func metaOf(params []byte) []byte {
	d := jsontext.NewDecoder(bytes.NewReader(params))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil
	}
	for d.PeekKind() == '"' {
		tok, err := d.ReadToken()
		if err != nil {
			return nil
		}
		name := tok.String()
		v, err := d.ReadValue()
		if err != nil {
			return nil
		}
		if name == "_meta" {
			return v
		}
	}
	return nil
}

// checkNames is an independent check: no object anywhere holds two names
// equal under case folding (exact duplicates included).
func checkNames(b []byte) error {
	d := jsontext.NewDecoder(bytes.NewReader(b), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	var stack [][]string
	for {
		tok, err := d.ReadToken()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch tok.Kind() {
		case '{':
			stack = append(stack, []string{})
		case '[':
			stack = append(stack, nil)
		case '}', ']':
			stack = stack[:len(stack)-1]
		case '"':
			depth := d.StackDepth()
			if k, n := d.StackIndex(depth); k == '{' && n%2 == 1 {
				name := tok.String()
				top := stack[len(stack)-1]
				for _, o := range top {
					if strings.EqualFold(o, name) {
						return errors.New("names " + o + " and " + name)
					}
				}
				stack[len(stack)-1] = append(top, name)
			}
		}
	}
}

// FuzzReader: the framer gives back exactly the input's lines, without
// terminators, and refuses exactly those over the limit.
func FuzzReader(f *testing.F) {
	f.Add([]byte("a\r\nbb\n\nccc"), 2)
	f.Add([]byte(strings.Repeat("x", 70000)+"\nshort\n"), 65536)
	f.Add([]byte("\r\r\n\n"), 0)
	// The "\r" is the last byte of the reader's 256 KiB buffer: this crashed
	// ReadLine once (found by a boundary test, too large for the fuzzer to
	// reach by itself).
	f.Add([]byte(strings.Repeat("x", 256<<10-1)+"\r\nnext\n"), 1<<20)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max <= 0 || max > 1<<20 {
			max = 1 + (max&0xffff+0xffff)%0xffff
		}
		var want []string
		pieces := strings.Split(string(in), "\n")
		if pieces[len(pieces)-1] == "" {
			pieces = pieces[:len(pieces)-1]
		}
		for _, p := range pieces {
			p = strings.TrimSuffix(p, "\r")
			if len(p) > max {
				want = append(want, "<too long>")
			} else {
				want = append(want, p)
			}
		}
		// ReadLine copies each line; Next lends it from the Reader's buffer.
		// Both must give the lines, with room for a '\n' after each; so
		// must Next after HasLine (which remembers the line it found), on
		// input that arrives in pieces.
		for mode := range 3 {
			next := mode > 0
			var src io.Reader = bytes.NewReader(in)
			if mode == 2 {
				src = iotest.HalfReader(src)
			}
			r := jsonrpc.NewReader(src, max)
			var got []string
			for {
				if mode == 2 {
					r.HasLine()
					r.HasLine()
				}
				read := r.ReadLine
				if next {
					read = r.Next
				}
				line, err := read()
				if err == io.EOF {
					break
				}
				var tl *jsonrpc.LineTooLongError
				if errors.As(err, &tl) {
					got = append(got, "<too long>")
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if n := len(line); cap(line) <= n || line[:n+1][n] != '\n' {
					t.Fatalf("mode %d: no '\\n' after the line %q", mode, line)
				}
				got = append(got, string(line))
			}
			if strings.Join(got, "\x00|") != strings.Join(want, "\x00|") {
				t.Fatalf("mode %d, max %d\ngot  %q\nwant %q", mode, max, got, want)
			}
		}
	})
}

// FuzzParseSyntax: Parse's hand-written scanner agrees with jsontext (strict
// by default: UTF-8, duplicate names) on what is syntactically JSON, so the
// speed of the one does not buy a parser differential with the other.
func FuzzParseSyntax(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":-0.5E+7,"result":[true,false,null,"\ud83d\ude00\/\b\f\n\r\t\""]}`,
		`{"jsonrpc":"2.0","id":1,"result":[01]}`,
		`{"jsonrpc":"2.0","id":1,"result":"\ud83d"}`,
		`{"jsonrpc":"2.0","id":1,"result":{"a":1,}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"abcdefgh\x01ijklmnop\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"abcdefgh\xed\xa0\x80\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		_, err := jsonrpc.Parse(line)
		valid := jsontext.Value(line).IsValid()
		var pe *jsonrpc.ParseError
		switch {
		case err == nil && !valid:
			t.Fatalf("Parse accepted what jsontext refuses: %q", line)
		case errors.As(err, &pe) && pe.Code == jsonrpc.CodeParseError && valid:
			t.Fatalf("Parse says %q is not JSON (%s); jsontext accepts it", line, pe.Reason)
		}
	})
}

// FuzzMembers: jsonrpc.Members, which the policies use to read a request's
// params without copying them, agrees with a full decode into a map: the
// same names, in the same number, each with its exact bytes; and it refuses
// what the decoder refuses.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{
		`{"name":"x","arguments":{"k":[1,{"n":null}]}}`,
		`{ "a" : 1 , "b":"\u0041" ,"c":[ ] }`,
		`{}`, `[]`, `{"a":1}x`, `{"a":1,"a":2}`, `{"a":}`, `"s"`, ``, ` {"k": {"_meta": {}} } `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		got := map[string][]byte{}
		n := 0
		ok := jsonrpc.Members(obj, func(name string, value []byte) bool {
			got[name] = value
			n++
			return true
		})
		var want map[string]jsontext.Value
		err := json.Unmarshal(obj, &want)
		if err != nil || want == nil {
			if ok && err != nil {
				t.Fatalf("Members read %q, which does not decode: %v", obj, err)
			}
			return
		}
		if !ok {
			t.Fatalf("Members refused %q, which decodes to %v", obj, want)
		}
		if n != len(want) || len(got) != len(want) {
			t.Fatalf("Members saw %d members of %q, want %d", n, obj, len(want))
		}
		for k, v := range want {
			if !bytes.Equal(got[k], v) {
				t.Fatalf("member %q of %q: Members gave %q, want %q", k, obj, got[k], v)
			}
		}
	})
}
