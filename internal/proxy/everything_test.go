package proxy

//lint:file-ignore SA1019 the proxy must relay sampling, roots and logging, which the SDK marks deprecated (SEP-2577) but clients and servers still use

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/mcpcage/mcpcage/internal/proxy/proxytest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// everythingPkg is the reference server, pinned so that runs compare.
const everythingPkg = "@modelcontextprotocol/server-everything@2026.8.31"

// everythingEntry installs the reference server once into the repository's
// .cache/npm-test (reused by later runs; a file lock keeps concurrent test
// processes from installing over each other) and returns its entry point.
func everythingEntry(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(root, ".cache", "npm-test")
	entry := filepath.Join(prefix, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if err := os.MkdirAll(prefix, 0o755); err != nil {
		t.Fatal(err)
	}
	lock := flock.New(filepath.Join(prefix, ".lock"))
	if err := lock.Lock(); err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	stamp := filepath.Join(prefix, ".installed")
	if b, err := os.ReadFile(stamp); err == nil && string(b) == everythingPkg {
		if _, err := os.Stat(entry); err == nil {
			return entry
		}
	}
	cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--prefix", prefix, everythingPkg)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install %s: %v\n%s", everythingPkg, err, out)
	}
	if err := os.WriteFile(stamp, []byte(everythingPkg), 0o644); err != nil {
		t.Fatal(err)
	}
	return entry
}

func startEverything(t *testing.T) Server {
	t.Helper()
	entry := everythingEntry(t)
	srv, err := proxytest.StartProcess(context.Background(), []string{"node", entry, "stdio"}, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	return srv
}

// exerciseEverything drives the reference server's features through one
// client session: tools, prompts, resources, sampling, elicitation, roots,
// progress, cancellation and logging.
//
// With logging, it also turns on the server's simulated logging and waits
// for a message; those are random, so transcripts leave them out.
func exerciseEverything(t *testing.T, transport mcp.Transport, settle func(), logging bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	var progress []string
	toolsChanged := make(chan struct{}, 10)
	logged := make(chan struct{}, 10)
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1.0.0"}, &mcp.ClientOptions{
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant", Content: &mcp.TextContent{Text: "sampled reply"}}, nil
		},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params.Message)
			mu.Unlock()
		},
		LoggingMessageHandler: func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			select {
			case logged <- struct{}{}:
			default:
			}
		},
		ToolListChangedHandler: func(ctx context.Context, req *mcp.ToolListChangedRequest) {
			select {
			case toolsChanged <- struct{}{}:
			default:
			}
		},
	})
	c.AddRoots(&mcp.Root{URI: "file:///tmp/root-a", Name: "root-a"})
	cs, err := c.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Errorf("negotiated %s", v)
	}
	// Tools that depend on the client's capabilities come after initialize.
	var names []string
	for deadline := time.Now().Add(20 * time.Second); ; {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = names[:0]
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		if slices.Contains(names, "trigger-sampling-request") || time.Now().After(deadline) {
			break
		}
		select {
		case <-toolsChanged:
		case <-time.After(200 * time.Millisecond):
		}
	}
	for _, want := range []string{"echo", "get-sum", "trigger-sampling-request", "trigger-elicitation-request", "get-roots-list", "trigger-long-running-operation", "toggle-simulated-logging"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}
	call := func(name string, args map[string]any, progressToken any) string {
		t.Helper()
		p := &mcp.CallToolParams{Name: name, Arguments: args}
		if progressToken != nil {
			p.SetProgressToken(progressToken)
		}
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Errorf("tools/call %s: %v", name, err)
			return ""
		}
		var sb strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				sb.WriteString(tc.Text)
			}
		}
		return sb.String()
	}
	if got := call("echo", map[string]any{"message": "through the cage"}, nil); !strings.Contains(got, "through the cage") {
		t.Errorf("echo = %q", got)
	}
	if got := call("get-sum", map[string]any{"a": 2, "b": 3}, nil); !strings.Contains(got, "5") {
		t.Errorf("get-sum = %q", got)
	}
	if got := call("trigger-sampling-request", map[string]any{"prompt": "hi", "maxTokens": 5}, nil); !strings.Contains(got, "sampled reply") {
		t.Errorf("sampling = %q", got)
	}
	if got := call("trigger-elicitation-request", map[string]any{}, nil); !strings.Contains(strings.ToLower(got), "decline") {
		t.Errorf("elicitation = %q", got)
	}
	if got := call("get-roots-list", map[string]any{}, nil); !strings.Contains(got, "file:///tmp/root-a") {
		t.Errorf("roots = %q", got)
	}
	call("trigger-long-running-operation", map[string]any{"duration": 0.3, "steps": 3}, "lr-1")
	// The client hands notifications to its handler on its own schedule.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(progress)
		mu.Unlock()
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%d progress notifications, want 3", n)
			break
		}
	}
	// Cancellation: the client gives up on a long operation.
	cctx, ccancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = cs.CallTool(cctx, &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 1, "steps": 2}})
	ccancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancelled call: %v", err)
	}
	if settle != nil {
		settle()
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Errorf("logging/setLevel: %v", err)
	}
	if logging {
		call("toggle-simulated-logging", map[string]any{}, nil)
		select {
		case <-logged:
		case <-time.After(15 * time.Second):
			t.Error("no notifications/message after turning simulated logging on")
		}
		call("toggle-simulated-logging", map[string]any{}, nil)
	}
	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(prompts.Prompts) == 0 {
		t.Errorf("prompts/list: %v", err)
	}
	if pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "args-prompt", Arguments: map[string]string{"city": "Lyon"}}); err != nil || !strings.Contains(pr.Messages[0].Content.(*mcp.TextContent).Text, "Lyon") {
		t.Errorf("prompts/get: %v", err)
	}
	comp, err := cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "completable-prompt"},
		Argument: mcp.CompleteParamsArgument{Name: "department", Value: "E"},
	})
	if err != nil || len(comp.Completion.Values) == 0 {
		t.Errorf("completion/complete: %v", err)
	}
	resources, err := cs.ListResources(ctx, nil)
	if err != nil || len(resources.Resources) == 0 {
		t.Fatalf("resources/list: %v", err)
	}
	if rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: resources.Resources[0].URI}); err != nil || len(rr.Contents) == 0 {
		t.Errorf("resources/read: %v", err)
	}
	if err := cs.Ping(ctx, nil); err != nil {
		t.Errorf("ping: %v", err)
	}
}

