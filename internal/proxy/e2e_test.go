package proxy

//lint:file-ignore SA1019 the proxy must relay sampling, roots and logging, which the SDK marks deprecated (SEP-2577) but clients and servers still use

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpcage/mcpcage/internal/proxy/proxytest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startFixture starts the test binary as the named fixture server.
func startFixture(t *testing.T, fixture string, env ...string) Server {
	t.Helper()
	srv, err := proxytest.StartProcess(context.Background(), []string{os.Args[0]}, append(append(os.Environ(), fixtureEnv+"="+fixture), env...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	return srv
}

// recorder keeps every byte that passes, in order, for transcripts.
type recorder struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *recorder) add(p []byte) {
	r.mu.Lock()
	r.buf.Write(p)
	r.mu.Unlock()
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}

type teeReader struct {
	r   io.ReadCloser
	rec *recorder
}

func (t teeReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.rec.add(p[:n])
	return n, err
}
func (t teeReader) Close() error { return t.r.Close() }

type teeWriter struct {
	w   io.WriteCloser
	rec *recorder
}

func (t teeWriter) Write(p []byte) (int, error) {
	t.rec.add(p)
	return t.w.Write(p)
}
func (t teeWriter) Close() error { return t.w.Close() }

// proxied is a proxy session under test: the client's end of its stdio and
// Run's result once it returns.
type proxied struct {
	toProxy   *io.PipeWriter // the client writes here
	fromProxy *io.PipeReader // the client reads here
	stderr    *recorder
	done      chan struct{}
	code      int
	err       error
}

func startProxy(t *testing.T, srv Server, cfg Config) *proxied {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &proxied{toProxy: inW, fromProxy: outR, stderr: &recorder{}, done: make(chan struct{})}
	if cfg.Stderr == nil {
		cfg.Stderr = writerFunc(func(b []byte) (int, error) { p.stderr.add(b); return len(b), nil })
	}
	if cfg.Session == nil {
		cfg.Session = &Session{Name: "fixture"}
	}
	if cfg.StopTimeout == 0 {
		// Generous: a loaded machine (or -race) can take a while to let a
		// server see EOF and exit; tests of the kill path set their own.
		cfg.StopTimeout = 10 * time.Second
	}
	go func() {
		p.code, p.err = Run(context.Background(), cfg, inR, outW, srv)
		outW.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		inW.Close()
		outR.Close()
		p.wait(t)
	})
	return p
}

func (p *proxied) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("proxy.Run did not return")
	}
	return p.code
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// clientOpts gives the go-sdk client handlers for every server request.
func newClient(logs *[]string, mu *sync.Mutex) *mcp.Client {
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1.0.0"}, &mcp.ClientOptions{
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant", Content: &mcp.TextContent{Text: "sampled"}}, nil
		},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
		},
		LoggingMessageHandler: func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			mu.Lock()
			*logs = append(*logs, "log:"+req.Params.Data.(string))
			mu.Unlock()
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			*logs = append(*logs, "progress:"+req.Params.Message)
			mu.Unlock()
		},
	})
	c.AddRoots(&mcp.Root{URI: "file:///tmp/a", Name: "a"})
	return c
}

// exercise drives every feature through a connected client session and
// checks what comes back; it returns what the handlers saw.
//
// settle, when not nil, is called after the cancelled call and must wait
// until the cancellation and the server's late answer have both passed, so
// that transcripts do not depend on goroutine timing.
func exercise(t *testing.T, transport mcp.Transport, version string, settle func()) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var seen []string
	c := newClient(&seen, &mu)
	cs, err := c.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Errorf("negotiated %s, want %s", got, version)
	}
	if err := cs.Ping(ctx, nil); err != nil {
		t.Errorf("ping: %v", err)
	}
	if version < "2026-07-28" {
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Errorf("logging/setLevel: %v", err)
		}
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if len(tools.Tools) != 5 {
		t.Errorf("tools/list gave %d tools, want 5", len(tools.Tools))
	}
	text := func(res *mcp.CallToolResult, err error) string {
		t.Helper()
		if err != nil {
			t.Errorf("tools/call: %v", err)
			return ""
		}
		if len(res.Content) == 0 {
			return ""
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	if got := text(cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "héllo"}})); got != "héllo" {
		t.Errorf("echo = %q", got)
	}
	p := &mcp.CallToolParams{Name: "work"}
	p.SetProgressToken("tok-1")
	if version >= "2026-07-28" {
		// The stateless era sets the log level per request.
		p.Meta["io.modelcontextprotocol/logLevel"] = "debug"
	}
	if got := text(cs.CallTool(ctx, p)); got != "done" {
		t.Errorf("work = %q", got)
	}
	if got := text(cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask"})); got != "model=test-model action=accept name=ada roots=1" {
		t.Errorf("ask = %q", got)
	}
	// Cancellation: the client gives up, the server sees notifications/cancelled.
	cctx, ccancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = cs.CallTool(cctx, &mcp.CallToolParams{Name: "slow"})
	ccancel()
	if err == nil {
		t.Error("slow call was not cancelled")
	}
	if settle != nil {
		settle()
	}
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "bob"}})
	if err != nil || pr.Messages[0].Content.(*mcp.TextContent).Text != "hello bob" {
		t.Errorf("prompts/get: %v", err)
	}
	if _, err := cs.ListPrompts(ctx, nil); err != nil {
		t.Errorf("prompts/list: %v", err)
	}
	if _, err := cs.ListResources(ctx, nil); err != nil {
		t.Errorf("resources/list: %v", err)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mem://note"})
	if err != nil || rr.Contents[0].Text != "a note" {
		t.Errorf("resources/read: %v", err)
	}
	// Let the server's last notifications arrive before the session closes.
	if err := cs.Ping(ctx, nil); err != nil {
		t.Errorf("ping: %v", err)
	}
	// Notifications reach the client's handlers on their own schedule.
	want := []string{"progress:step 1", "progress:step 2", "progress:step 3", "log:working"}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		got := strings.Join(seen, ",")
		mu.Unlock()
		if got == strings.Join(want, ",") {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the client's handlers saw %s, want %s", got, strings.Join(want, ","))
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return append([]string(nil), seen...)
}

func TestGoSDKThroughProxy(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			srv := startFixture(t, "gosdk")
			p := startProxy(t, srv, Config{})
			seen := exercise(t, &mcp.IOTransport{Reader: p.fromProxy, Writer: p.toProxy}, version, nil)
			t.Logf("seen: %v", seen)
			p.toProxy.Close()
			if code := p.wait(t); code != 0 || p.err != nil {
				t.Errorf("Run = %d, %v; want 0", code, p.err)
			}
			if !strings.Contains(p.stderr.String(), "[fixture] fixture: ready") {
				t.Errorf("server stderr not relayed with its prefix:\n%s", p.stderr)
			}
		})
	}
}
