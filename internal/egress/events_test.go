package egress

import (
	"encoding/json"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestReadEventsSkipsAndCounts: a line past the bound, a line that is not
// JSON and one without a verdict are skipped and counted; the reading goes
// on, and every event after them arrives, clipped.
func TestReadEventsSkipsAndCounts(t *testing.T) {
	long, _ := json.Marshal(Event{Host: "x", Verdict: "refused", Reason: "a proxy request for " + strings.Repeat("s", 70<<10)})
	big, _ := json.Marshal(Event{Host: strings.Repeat("h", 1000), Verdict: "refused", Reason: strings.Repeat("é", 1000), Via: "dns"})
	in := `{"ready":"/egress"}` + "\n" +
		string(long) + "\n" +
		"not json\n" +
		`{"host":"a.test"}` + "\n" +
		"\n" +
		string(big) + "\n" +
		`{"host":"b.test","port":443,"verdict":"allowed","via":"sni","phase":"open"}` // no newline at the end
	var ready string
	var got []Event
	lost := 0
	err := ReadEvents(strings.NewReader(in), EventSink{
		Ready: func(p string) { ready = p },
		Event: func(e Event) { got = append(got, e) },
		Lost:  func() { lost++ },
	})
	if err != nil || ready != "/egress" {
		t.Fatalf("ReadEvents: %v, ready %q", err, ready)
	}
	if lost != 3 {
		t.Errorf("lost %d lines, want 3 (too long, not JSON, no verdict)", lost)
	}
	if len(got) != 2 || got[1].Host != "b.test" || got[1].Phase != "open" {
		t.Fatalf("events: %+v", got)
	}
	if e := got[0]; len(e.Host) > maxHostField+len("…") || len(e.Reason) > maxReasonField+len("…") || !strings.HasSuffix(e.Reason, "…") {
		t.Errorf("an event was not clipped: host %d, reason %d bytes", len(e.Host), len(e.Reason))
	}
	if b, _ := json.Marshal(Event{Host: strings.Repeat("h", 1<<20), Reason: strings.Repeat("r", 1<<20), Addr: strings.Repeat("a", 1<<20), Verdict: "refused"}.Bounded()); len(b) > MaxEventLine {
		t.Errorf("a bounded event is %d bytes, more than a line may be", len(b))
	}
}

// TestGatewayBoundsStreams: connections that hold the gateway in its sniff
// (nothing sent) fill it to maxStreams; the next is refused and reported,
// and the held ones are reported as they end.
func TestGatewayBoundsStreams(t *testing.T) {
	fn := testNet(t)
	p, _ := ParsePolicy([]string{"api.allowed.test"}, true)
	g, ev := startGateway(t, p, fn)
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for i := 0; i < maxStreams; i++ {
		c, err := net.Dial("tcp", netip.AddrPortFrom(g.Addr, 443).String())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		g.mu.Lock()
		n := len(g.conns)
		g.mu.Unlock()
		if n == maxStreams {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections held, want %d", n, maxStreams)
		}
		time.Sleep(10 * time.Millisecond)
	}
	c, err := net.Dial("tcp", netip.AddrPortFrom(g.Addr, 443).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e := ev.wait(t, 1)[0]
	if e.Verdict != "refused" || e.Reason != tooMany {
		t.Fatalf("the connection past the bound: %+v", e)
	}
}
