package pin

import (
	"fmt"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// tools500 returns 500 realistic tool definitions and the same definitions
// with every object's members in another order (what a reconnect to a
// re-serializing server sends).
func tools500() (same, reordered []jsontext.Value) {
	for i := 0; i < 500; i++ {
		a := fmt.Sprintf(`{"name":"tool_%03d","title":"Tool %d","description":"Does thing %d to the workspace. Returns a JSON summary of what changed.","inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"File path"},"limit":{"type":"integer","minimum":1,"maximum":1000}},"required":["path"]},"annotations":{"readOnlyHint":false,"destructiveHint":true}}`, i, i, i)
		b := fmt.Sprintf(`{"annotations":{"destructiveHint":true,"readOnlyHint":false},"inputSchema":{"required":["path"],"properties":{"limit":{"maximum":1000,"minimum":1,"type":"integer"},"path":{"description":"File path","type":"string"}},"type":"object"},"description":"Does thing %d to the workspace. Returns a JSON summary of what changed.","title":"Tool %d","name":"tool_%03d"}`, i, i, i)
		same = append(same, jsontext.Value(a))
		reordered = append(reordered, jsontext.Value(b))
	}
	return same, reordered
}

// BenchmarkCompare500Same: the usual reconnect, the server sends the bytes
// it sent before.
func BenchmarkCompare500Same(b *testing.B) {
	approved, _ := tools500()
	current := make([]jsontext.Value, len(approved))
	for i, t := range approved {
		current[i] = t.Clone()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ch, err := Compare(Tools, approved, current)
		if err != nil || len(ch) != 0 {
			b.Fatal(ch, err)
		}
	}
}

// BenchmarkCompare500Reordered: every tool arrives with its members in
// another order, so every one is canonicalized on both sides.
func BenchmarkCompare500Reordered(b *testing.B) {
	approved, current := tools500()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ch, err := Compare(Tools, approved, current)
		if err != nil || len(ch) != 0 {
			b.Fatal(ch, err)
		}
	}
}

// BenchmarkCompare500ReorderedWarm: the same, against an index that has
// already seen those bytes (every list after the first in a session).
func BenchmarkCompare500ReorderedWarm(b *testing.B) {
	approved, current := tools500()
	ix, err := NewIndex(Tools, approved)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := ix.Compare(current); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ch, err := ix.Compare(current)
		if err != nil || len(ch) != 0 {
			b.Fatal(ch, err)
		}
	}
}

// BenchmarkCheck500 is the whole check a session makes on tools/list: lock
// and read the pin file of 500 tools, compare, no write (nothing changed).
func BenchmarkCheck500(b *testing.B) {
	approved, _ := tools500()
	p := New(Config{Store: Store{Dir: b.TempDir()}, Name: "bench"})
	if err := p.check(Tools, approved); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := p.check(Tools, approved); err != nil {
			b.Fatal(err)
		}
	}
}
