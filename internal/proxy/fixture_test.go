package proxy

//lint:file-ignore SA1019 the proxy must relay sampling, roots and logging, which the SDK marks deprecated (SEP-2577) but clients and servers still use

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// The test binary doubles as the MCP servers the tests talk to, so that they
// run as real child processes through StartProcess.
const fixtureEnv = "MCPCAGE_PROXY_FIXTURE"

func TestMain(m *testing.M) {
	switch os.Getenv(fixtureEnv) {
	case "":
		goleak.VerifyTestMain(m)
	case "gosdk":
		runGoSDKServer()
	case "raw":
		runRawServer()
	case "stubborn":
		// Ignores stdin EOF and SIGTERM alike: only a kill ends it.
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGPIPE)
		fmt.Fprintln(os.Stderr, "stubborn: \x1b[31mnot leaving\x1b[0m")
		time.Sleep(time.Hour)
	case "hostile-stderr":
		// Writes what would steer a terminal, then leaves.
		os.Stderr.WriteString(hostileStderr)
	default:
		fmt.Fprintln(os.Stderr, "unknown fixture")
		os.Exit(2)
	}
}

type echoIn struct {
	Text string `json:"text"`
}

func stateless(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	return ip == nil || ip.ProtocolVersion >= "2026-07-28"
}

// runGoSDKServer serves tools, prompts and resources that exercise every
// kind of traffic: server requests (sampling, elicitation, roots), progress,
// logging and cancellation.
func runGoSDKServer() {
	s := mcp.NewServer(&mcp.Implementation{Name: "fixture", Version: "1.0.0"}, &mcp.ServerOptions{
		Instructions: "fixture server for proxy tests",
		PageSize:     pageSize(),
	})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echoes text"}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "work", Description: "reports progress and logs"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			for i := 1; i <= 3; i++ {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 3, Message: fmt.Sprintf("step %d", i)}); err != nil {
					return nil, nil, err
				}
			}
		}
		if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "fixture", Data: "working"}); err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "asks the client: sampling, elicitation, roots"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		ss := req.Session
		if stateless(ss) {
			if len(req.Params.InputResponses) == 0 {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
					"sample": &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}},
					"elicit": &mcp.ElicitParams{Message: "your name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}},
					"roots":  &mcp.ListRootsParams{},
				}}, nil, nil
			}
			sm := req.Params.InputResponses["sample"].(*mcp.CreateMessageWithToolsResult)
			el := req.Params.InputResponses["elicit"].(*mcp.ElicitResult)
			rl := req.Params.InputResponses["roots"].(*mcp.ListRootsResult)
			return askResult(sm.Model, el, rl), nil, nil
		}
		sm, err := ss.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
		if err != nil {
			return nil, nil, err
		}
		el, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: "your name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return nil, nil, err
		}
		rl, err := ss.ListRoots(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		return askResult(sm.Model, el, rl), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "waits to be cancelled"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(time.Minute):
			return nil, nil, errors.New("not cancelled")
		}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "die", Description: "exits mid-request"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		fmt.Fprintln(os.Stderr, "fixture: dying as asked")
		os.Exit(3)
		return nil, nil, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Description: "greets", Arguments: []*mcp.PromptArgument{{Name: "who"}}}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + req.Params.Arguments["who"]}}}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "mem://note", Name: "note", MIMEType: "text/plain"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "mem://note", MIMEType: "text/plain", Text: "a note"}}}, nil
	})
	fmt.Fprintln(os.Stderr, "fixture: ready")
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "fixture:", err)
	}
	os.Exit(0)
}

func askResult(model string, el *mcp.ElicitResult, rl *mcp.ListRootsResult) *mcp.CallToolResult {
	text := fmt.Sprintf("model=%s action=%s name=%v roots=%d", model, el.Action, el.Content["name"], len(rl.Roots))
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func pageSize() int {
	n, _ := strconv.Atoi(os.Getenv("FIXTURE_PAGESIZE"))
	return n
}
