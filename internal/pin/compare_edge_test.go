package pin

import (
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// Boundaries of the comparison that mutation testing found unchecked
// (docs/testing.md): the slow path of ItemKey, empty keys, nil files, what
// Approve keeps, and the nesting limit of Canonical.

func TestItemKeySlowPath(t *testing.T) {
	// Escapes in the member name or value make the fast scan give up; the
	// full decode must find the same key.
	for raw, want := range map[string]string{
		`{"n\u0061me":"tool"}`:                         "tool",
		`{"name":"to\u006fl"}`:                         "tool",
		`{"description":"x\"y","name":"t\u006fol"}`:    "tool",
		`{"a":{"name":"inner"},"n\u0061me":"outer"}`:   "outer",
		`{"name":"plain"}`:                             "plain",
		` { "description" : "d" , "name" : "spaced" }`: "spaced",
	} {
		got, err := ItemKey(Tools, jsontext.Value(raw))
		if err != nil || got != want {
			t.Errorf("ItemKey(%s) = %q, %v; want %q", raw, got, err, want)
		}
	}
}

func TestItemKeyEmptyOrMissing(t *testing.T) {
	for _, raw := range []string{
		`{"name":""}`, `{"n\u0061me":""}`, `{"description":"no name"}`, `{}`, `{"name":1}`, `{"n\u0061me":null}`, `[]`, `"name"`,
	} {
		if key, err := ItemKey(Tools, jsontext.Value(raw)); err == nil {
			t.Errorf("ItemKey(%s) = %q, want an error", raw, key)
		}
	}
	if key, err := ItemKey(Resources, jsontext.Value(`{"name":"n","uri":"file:///a"}`)); err != nil || key != "file:///a" {
		t.Errorf("resource key %q, %v", key, err)
	}
}

func TestNilAndEmptyFiles(t *testing.T) {
	for _, f := range []*File{nil, {}, {Approved: &Snapshot{}}} {
		ch, err := Changes(f)
		if err != nil || ch != nil {
			t.Errorf("Changes(%+v) = %v, %v; want nothing", f, ch, err)
		}
		if h, err := PendingHash(f); err == nil {
			t.Errorf("PendingHash(%+v) = %q, want an error (nothing pending)", f, h)
		}
	}
	f := &File{Approved: &Snapshot{Tools: []jsontext.Value{item(`{"name":"a"}`)}}}
	Approve(f, time.Unix(1, 0))
	if len(f.Approved.Tools) != 1 || !f.Approved.Time.IsZero() {
		t.Errorf("Approve with nothing pending changed the file: %+v", f.Approved)
	}
}

func TestApproveKeepsKindsNotPending(t *testing.T) {
	instr := "be brief"
	f := &File{
		Approved: &Snapshot{
			Time:         time.Unix(5, 0),
			Instructions: &instr,
			Tools:        []jsontext.Value{item(`{"name":"a","description":"old"}`)},
			Prompts:      []jsontext.Value{item(`{"name":"p"}`)},
		},
		Pending: &Snapshot{Tools: []jsontext.Value{item(`{"name":"a","description":"new"}`)}},
	}
	Approve(f, time.Unix(10, 0).In(time.FixedZone("x", 3600)))
	if f.Pending != nil {
		t.Fatal("still pending")
	}
	a := f.Approved
	if len(a.Prompts) != 1 || a.Instructions == nil || *a.Instructions != instr {
		t.Errorf("Approve dropped what was not pending: prompts %v, instructions %v", a.Prompts, a.Instructions)
	}
	if string(a.Tools[0]) != `{"name":"a","description":"new"}` {
		t.Errorf("tools not approved: %s", a.Tools[0])
	}
	if !a.Time.Equal(time.Unix(10, 0)) || a.Time.Location() != time.UTC {
		t.Errorf("approval time %v, want 10s after the epoch in UTC", a.Time)
	}
	// First approval: nothing approved before.
	g := &File{Pending: &Snapshot{Prompts: []jsontext.Value{item(`{"name":"q"}`)}}}
	Approve(g, time.Unix(1, 0))
	if g.Approved == nil || len(g.Approved.Prompts) != 1 || g.Approved.Tools != nil {
		t.Errorf("first approval: %+v", g.Approved)
	}
}

func TestCompareOps(t *testing.T) {
	approved := []jsontext.Value{
		item(`{"name":"same","description":"d"}`),
		item(`{"name":"reordered","description":"d","inputSchema":{"type":"object"}}`),
		item(`{"name":"changed","description":"old","title":"t"}`),
		item(`{"name":"gone"}`),
	}
	current := []jsontext.Value{
		item(`{"name":"same","description":"d"}`),
		item(`{"inputSchema":{"type":"object"},"description":"d","name":"reordered"}`),
		item(`{"name":"changed","description":"new","annotations":{"x":1}}`),
		item(`{"name":"added"}`),
	}
	for round := 0; round < 2; round++ { // the second round uses the cached equivalents
		ch, err := Compare(Tools, approved, current)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range ch {
			got = append(got, c.Op.String()+" "+c.Key+" "+strings.Join(c.Fields, ","))
		}
		want := "added added |changed changed annotations,description,title|removed gone "
		if s := strings.Join(got, "|"); s != want {
			t.Errorf("round %d: changes %q, want %q", round, s, want)
		}
	}
	ix, err := NewIndex(Tools, approved)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		ch, err := ix.Compare(current[1:2])
		if err != nil || len(ch) != 3 { // same, changed and gone removed; reordered equal
			t.Fatalf("index compare %d: %v, %v", i, ch, err)
		}
	}
	if ix.Get("gone") == nil || ix.Get("added") != nil || (*Index)(nil).Get("x") != nil {
		t.Error("Index.Get")
	}
}

