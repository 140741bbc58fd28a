package proxy

import (
	"bufio"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
)

// holdPolicy holds the answer to id 1 until release is closed, lets id 2
// through unheld, and replaces the answer to id 3 from its hold.
type holdPolicy struct{ release chan struct{} }

func (holdPolicy) Inspect(ctx context.Context, s *Session, ev *Event) Verdict { return Verdict{} }

func (p holdPolicy) Observe(ctx context.Context, s *Session, ev *Event, v Verdict) {
	if ev.Dir != ServerToClient || ev.Msg.Kind != jsonrpc.KindResponse {
		return
	}
	switch ev.Msg.ID.String() {
	case "1":
		ev.Hold(func() []byte { <-p.release; return nil })
	case "3":
		id := ev.Msg.ID
		ev.Hold(func() []byte { return jsonrpc.NewErrorResponse(id, jsonrpc.CodeBlocked, "held and refused", nil) })
	}
}

// A held answer does not hold up the pump, but nothing to the same peer
// overtakes it; a hold's message replaces the answer.
func TestHoldKeepsOrder(t *testing.T) {
	srv := newBenchServer(t, 200)
	cinR, cinW, _ := os.Pipe()
	coutR, coutW, _ := os.Pipe()
	p := holdPolicy{release: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		Run(context.Background(), Config{Session: &Session{Name: "hold"}, Policies: []Policy{p}, StopTimeout: time.Second}, cinR, coutW, srv)
		coutW.Close()
		close(done)
	}()
	answers := make(chan string, 10)
	go func() {
		br := bufio.NewReader(coutR)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				close(answers)
				return
			}
			answers <- line
		}
	}()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	for _, id := range []string{"1", "2", "3"} {
		cinW.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{` + meta + `}}` + "\n")
	}
	select {
	case a := <-answers:
		t.Fatalf("an answer overtook the held one: %s", a)
	case <-time.After(300 * time.Millisecond):
	}
	close(p.release)
	var got []string
	for a := range answers {
		got = append(got, a)
		if len(got) == 3 {
			break
		}
	}
	if len(got) != 3 || !strings.Contains(got[0], `"id":1,`) || !strings.Contains(got[1], `"id":2,`) ||
		!strings.Contains(got[2], `"id":3,"error"`) || !strings.Contains(got[2], "held and refused") {
		t.Fatalf("answers: %q", got)
	}
	cinW.Close()
	<-done
	coutR.Close()
}
