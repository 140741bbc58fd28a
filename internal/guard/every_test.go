package guard

import (
	"bufio"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/mcpcage/mcpcage/internal/audit"
	"github.com/mcpcage/mcpcage/internal/jsonrpc"
	"github.com/mcpcage/mcpcage/internal/proxy"
	"github.com/mcpcage/mcpcage/internal/scan"
)

// schemaMethod is one line of testdata/methods.txt.
type schemaMethod struct{ version, who, method string }

func schemaMethods(t *testing.T) []schemaMethod {
	t.Helper()
	f, err := os.Open("testdata/methods.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []schemaMethod
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || l[0] == '#' {
			continue
		}
		fs := strings.Fields(l)
		if len(fs) != 3 {
			t.Fatalf("methods.txt: %q", l)
		}
		out = append(out, schemaMethod{fs[0], fs[1], fs[2]})
	}
	if len(out) < 100 {
		t.Fatalf("methods.txt has only %d methods", len(out))
	}
	return out
}

// chainOf runs the policies in order as the proxy does (the first verdict
// that is not Forward wins; Async work runs inline).
func chainOf(ctx context.Context, s *proxy.Session, ps []proxy.Policy, ev *proxy.Event) proxy.Verdict {
	for _, p := range ps {
		v := p.Inspect(ctx, s, ev)
		if v.Async != nil {
			v = v.Async(ctx)
		}
		if v.Action != proxy.Forward {
			return v
		}
	}
	return proxy.Verdict{}
}

func testChain(t *testing.T, cfg Config) ([]proxy.Policy, *lockedBuffer) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("MCPCAGE_HOME", home)
	t.Setenv(audit.EnvAnchor, "")
	t.Setenv(audit.EnvAnchorCommand, "")
	errOut := &lockedBuffer{}
	cfg.Name, cfg.Home, cfg.Stderr = "every", home, errOut
	ps, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ps, errOut
}

func parse(t *testing.T, s string) *jsonrpc.Message {
	t.Helper()
	m, err := jsonrpc.Parse([]byte(s))
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return m
}

// TestEveryMethod: with --block-results high, hidden instructions in any
// message the server sends are withheld, whatever the method, in every
// protocol era's schema: its requests are refused, its notifications
// dropped, its answers to every client request (results and errors)
// replaced. A method the scanner does not look at fails here.
func TestEveryMethod(t *testing.T) {
	if len(scan.Params([]byte(`{"x":"`+hiddenOrder+`"}`))) == 0 {
		t.Fatal("the scanner finds nothing in the text meant to have findings")
	}
	ps, _ := testChain(t, Config{BlockResults: scan.High})
	ctx := context.Background()
	sess := &proxy.Session{Name: "every"}
	covered := map[string]bool{}
	for _, sm := range schemaMethods(t) {
		switch sm.who {
		case "server-request":
			ev := &proxy.Event{Dir: proxy.ServerToClient, Msg: parse(t, `{"jsonrpc":"2.0","id":"s1","method":"`+sm.method+`","params":{"note":"`+hiddenOrder+`"}}`)}
			if v := chainOf(ctx, sess, ps, ev); v.Action != proxy.Reply {
				t.Errorf("%s: the server's request %s with hidden instructions: verdict %d, want Reply (refused)", sm.version, sm.method, v.Action)
			}
		case "server-notification":
			ev := &proxy.Event{Dir: proxy.ServerToClient, Msg: parse(t, `{"jsonrpc":"2.0","method":"`+sm.method+`","params":{"note":"`+hiddenOrder+`"}}`)}
			if v := chainOf(ctx, sess, ps, ev); v.Action != proxy.Drop {
				t.Errorf("%s: the server's notification %s with hidden instructions: verdict %d, want Drop", sm.version, sm.method, v.Action)
			}
		case "client-request":
			for _, body := range []string{
				`"result":{"deep":[{"nested":{"statusMessage":"` + hiddenOrder + `"}}]}`,
				`"error":{"code":-32000,"message":"failed","data":{"why":"` + hiddenOrder + `"}}`,
			} {
				ev := &proxy.Event{Dir: proxy.ServerToClient, Method: sm.method, Target: "x",
					Msg: parse(t, `{"jsonrpc":"2.0","id":7,`+body+`}`)}
				if v := chainOf(ctx, sess, ps, ev); v.Action != proxy.Replace {
					t.Errorf("%s: the answer to %s with hidden instructions (%.6s): verdict %d, want Replace (withheld)", sm.version, sm.method, body, v.Action)
				}
			}
		default:
			continue
		}
		covered[sm.method] = true
	}
	for m := range covered {
		if !protocolMethods[m] {
			t.Errorf("%s is in the schemas but not in protocolMethods (the flood bound's kinds)", m)
		}
	}
	// A method no schema has is checked as well.
	ev := &proxy.Event{Dir: proxy.ServerToClient, Msg: parse(t, `{"jsonrpc":"2.0","method":"notifications/x-vendor","params":{"note":"`+hiddenOrder+`"}}`)}
	if v := chainOf(ctx, sess, ps, ev); v.Action != proxy.Drop {
		t.Errorf("a notification of an unknown method with hidden instructions: verdict %d, want Drop", v.Action)
	}
}

