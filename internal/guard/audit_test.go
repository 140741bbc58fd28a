package guard

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	json "github.com/go-json-experiment/json"

	"github.com/mcpcage/mcpcage/internal/audit"
	"github.com/mcpcage/mcpcage/internal/jsonrpc"
	"github.com/mcpcage/mcpcage/internal/proxy"
)

// lockedBuffer is a writer the policies' goroutines can share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestAuditPolicyOutcomes drives the audit policy with the events the proxy
// gives it and checks each call's recorded outcome.
func TestAuditPolicyOutcomes(t *testing.T) {
	t.Setenv("MCPCAGE_HOME", t.TempDir())
	t.Setenv(audit.EnvAnchor, "")
	t.Setenv(audit.EnvAnchorCommand, "")
	errOut := &lockedBuffer{}
	p, err := openAudit(Config{Name: "demo", Stderr: errOut})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sess := &proxy.Session{Name: "demo"}
	msg := func(s string) *jsonrpc.Message {
		m, err := jsonrpc.Parse([]byte(s))
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		return m
	}
	call := func(id, tool, args string, v proxy.Verdict) {
		m := msg(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`)
		p.Observe(ctx, sess, &proxy.Event{Dir: proxy.ClientToServer, Msg: m}, v)
	}
	answer := func(id, body string, v proxy.Verdict) {
		m := msg(`{"jsonrpc":"2.0","id":` + id + `,` + body + `}`)
		p.Observe(ctx, sess, &proxy.Event{Dir: proxy.ServerToClient, Msg: m, Method: "tools/call"}, v)
	}
	p.SessionStart(ctx, sess)
	p.Observe(ctx, sess, &proxy.Event{Dir: proxy.ServerToClient, Method: "initialize",
		Msg: msg(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18"}}`)}, proxy.Verdict{})
	p.Observe(ctx, sess, &proxy.Event{Dir: proxy.ServerToClient, Method: "tools/list",
		Msg: msg(`{"jsonrpc":"2.0","id":9,"result":{"tools":[{"name":"t1","inputSchema":{"type":"object"}}]}}`)}, proxy.Verdict{})
	fwd := proxy.Verdict{Action: proxy.Forward}
	call(`1`, "t1", `{"secret":"s3cr3t-1"}`, fwd)
	call(`"1"`, "t2", `{"secret":"s3cr3t-2"}`, fwd) // a string id is another request
	answer(`"1"`, `"result":{"content":[],"isError":true}`, fwd)
	answer(`1`, `"result":{"content":[{"type":"text","text":"s3cr3t-out"}]}`, fwd)
	call(`2`, "t1", `{}`, proxy.Verdict{Action: proxy.Drop})
	call(`3`, "t1", `{}`, fwd)
	call(`4`, "t1", `{}`, fwd)
	answer(`4`, `"result":{"content":[]}`, proxy.Verdict{Action: proxy.Replace,
		Message: []byte(`{"jsonrpc":"2.0","id":4,"error":{"code":-32001,"message":"withheld"}}`)})
	call(`5`, "t1", `{}`, proxy.Verdict{Action: proxy.Reply,
		Message: []byte(`{"jsonrpc":"2.0","id":5,"error":{"code":-32001,"message":"mcpcage blocked"}}`)})
	p.SessionEnd(ctx, sess, 3)

	dir := filepath.Join(os.Getenv("MCPCAGE_HOME"), "audit")
	r, err := audit.Verify(audit.VerifyOptions{Dir: dir, KeyDir: filepath.Join(os.Getenv("MCPCAGE_HOME"), "keys")})
	if err != nil || !r.OK {
		t.Fatalf("verify: %v %+v", err, r)
	}
	var got []string
	audit.Scan(dir, func(file string, line int, rec *audit.Record, err error) error {
		if bytes.Contains(rec.Line, []byte("s3cr3t")) {
			t.Errorf("a value reached the log: %s", rec.Line)
		}
		var f map[string]any
		json.Unmarshal(rec.Fields, &f)
		s := rec.Kind
		for _, k := range []string{"n", "tool", "outcome", "code", "by", "exit", "calls", "protocol"} {
			if v, ok := f[k]; ok {
				s += fmt.Sprintf(" %s=%v", k, v)
			}
		}
		if _, ok := f["def"]; ok {
			s += " def"
		}
		got = append(got, s)
		return nil
	})
	want := []string{
		"session_start protocol=2025-06-18",
		"call_start n=1 tool=t1 def", // forwarded calls: a call_start when sent
		"call_start n=2 tool=t2",
		"call n=2 tool=t2 outcome=is_error by=server",
		"call n=1 tool=t1 outcome=ok by=server def",
		"call n=3 tool=t1 outcome=dropped by=mcpcage def", // never sent: no call_start
		"call_start n=4 tool=t1 def",
		"call_start n=5 tool=t1 def",
		"call n=5 tool=t1 outcome=error code=-32001 by=mcpcage def",
		"call n=6 tool=t1 outcome=error code=-32001 by=mcpcage def",
		"call n=4 tool=t1 outcome=unanswered by=server def",
		"session_end exit=3 calls=6",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A server can name a tool anything; a drift record must still fit a line.
func TestAuditEventClipsNames(t *testing.T) {
	t.Setenv("MCPCAGE_HOME", t.TempDir())
	out := &lockedBuffer{}
	p, err := openAudit(Config{Name: "demo", Stderr: out})
	if err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("x", 200000)
	p.event("drift", map[string]any{"server": "demo", "what": huge, "changes": []string{"changed " + huge, "added y"}})
	p.SessionEnd(context.Background(), &proxy.Session{Name: "demo"}, 0)
	if out.String() != "" {
		t.Fatalf("stderr: %s", out.String())
	}
	var drift *audit.Record
	audit.Scan(filepath.Join(os.Getenv("MCPCAGE_HOME"), "audit"), func(file string, line int, rec *audit.Record, err error) error {
		if rec != nil && rec.Kind == "drift" {
			drift = rec
		}
		return nil
	})
	if drift == nil || len(drift.Line) > 2000 || !bytes.Contains(drift.Line, []byte(`"added y"`)) {
		t.Fatalf("drift record: %v", drift)
	}
}

// Once a record cannot be written, further tool calls are refused.
func TestAuditPolicyFailsClosed(t *testing.T) {
	t.Setenv("MCPCAGE_HOME", t.TempDir())
	out := &lockedBuffer{}
	p, err := openAudit(Config{Name: "demo", Stderr: out})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sess := &proxy.Session{Name: "demo"}
	req := func(id string) *proxy.Event {
		m, err := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"t"}}`))
		if err != nil {
			t.Fatal(err)
		}
		return &proxy.Event{Dir: proxy.ClientToServer, Msg: m}
	}
	if v := p.Inspect(ctx, sess, req("1")); v.Action != proxy.Forward {
		t.Fatalf("healthy log: %+v", v)
	}
	p.Observe(ctx, sess, req("1"), proxy.Verdict{Action: proxy.Drop})
	// Someone damages the end of the log in the middle of the session.
	logFile := filepath.Join(os.Getenv("MCPCAGE_HOME"), "audit", audit.FileName(1))
	f, err := os.OpenFile(logFile, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("not a record\n")
	f.Close()
	p.Observe(ctx, sess, req("2"), proxy.Verdict{Action: proxy.Drop})
	if !strings.Contains(out.String(), "mcpcage: audit: error: audit: the last record of log-000001.jsonl is damaged") {
		t.Fatalf("stderr: %q", out.String())
	}
	v := p.Inspect(ctx, sess, req("3"))
	if v.Action != proxy.Reply || !strings.Contains(string(v.Message), `"code":-32001`) || !strings.Contains(string(v.Message), "audit log cannot be written") {
		t.Fatalf("after a failed write: %+v %s", v, v.Message)
	}
}

// TestCallRecordAsMap: a call record's fields are the same bytes as the map
// they were built as before (encoding/json sorts a map's keys), with and
// without the members that are only sometimes there.
func TestCallRecordAsMap(t *testing.T) {
	code, zero, three := -32001, 0, 3
	for _, r := range []callRecord{
		{Args: "a", By: "server", DurUS: 12, N: 1, Outcome: "ok", Server: "s<&>", Session: "x", Tool: "t\u2028\xff"},
		{Args: "a", By: "mcpcage", Code: &code, Def: "d", DurUS: 0, Findings: &zero, Outcome: "error", Server: "s", Session: "x", Tool: "t"},
		{Args: "a", By: "server", Def: "d", Findings: &three, Outcome: "is_error", Server: "s", Session: "x", Tool: "t"},
	} {
		m := map[string]any{"args": r.Args, "by": r.By, "dur_us": r.DurUS, "n": r.N, "outcome": r.Outcome,
			"server": r.Server, "session": r.Session, "tool": r.Tool}
		if r.Code != nil {
			m["code"] = *r.Code
		}
		if r.Def != "" {
			m["def"] = r.Def
		}
		if r.Findings != nil {
			m["findings"] = *r.Findings
		}
		want, _ := stdjson.Marshal(m)
		got, _ := stdjson.Marshal(r)
		if !bytes.Equal(got, want) {
			t.Errorf("call record\n got %s\nwant %s", got, want)
		}
	}
}
