package guard

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
)

// callParams reads what a Go server would read (names matched ignoring
// case), sends what it cannot read as a call to the whole-params check, and
// does not copy the arguments.
func TestCallParams(t *testing.T) {
	for _, c := range []struct {
		params, name, args string
		ok                 bool
	}{
		{`{"name":"echo","arguments":{"k":"v"}}`, "echo", `{"k":"v"}`, true},
		{`{"Arguments" : [1, 2] ,"NAME":"e\u0063ho"}`, "echo", `[1, 2]`, true},
		{`{"name":null,"arguments":"s"}`, "", `"s"`, true},
		{`{"name":"echo"}`, "echo", ``, true},
		{`{"name":5,"arguments":{"k":"v"}}`, "", ``, false},
		{`{"name":["echo"],"arguments":{}}`, "", ``, false},
		{`[{"name":"echo"}]`, "", ``, false},
		{`null`, "", ``, false},
		{``, "", ``, false},
	} {
		p, ok := callParams([]byte(c.params))
		if ok != c.ok || ok && (p.Name != c.name || string(p.Arguments) != c.args) {
			t.Errorf("callParams(%s) = %q, %s, %v; want %q, %s, %v", c.params, p.Name, p.Arguments, ok, c.name, c.args, c.ok)
		}
	}
	big := []byte(`{"name":"echo","arguments":{"message":"` + strings.Repeat("m", 256<<10) + `"}}`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 20
	for i := 0; i < n; i++ {
		if p, ok := callParams(big); !ok || len(p.Arguments) < 256<<10 {
			t.Fatal("no arguments")
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 16<<10 {
		t.Errorf("callParams allocated %d bytes a call for params of %d bytes: the arguments were copied", per, len(big))
	}
}

// FuzzCallParamsAgreesWithEncodingJSON: for params the strict parser
// accepts, callParams reads the name and the arguments that the check read
// before it (encoding/json into a struct, as a Go server decodes them), and
// refuses (sends to the whole-params check) at least what that refused.
func FuzzCallParamsAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"name":"echo","arguments":{"k":"v"}}`,
		`{"Arguments":[1],"NAME":"x"}`,
		`{"argumentſ":{"t":"s"},"name":"x"}`,
		`{"name":5,"arguments":{}}`,
		`{"name":null}`,
		`{"arguments":null}`,
		`{"name":"a","arguments":"x","other":{"arguments":1}}`,
		`{"ARGUMENTS":{"k":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		line := append([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`), params...)
		line = append(line, '}')
		m, err := jsonrpc.Parse(line)
		if err != nil || m.Params == nil {
			return
		}
		var old struct {
			Name      string
			Arguments json.RawMessage
		}
		oldErr := json.Unmarshal(m.Params, &old)
		p, ok := callParams(m.Params)
		if oldErr != nil {
			if ok && m.Params[0] == '{' {
				t.Fatalf("callParams read %s, which encoding/json refused (%v): %+v", m.Params, oldErr, p)
			}
			return
		}
		if !ok {
			if m.Params[0] == '{' {
				t.Fatalf("callParams refused %s, which encoding/json read", m.Params)
			}
			return
		}
		if p.Name != old.Name || !bytes.Equal(p.Arguments, old.Arguments) {
			t.Fatalf("params %s: callParams %q %s, encoding/json %q %s", m.Params, p.Name, p.Arguments, old.Name, old.Arguments)
		}
	})
}
