package jsonrpc

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseGood(t *testing.T) {
	tests := []struct {
		line   string
		kind   Kind
		id     string
		method string
		params string
		result string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, KindRequest, "1", "tools/list", "", ""},
		{`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":{"Name":1}}}`, KindRequest, `"a"`, "tools/call", `{"name":"x","arguments":{"Name":1}}`, ""},
		{` {"method":"notifications/initialized","jsonrpc":"2.0"} `, KindNotification, "", "notifications/initialized", "", ""},
		{`{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"a"},{"name":"A"}]}}`, KindResponse, "7", "", "", `{"tools":[{"name":"a"},{"name":"A"}]}`},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}`, KindResponse, "", "", "", ""},
		{`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no","data":{"x":[1,{"y":2}]}}}`, KindResponse, "2", "", "", ""},
		{`{"jsonrpc":"2.0","id":3,"result":{},"extra":[[],{}]}`, KindResponse, "3", "", "", `{}`},
		{`{"jsonrpc":"2.0","method":"m","params":[1,"two",{"a":{"b":{"c":[]}}}]}`, KindNotification, "", "m", `[1,"two",{"a":{"b":{"c":[]}}}]`, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":{}}`, KindRequest, "1", "m", `{}`, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"\u00A9\u00a9\uFFFD\uABCD"}}`, KindRequest, "1", "m", `{"s":"\u00A9\u00a9\uFFFD\uABCD"}`, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"m","params": { } ,"x":1}`, KindRequest, "1", "m", `{ }`, ""},
	}
	for _, tt := range tests {
		m, err := Parse([]byte(tt.line))
		if err != nil {
			t.Errorf("Parse(%s): %v", tt.line, err)
			continue
		}
		if m.Kind != tt.kind || m.ID.String() != tt.id || m.Method != tt.method || string(m.Params) != tt.params || string(m.Result) != tt.result {
			t.Errorf("Parse(%s) = kind %d id %q method %q params %q result %q", tt.line, m.Kind, m.ID, m.Method, m.Params, m.Result)
		}
		if string(m.Raw) != tt.line {
			t.Errorf("Raw changed: %q", m.Raw)
		}
	}
}

// TestParseMeta: Meta is params' own "_meta" member, found by name after
// unescaping, and only at the top of an object params; Own keeps it.
func TestParseMeta(t *testing.T) {
	tests := []struct{ line, meta string }{
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"x","_meta":{"k":"v"},"b":[1]}}`, `{"k":"v"}`},
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":{"\u005fmeta":"s"}}`, `"s"`},
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":{ "_meta" : 7 }}`, `7`},
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":{"_meta":{}}}}`, ``},
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":[{"_meta":{}}]}`, ``},
		{`{"jsonrpc":"2.0","id":1,"method":"m","_meta":{}}`, ``},
		{`{"jsonrpc":"2.0","id":1,"result":{"_meta":{}}}`, ``},
	}
	for _, tt := range tests {
		m, err := Parse([]byte(tt.line))
		if err != nil {
			t.Fatalf("Parse(%s): %v", tt.line, err)
		}
		if string(m.Meta) != tt.meta || (tt.meta == "") != (m.Meta == nil) {
			t.Errorf("Parse(%s).Meta = %q, want %q", tt.line, m.Meta, tt.meta)
		}
		buf := []byte(tt.line)
		m, _ = Parse(buf)
		m.Own()
		clear(buf)
		if string(m.Meta) != tt.meta {
			t.Errorf("after Own, Meta of %s = %q", tt.line, m.Meta)
		}
	}
	if _, err := Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":1,"_Meta":2}}`)); err == nil {
		t.Error("params with _meta and _Meta accepted")
	}
}

