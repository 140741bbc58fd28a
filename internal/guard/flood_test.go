package guard

import (
	"strings"
	"testing"
	"time"
)

// TestFloodBound: per kind, floodInFull reports pass, then one summary per
// floodInterval, and what is left at the end; kinds are counted apart, and
// methods outside the protocol share one kind.
func TestFloodBound(t *testing.T) {
	var out strings.Builder
	var records []map[string]any
	f := newFlood("srv", &out, func(kind string, fields map[string]any) {
		if kind != "reports_held" {
			t.Errorf("record kind %q", kind)
		}
		records = append(records, fields)
	})
	now := time.Unix(1000, 0)
	f.now = func() time.Time { return now }
	passed := 0
	for i := 0; i < 200; i++ {
		if f.pass(floodKind("message", "notifications/message"), nil) {
			passed++
		}
		if i == 100 {
			now = now.Add(floodInterval) // one summary due at the next report held
		}
	}
	if passed != floodInFull {
		t.Errorf("%d reports passed, want %d", passed, floodInFull)
	}
	if len(records) != 1 || records[0]["held"] != 52 {
		t.Fatalf("after the interval: %v, want one summary of 52 held", records)
	}
	for i := 0; i < 60; i++ {
		f.pass(floodKind("message", "notifications/x-"+strings.Repeat("a", i)), nil) // any other method: one kind
	}
	if !f.pass(floodKind("answer", "tools/call"), nil) {
		t.Error("another kind was held back")
	}
	f.drain()
	if len(records) != 3 {
		t.Fatalf("after drain: %v", records)
	}
	if records[1]["of"] != "notifications/message" || records[1]["held"] != 98 {
		t.Errorf("drained notifications/message: %v", records[1])
	}
	if records[2]["of"] != "other methods" || records[2]["held"] != 10 {
		t.Errorf("drained other methods: %v", records[2])
	}
	f.drain()
	if len(records) != 3 {
		t.Errorf("a second drain wrote again: %v", records[3:])
	}
	if n := strings.Count(out.String(), "\n"); n != 3 {
		t.Errorf("%d stderr lines, want 3:\n%s", n, out.String())
	}
}
