package proxy

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// transcript runs the whole exercise against the fixture, directly or through
// the proxy, and returns every byte the client sent and received.
func transcript(t *testing.T, version string, viaProxy bool) (sent, received string) {
	t.Helper()
	srv := startFixture(t, "gosdk")
	sentRec, recvRec := &recorder{}, &recorder{}
	var r io.ReadCloser
	var w io.WriteCloser
	var p *proxied
	if viaProxy {
		p = startProxy(t, srv, Config{})
		r, w = p.fromProxy, p.toProxy
	} else {
		r, w = io.NopCloser(srv.Stdout()), srv.Stdin()
	}
	settle := func() {
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(sentRec.String(), "notifications/cancelled") || !strings.Contains(recvRec.String(), "context canceled") {
			if time.Now().After(deadline) {
				t.Fatal("the cancellation or the server's late answer never passed")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	exercise(t, &mcp.IOTransport{Reader: teeReader{r, recvRec}, Writer: teeWriter{w, sentRec}}, version, settle)
	if p != nil {
		p.toProxy.Close()
		p.wait(t)
	}
	return sentRec.String(), recvRec.String()
}

// TestTranscriptIdentical: the client cannot tell the proxy is there. Every
// byte it sends and receives is the same with and without the proxy.
func TestTranscriptIdentical(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2024-11-05", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			s1, r1 := transcript(t, version, false)
			s2, r2 := transcript(t, version, true)
			if d := firstDiff(s1, s2); d != "" {
				t.Errorf("the client sent different bytes through the proxy: %s", d)
			}
			if d := firstDiff(r1, r2); d != "" {
				t.Errorf("the client received different bytes through the proxy: %s", d)
			}
			for _, want := range []string{"sampling/createMessage", "elicitation/create", "roots/list", "notifications/progress", "notifications/message", "notifications/cancelled", "prompts/get", "resources/read"} {
				if version >= "2026" && (want == "sampling/createMessage" || want == "elicitation/create" || want == "roots/list") {
					want = "inputRequests"
				}
				if !strings.Contains(s1+r1, want) {
					t.Errorf("transcript lacks %s: the exercise does not cover it", want)
				}
			}
			t.Logf("%d bytes sent, %d received", len(s1), len(r1))
		})
	}
}

// sortedLines is a transcript's lines in sorted order: the same messages
// in another order give the same string.
func sortedLines(s string) string {
	l := strings.Split(s, "\n")
	slices.Sort(l)
	return strings.Join(l, "\n")
}

func firstDiff(a, b string) string {
	if a == b {
		return ""
	}
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(la) || i < len(lb); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\ndirect:  %.300s\nproxied: %.300s", i+1, x, y)
		}
	}
	return "same lines, different bytes"
}
