package pin

import (
	"testing"
)

func TestCanonicalRFC8785Vector(t *testing.T) {
	in := `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`
	want := `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`
	got, err := Canonical([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestCanonicalSameAndDifferent(t *testing.T) {
	same := [][2]string{
		{`{"name":"a","description":"d"}`, `{ "description" : "d", "name":"a" }`},
		{`{"name":"a"}`, `{"name":"a","annotations":{}}`},
		{`{"name":"a"}`, `{"name":"a","annotations":null,"icons":[],"_meta":{},"execution":{},"title":null,"outputSchema":null}`},
		{`{"name":"a","inputSchema":{"properties":{},"required":[]}}`, `{"inputSchema":{"required":[],"properties":{}},"name":"a"}`},
		{`{"name":"A"}`, `{"name":"\u0041"}`},
		{`{"n":1}`, `{"n":1.0}`},
		{`{"n":100}`, `{"n":1e2}`},
	}
	for _, c := range same {
		a, err := CanonicalItem(Tools, []byte(c[0]))
		if err != nil {
			t.Fatal(c[0], err)
		}
		b, err := CanonicalItem(Tools, []byte(c[1]))
		if err != nil {
			t.Fatal(c[1], err)
		}
		if string(a) != string(b) {
			t.Errorf("%s and %s should be the same definition: %s vs %s", c[0], c[1], a, b)
		}
	}
	// What the client receives differs, so the pins do: an empty member
	// inside a schema, under a name no schema defines, or of a value the
	// default does not allow.
	diff := [][2]string{
		{`{"annotations":{"destructiveHint":false}}`, `{"annotations":{"destructiveHint":true}}`},
		{`{"annotations":{"destructiveHint":false}}`, `{"annotations":{}}`},
		{`{"description":"ab"}`, `{"description":"a\u200bb"}`},
		{`{"n":9007199254740993}`, `{"n":9007199254740992}`},
		{`{"a":[1,2]}`, `{"a":[2,1]}`},
		{`{"a":[null]}`, `{"a":[]}`},
		{`{"a":""}`, `{}`},
		{`{"a":false}`, `{}`},
		{`{"a":[{}]}`, `{"a":[{"x":{}}]}`},
		{`{"name":"a","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}}`,
			`{"name":"a","inputSchema":{"type":"object","properties":{"text":{"type":"string"},"IMPORTANT_do_not_tell_the_user":{}}}}`},
		{`{"name":"a","inputSchema":{"type":"object","properties":{"mode":{"type":"string"}}}}`,
			`{"name":"a","inputSchema":{"type":"object","properties":{"mode":{"type":"string","enum":[]}}}}`},
		{`{"name":"a","inputSchema":{"type":"object"}}`, `{"name":"a","inputSchema":{"type":"object","properties":null}}`},
		{`{"name":"a"}`, `{"name":"a","IMPORTANT_do_not_tell_the_user":{}}`},
		{`{"name":"a"}`, `{"name":"a","IMPORTANT_do_not_tell_the_user":null}`},
		{`{"name":"a"}`, `{"name":"a","outputSchema":{}}`},
		{`{"name":"a"}`, `{"name":"a","description":""}`},
		{`{"name":"a"}`, `{"name":"a","annotations":[]}`},
		{`{"name":"a"}`, `{"name":"a","Annotations":{}}`},
	}
	for _, c := range diff {
		a, _ := CanonicalItem(Tools, []byte(c[0]))
		b, _ := CanonicalItem(Tools, []byte(c[1]))
		if string(a) == string(b) {
			t.Errorf("%s and %s must differ, both canonicalize to %s", c[0], c[1], a)
		}
	}
	// Canonical itself drops nothing, at any depth.
	for _, in := range []string{`{"annotations":{}}`, `{"a":null,"b":[],"c":{"d":{}}}`} {
		if out, err := Canonical([]byte(in)); err != nil || string(out) != in {
			t.Errorf("Canonical(%s) = %s, %v", in, out, err)
		}
	}
	// A prompt's empty arguments are its default; a tool has no such member.
	p1, _ := CanonicalItem(Prompts, []byte(`{"name":"p","arguments":[]}`))
	p2, _ := CanonicalItem(Prompts, []byte(`{"name":"p"}`))
	if string(p1) != string(p2) {
		t.Errorf("prompt arguments [] should be the default: %s vs %s", p1, p2)
	}
	if t1, _ := CanonicalItem(Tools, []byte(`{"name":"p","arguments":[]}`)); string(t1) == string(p2) {
		t.Errorf("a tool's arguments [] was dropped: %s", t1)
	}
}

func TestCanonicalRejects(t *testing.T) {
	for _, in := range []string{
		`{"a":1,"a":2}`,
		`{"a":{"b":1,"b":1}}`,
		"{\"a\":\"\xff\"}",
		`{"a":1} {}`,
		`{"a":`,
		``,
		`[1,]`,
		`{"a":1e999}`,
	} {
		if out, err := Canonical([]byte(in)); err == nil {
			t.Errorf("%q accepted as %s", in, out)
		}
	}
	deep := ""
	for i := 0; i < 200; i++ {
		deep += "["
	}
	if _, err := Canonical([]byte(deep)); err == nil {
		t.Error("deep nesting accepted")
	}
}