func TestParseBad(t *testing.T) {
	tests := []struct {
		line string
		code int
		id   string
		want string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`, CodeParseError, "1", "duplicate"},
		// A NUL byte after the message is not the end of the line.
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}\x00", CodeParseError, "1", "more than one"},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"} \x00 ", CodeParseError, "1", "more than one"},
		{`{"jsonrpc":"2.0","id":1,"method":"x"} {}`, CodeParseError, "1", "more than one"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","Name":"b"}}`, CodeInvalidRequest, "1", "case"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":[{"name":"a","NAME":"b"}]}}`, CodeInvalidRequest, "1", "case"},
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":{"k":1,"\u212a":2}}`, CodeInvalidRequest, "1", "case"},
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":{"n\u0061me":1,"name":2}}`, CodeParseError, "1", "duplicate"},
		{`{"jsonrpc":"2.0","id":1,"Method":"tools/call"}`, CodeInvalidRequest, "1", `"method"`},
		{`{"jsonrpc":"2.0","ID":1,"method":"tools/call"}`, CodeInvalidRequest, "", `"id"`},
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":{"s":"` + "\xff" + `"}}`, CodeParseError, "1", "UTF-8"},
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"\ud800"}}`, CodeParseError, "1", "surrogate"},
		{`{"jsonrpc":"1.0","id":1,"method":"x"}`, CodeInvalidRequest, "1", "2.0"},
		{`{"id":1,"method":"x"}`, CodeInvalidRequest, "1", "jsonrpc"},
		{`{"jsonrpc":"2.0","id":true,"method":"x"}`, CodeInvalidRequest, "", "id"},
		{`{"jsonrpc":"2.0","id":null,"method":"x"}`, CodeInvalidRequest, "", "null"},
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":3}`, CodeInvalidRequest, "1", "params"},
		{`{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}`, CodeInvalidRequest, "1", "both"},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}`, CodeInvalidRequest, "1", "integer"},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":1,"Message":"m"}}`, CodeInvalidRequest, "1", "message"},
		{`{"jsonrpc":"2.0","id":1}`, CodeInvalidRequest, "1", "needs"},
		{`[{"jsonrpc":"2.0","id":1,"method":"x"}]`, CodeInvalidRequest, "", "batch"},
		{`not json`, CodeParseError, "", "invalid"},
		{`{"jsonrpc":"2.0","id":1,"method":"x"} {}`, CodeParseError, "1", "more than one"},
		{`"str"`, CodeInvalidRequest, "", "object"},
		{``, CodeParseError, "", "invalid"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.line))
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%s) = %v, want a *ParseError", tt.line, err)
			continue
		}
		if pe.Code != tt.code || pe.ID.String() != tt.id || !strings.Contains(pe.Reason, tt.want) {
			t.Errorf("Parse(%s) = code %d id %q %q; want code %d id %q containing %q", tt.line, pe.Code, pe.ID, pe.Reason, tt.code, tt.id, tt.want)
		}
	}
}

func TestParseManyMembers(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":1,"method":"x","params":{`)
	for i := 0; i < 100; i++ {
		b.WriteString(`"k` + strings.Repeat("a", i) + `":1,`)
	}
	good := b.String() + `"z":1}}`
	if _, err := Parse([]byte(good)); err != nil {
		t.Fatalf("100 distinct members: %v", err)
	}
	bad := b.String() + `"KAAAAA":1}}`
	if _, err := Parse([]byte(bad)); err == nil {
		t.Fatal("case-folded duplicate among 100 members was accepted")
	}
}

func TestIDKey(t *testing.T) {
	same := [][2]string{{`1`, `1.0`}, {`1`, `1e0`}, {`"1"`, `"\u0031"`}, {`-0`, `0`}}
	for _, p := range same {
		if RawID(p[0]).Key() != RawID(p[1]).Key() {
			t.Errorf("%s and %s have different keys", p[0], p[1])
		}
	}
	diff := [][2]string{{`1`, `"1"`}, {`1`, `2`}, {`"a"`, `"A"`}}
	for _, p := range diff {
		if RawID(p[0]).Key() == RawID(p[1]).Key() {
			t.Errorf("%s and %s have the same key", p[0], p[1])
		}
	}
}