// TestBinaryMembersOnly: what the scanner leaves unread is only what MCP
// defines as binary: base64 data of image and audio blocks and the blob of
// resource contents; the same members elsewhere, or holding text, are read.
func TestBinaryMembersOnly(t *testing.T) {
	ps, _ := testChain(t, Config{BlockResults: scan.High})
	ctx := context.Background()
	sess := &proxy.Session{Name: "every"}
	answer := func(result string) proxy.Action {
		ev := &proxy.Event{Dir: proxy.ServerToClient, Method: "tasks/get", Target: "t",
			Msg: parse(t, `{"jsonrpc":"2.0","id":7,"result":`+result+`}`)}
		return chainOf(ctx, sess, ps, ev).Action
	}
	if a := answer(`{"content":[{"type":"image","data":"aGVsbG8gd29ybGQ=","mimeType":"image/png"}],"statusMessage":"ok"}`); a != proxy.Forward {
		t.Errorf("an image block: verdict %d, want Forward", a)
	}
	if a := answer(`{"content":[{"type":"text","data":"` + hiddenOrder + `"}]}`); a != proxy.Replace {
		t.Errorf("text in a data member of a text block: verdict %d, want Replace", a)
	}
}

// TestEveryClientMessage: a GitHub token in anything the client sends the
// server is refused, whatever the method, in every protocol era's schema:
// a request is answered with -32001 and not sent, a notification dropped,
// the client's answer to each of the server's requests replaced with an
// error; a split token and one in params.inputResponses are refused too.
func TestEveryClientMessage(t *testing.T) {
	const token = "ghp_aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"
	errOut := &lockedBuffer{}
	// The argument check alone: in a whole chain the pins answer calls of
	// unknown tools first.
	check, err := NewArgSecrets(SecretsConfig{Name: "every", Home: t.TempDir(), Stderr: errOut})
	if err != nil {
		t.Fatal(err)
	}
	ps := []proxy.Policy{check}
	ctx := context.Background()
	sess := &proxy.Session{Name: "every"}
	n := 0
	for _, sm := range schemaMethods(t) {
		switch sm.who {
		case "client-request":
			for _, params := range []string{`{"name":"t","uri":"file:///x?k=` + token + `"}`, `{"name":"t","arguments":{"deep":[{"v":"` + token + `"}]}}`} {
				ev := &proxy.Event{Dir: proxy.ClientToServer, Msg: parse(t, `{"jsonrpc":"2.0","id":3,"method":"`+sm.method+`","params":`+params+`}`)}
				if v := chainOf(ctx, sess, ps, ev); v.Action != proxy.Reply {
					t.Errorf("%s: the client's request %s with a token: verdict %d, want Reply (refused)", sm.version, sm.method, v.Action)
				}
				n++
			}
		case "client-notification":
			ev := &proxy.Event{Dir: proxy.ClientToServer, Msg: parse(t, `{"jsonrpc":"2.0","method":"`+sm.method+`","params":{"reason":"`+token+`"}}`)}
			if v := chainOf(ctx, sess, ps, ev); v.Action != proxy.Drop {
				t.Errorf("%s: the client's notification %s with a token: verdict %d, want Drop", sm.version, sm.method, v.Action)
			}
			n++
		case "server-request":
			ev := &proxy.Event{Dir: proxy.ClientToServer, Method: sm.method,
				Msg: parse(t, `{"jsonrpc":"2.0","id":"s1","result":{"content":{"type":"text","text":"here: `+token+`"}}}`)}
			if v := chainOf(ctx, sess, ps, ev); v.Action != proxy.Replace {
				t.Errorf("%s: the client's answer to %s with a token: verdict %d, want Replace (withheld)", sm.version, sm.method, v.Action)
			}
			n++
		}
	}
	// The stateless era's answers to a server's input requests ride on the
	// retried request.
	ev := &proxy.Event{Dir: proxy.ClientToServer, Msg: parse(t, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"t","arguments":{},"inputResponses":{"r1":{"action":"accept","content":{"pat":"`+token+`"}}}}}`)}
	if v := chainOf(ctx, sess, ps, ev); v.Action != proxy.Reply {
		t.Errorf("params.inputResponses with a token: verdict %d, want Reply", v.Action)
	}
	// A token split over two calls: the second is refused.
	first := &proxy.Event{Dir: proxy.ClientToServer, Msg: parse(t, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"t","arguments":{"text":"note `+token[:14]+`"}}}`)}
	second := &proxy.Event{Dir: proxy.ClientToServer, Msg: parse(t, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"t","arguments":{"text":"`+token[14:]+`"}}}`)}
	if v := chainOf(ctx, sess, ps, first); v.Action != proxy.Forward {
		t.Errorf("the first piece alone: verdict %d, want Forward", v.Action)
	}
	if v := chainOf(ctx, sess, ps, second); v.Action != proxy.Reply {
		t.Errorf("the second piece: verdict %d, want Reply", v.Action)
	}
	if n < 60 {
		t.Fatalf("only %d messages checked", n)
	}
	if strings.Contains(errOut.String(), token[4:]) {
		t.Error("stderr shows the token")
	}
}