func TestCompareInstructions(t *testing.T) {
	ch, err := Compare(Instructions, []jsontext.Value{item(`"be brief"`)}, []jsontext.Value{item(`"be \u0062rief"`)})
	if err != nil || len(ch) != 0 {
		t.Errorf("same instructions, other escapes: %v, %v", ch, err)
	}
	ch, err = Compare(Instructions, []jsontext.Value{item(`"be brief"`)}, []jsontext.Value{item(`"obey"`)})
	if err != nil || len(ch) != 1 || ch[0].Op != Changed || len(ch[0].Fields) != 1 || ch[0].Fields[0] != "" {
		t.Errorf("changed instructions: %+v, %v", ch, err)
	}
}

func TestCanonicalDepthLimit(t *testing.T) {
	nest := func(n int) jsontext.Value {
		return jsontext.Value(strings.Repeat(`{"a":[`, n) + "1" + strings.Repeat("]}", n))
	}
	// Each level here is two (an object and an array); the limit counts both.
	if _, err := Canonical(nest(maxDepth / 2)); err != nil {
		t.Errorf("nesting %d levels refused: %v", maxDepth, err)
	}
	if _, err := Canonical(nest(maxDepth/2 + 1)); err == nil {
		t.Errorf("nesting %d levels accepted", maxDepth+2)
	}
	arrays := func(n int) jsontext.Value {
		return jsontext.Value(strings.Repeat("[", n) + "1" + strings.Repeat("]", n))
	}
	if _, err := Canonical(arrays(maxDepth)); err != nil {
		t.Errorf("%d arrays refused: %v", maxDepth, err)
	}
	if _, err := Canonical(arrays(maxDepth + 1)); err == nil {
		t.Errorf("%d arrays accepted", maxDepth+1)
	}
	for _, bad := range []string{"", " ", "{", "[1,", `{"a":}`} {
		if _, err := Canonical(jsontext.Value(bad)); err == nil {
			t.Errorf("Canonical(%q) accepted", bad)
		}
	}
}

func TestCanonicalSaysWhatIsWrong(t *testing.T) {
	for in, want := range map[string]string{
		"":       "no value",
		"   ":    "no value",
		`{"a":}`: "invalid character",
		`[1,}`:   "invalid character",
	} {
		_, err := Canonical(jsontext.Value(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Canonical(%q): %v, want %q", in, err, want)
		}
	}
}
