package guard

import (
	"runtime"
	"strings"
	"testing"
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