func TestReader(t *testing.T) {
	in := "a\r\n\nbb\n" + strings.Repeat("x", 40) + "\nccc\r\nlast"
	r := NewReader(strings.NewReader(in), 10)
	var got []string
	for {
		line, err := r.ReadLine()
		if err == io.EOF {
			break
		}
		var tl *LineTooLongError
		if errors.As(err, &tl) {
			got = append(got, "<too long>")
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if cap(line) <= len(line) || line[:len(line)+1][len(line)] != '\n' {
			t.Errorf("line %q has no newline in its capacity", line)
		}
		got = append(got, string(line))
	}
	want := "a||bb|<too long>|ccc|last"
	if s := strings.Join(got, "|"); s != want {
		t.Errorf("lines = %s, want %s", s, want)
	}
}

func TestReaderLongLineBoundedMemory(t *testing.T) {
	// A line of 1 MiB against a 1 KiB limit, then a good one: the reader
	// skips the first and recovers.
	in := io.MultiReader(bytes.NewReader(bytes.Repeat([]byte("y"), 1<<20)), strings.NewReader("\nok\n"))
	r := NewReader(in, 1024)
	if _, err := r.ReadLine(); err == nil {
		t.Fatal("1 MiB line accepted with a 1 KiB limit")
	}
	line, err := r.ReadLine()
	if err != nil || string(line) != "ok" {
		t.Fatalf("after a long line: %q, %v", line, err)
	}
}

func TestBuilders(t *testing.T) {
	for _, b := range [][]byte{
		NewRequest(StringID("mcpcage-x-1"), "tools/list", []byte(`{"cursor":"c"}`)),
		NewNotification("notifications/initialized", nil),
		NewResponse(IntID(4), nil),
		NewErrorResponse(ID{}, CodeInvalidRequest, "bad \"thing\" \xff", []byte(`{"a":1}`)),
		NewErrorResponse(RawID(`"q"`), CodeBlocked, "blocked", nil),
	} {
		if _, err := Parse(b); err != nil {
			t.Errorf("builder output %s does not parse: %v", b, err)
		}
	}
}

// TestVectors: testdata/good_* must parse and keep their exact bytes;
// testdata/fail_* must be refused. Adding a case is adding a file.
func TestVectors(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no vectors: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Parse(b)
		switch name := filepath.Base(f); {
		case strings.HasPrefix(name, "good_"):
			if err != nil {
				t.Errorf("%s: %v", name, err)
			} else if !bytes.Equal(m.Raw, b) {
				t.Errorf("%s: Raw changed", name)
			}
		case strings.HasPrefix(name, "fail_"):
			if err == nil {
				t.Errorf("%s: accepted", name)
			}
		default:
			t.Errorf("%s: name must start with good_ or fail_", name)
		}
	}
}

// TestParseNameURI: Name and URI are params' own "name" and "uri" members,
// found like Meta; Own keeps them.
func TestParseNameURI(t *testing.T) {
	tests := []struct{ line, name, uri string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"name":"no","uri":"no"},"name":"echo"}}`, `"echo"`, ``},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"\u0075ri" : "file:///a"}}`, ``, `"file:///a"`},
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":5,"uri":null}}`, `5`, `null`},
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":[{"name":"x"}]}`, ``, ``},
		{`{"jsonrpc":"2.0","id":1,"result":{"name":"x"}}`, ``, ``},
	}
	for _, tt := range tests {
		buf := []byte(tt.line)
		m, err := Parse(buf)
		if err != nil {
			t.Fatalf("Parse(%s): %v", tt.line, err)
		}
		if string(m.Name) != tt.name || (tt.name == "") != (m.Name == nil) || string(m.URI) != tt.uri || (tt.uri == "") != (m.URI == nil) {
			t.Errorf("Parse(%s): Name %q URI %q, want %q %q", tt.line, m.Name, m.URI, tt.name, tt.uri)
		}
		m.Own()
		clear(buf)
		if string(m.Name) != tt.name || string(m.URI) != tt.uri {
			t.Errorf("after Own, %s: Name %q URI %q", tt.line, m.Name, m.URI)
		}
	}
}
