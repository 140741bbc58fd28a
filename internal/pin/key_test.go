package pin

import (
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// FuzzFastKey: on any valid object, the fast scan either declines or finds
// exactly the name a full decode finds.
func FuzzFastKey(f *testing.F) {
	for _, s := range []string{
		`{"name":"a"}`, `{"x":{"name":"b"},"name":"a"}`, `{"x":"\"name\":\"b\"","name":"a"}`,
		`{"n\u0061me":"a"}`, `{"name":"\u0061"}`, `{"x":[1,{"name":"z"}],"name" : "a"}`,
		`{"x":"\\","name":"a"}`, `{ "name" :"a" }`, `{"namex":"b","name":"a"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v := jsontext.Value(b)
		if !v.IsValid() || v.Kind() != '{' {
			return
		}
		got, ok := fastKey(b, "name")
		if !ok {
			return
		}
		var m map[string]jsontext.Value
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		var want string
		if err := json.Unmarshal(m["name"], &want); err != nil || got != want {
			t.Fatalf("fastKey = %q, decode = %q (%v) in %s", got, want, err, b)
		}
	})
}