func TestEverythingThroughProxy(t *testing.T) {
	srv := startEverything(t)
	p := startProxy(t, srv, Config{Session: &Session{Name: "everything"}})
	sent, recv := &recorder{}, &recorder{}
	exerciseEverything(t, &mcp.IOTransport{Reader: teeReader{p.fromProxy, recv}, Writer: teeWriter{p.toProxy, sent}}, nil, true)
	p.toProxy.Close()
	p.wait(t)
	for _, want := range []string{"sampling/createMessage", "elicitation/create", "roots/list", "notifications/progress", "notifications/tools/list_changed", "notifications/message"} {
		if !strings.Contains(recv.String(), want) {
			t.Errorf("the client never received %s", want)
		}
	}
	if !strings.Contains(sent.String(), "notifications/cancelled") {
		t.Error("the client never sent notifications/cancelled")
	}
	if !strings.Contains(p.stderr.String(), "[everything] ") {
		t.Errorf("server stderr not relayed:\n%s", p.stderr)
	}
}

// TestEverythingTranscriptIdentical: against the reference server too, the
// client sends and receives the same bytes with and without the proxy.
func TestEverythingTranscriptIdentical(t *testing.T) {
	run := func(viaProxy bool) (string, string) {
		srv := startEverything(t)
		sent, recv := &recorder{}, &recorder{}
		var r io.ReadCloser
		var w io.WriteCloser
		var p *proxied
		if viaProxy {
			p = startProxy(t, srv, Config{Session: &Session{Name: "everything"}})
			r, w = p.fromProxy, p.toProxy
		} else {
			r, w = io.NopCloser(srv.Stdout()), srv.Stdin()
		}
		settle := func() {
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(sent.String(), "notifications/cancelled") {
				if time.Now().After(deadline) {
					t.Fatal("the cancellation never passed")
				}
				time.Sleep(5 * time.Millisecond)
			}
			// The reference server finishes the cancelled operation's
			// current step before it notices; let that pass too.
			time.Sleep(1200 * time.Millisecond)
		}
		exerciseEverything(t, &mcp.IOTransport{Reader: teeReader{r, recv}, Writer: teeWriter{w, sent}}, settle, false)
		if p != nil {
			p.toProxy.Close()
			p.wait(t)
		}
		return sent.String(), recv.String()
	}
	s1, r1 := run(false)
	s2, r2 := run(true)
	// The reference server sends some messages from goroutines of its own
	// (roots/list beside a sampling result), so two runs, with or without
	// the proxy, may order them differently; every message's bytes must
	// still be the same. The proxy's own ordering is TestHoldKeepsOrder's.
	if d := firstDiff(sortedLines(s1), sortedLines(s2)); d != "" {
		t.Errorf("the client sent different bytes through the proxy (lines sorted): %s", d)
	}
	if d := firstDiff(sortedLines(r1), sortedLines(r2)); d != "" {
		t.Errorf("the client received different bytes through the proxy (lines sorted): %s", d)
	}
	t.Logf("%d bytes sent, %d received", len(s1), len(r1))
}
