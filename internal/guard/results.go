package guard

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
	"github.com/mcpcage/mcpcage/internal/proxy"
	"github.com/mcpcage/mcpcage/internal/scan"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// scanner scans every message the server sends towards the client: every
// response (results and errors, whatever the method), every request and
// every notification, whatever its method, every string and member name at
// any depth. Only the members MCP defines as binary (the base64 "data" of
// an image or audio block, the "blob" of resource contents) are not read as
// text (scan.Result). Lists are not seen here: the pin policy answers them
// from its own walk and scans each item (ScanItem).
//
// Findings go to stderr and, through the tally, into the call's audit
// record; for a request or notification of the server's own, into a
// server_message record. Reports are bounded per kind of message (flood);
// detection and withholding are not. What it scans passes unchanged unless
// Config.BlockResults asks otherwise.
type scanner struct {
	name   string
	stderr io.Writer
	block  scan.Severity // 0: never block
	tally  *tally
	tasks  *tasks
	flood  *flood
	event  func(kind string, fields map[string]any) // the audit log
}

// toolResult says whether the answer to method is a tool's result: a
// tools/call's, or a task's payload (tasks/result), which is the result of
// the tools/call that started the task.
func toolResult(method string) bool { return method == "tools/call" || method == "tasks/result" }

// answerWhat names what an answer is the answer to, for a person.
func (p *scanner) answerWhat(ev *proxy.Event) string {
	t := strconv.Quote(untrusted.Line(ev.Target))
	switch ev.Method {
	case "tools/call":
		return "tool " + t
	case "prompts/get":
		return "prompt " + t
	case "resources/read":
		return "resource " + t
	case "tasks/result":
		if tool, ok := p.tasks.tool(ev.Target); ok {
			return "task " + t + " of tool " + strconv.Quote(untrusted.Line(tool))
		}
		return "task " + t
	case "":
		return "an answer"
	}
	return "the answer to " + untrusted.Line(ev.Method)
}

func (p *scanner) Inspect(ctx context.Context, s *proxy.Session, ev *proxy.Event) proxy.Verdict {
	if ev.Dir != proxy.ServerToClient {
		return proxy.Verdict{Action: proxy.Forward}
	}
	if ev.Msg.Kind != jsonrpc.KindResponse {
		return p.serverMessage(ev.Msg)
	}
	return p.response(ev)
}

// response scans an answer to one of the client's requests.
func (p *scanner) response(ev *proxy.Event) proxy.Verdict {
	m := ev.Msg
	var fs []scan.Finding
	answer := "result"
	if m.Error != nil {
		// Clients give the model an error's text as the failure of the call.
		fs, answer = scan.Error(m.Error.Message, m.Error.Data), "error"
	} else {
		fs = scan.Result(m.Result)
	}
	if toolResult(ev.Method) {
		p.tally.put(m.ID.Key(), len(fs))
	}
	if len(fs) == 0 {
		return proxy.Verdict{Action: proxy.Forward}
	}
	what := p.answerWhat(ev)
	blocked := p.block != 0 && scan.Max(fs) >= p.block
	if p.flood.pass(floodKind("answer", ev.Method), fs) {
		var b strings.Builder
		outcome := "passed on"
		if blocked {
			outcome = "withheld (--block-results " + strings.ToLower(p.block.String()) + ")"
		}
		untrusted.Fprintf(&b, "mcpcage: %s of %q returned %s; the %s was %s:\n", what, p.name, signs(fs), answer, outcome)
		_ = scan.Format(&b, "    ", fs)
		_, _ = p.stderr.Write([]byte(b.String()))
	}
	if !blocked {
		return proxy.Verdict{Action: proxy.Forward}
	}
	text := withheldText(what, answer, fs)
	if !toolResult(ev.Method) {
		// Nothing but a tool's result has an isError form.
		return proxy.Verdict{Action: proxy.Replace, Message: jsonrpc.NewErrorResponse(m.ID, jsonrpc.CodeBlocked, text, nil)}
	}
	result, _ := json.Marshal(map[string]any{
		"content": []map[string]string{{"type": "text", "text": text}},
		"isError": true,
	})
	return proxy.Verdict{Action: proxy.Replace, Message: jsonrpc.NewResponse(m.ID, result)}
}

// serverMessage scans a request or notification of the server's own,
// whatever its method. Under --block-results one with findings at that
// level never reaches the client: a request is answered to the server with
// an error, a notification dropped.
func (p *scanner) serverMessage(m *jsonrpc.Message) proxy.Verdict {
	fs := scan.Params(m.Params)
	if len(fs) == 0 {
		return proxy.Verdict{Action: proxy.Forward}
	}
	blocked := p.block != 0 && scan.Max(fs) >= p.block
	outcome, said := "passed", "it was passed on to the client"
	switch {
	case blocked && m.Kind == jsonrpc.KindRequest:
		outcome, said = "refused", "it was answered with an error and not shown (--block-results "+strings.ToLower(p.block.String())+")"
	case blocked:
		outcome, said = "dropped", "it was dropped (--block-results "+strings.ToLower(p.block.String())+")"
	}
	if p.flood.pass(floodKind("message", m.Method), fs) {
		var b strings.Builder
		untrusted.Fprintf(&b, "mcpcage: %q sent %s with %s; %s:\n", p.name, m.Method, signs(fs), said)
		_ = scan.Format(&b, "    ", fs)
		_, _ = p.stderr.Write([]byte(b.String()))
		if p.event != nil {
			p.event("server_message", map[string]any{"server": p.name, "method": m.Method, "findings": len(fs),
				"high": scan.Count(fs, scan.High), "rules": ruleIDs(fs), "outcome": outcome})
		}
	}
	switch outcome {
	case "refused":
		text := fmt.Sprintf("mcpcage refused %s: it showed %s (%s). The person running mcpcage can see the details in its log.",
			untrusted.Line(m.Method), signs(fs), strings.Join(ruleIDs(fs), ", "))
		return proxy.Verdict{Action: proxy.Reply, Message: jsonrpc.NewErrorResponse(m.ID, jsonrpc.CodeBlocked, text, nil)}
	case "dropped":
		return proxy.Verdict{Action: proxy.Drop}
	}
	return proxy.Verdict{Action: proxy.Forward}
}

func (p *scanner) SessionStart(ctx context.Context, s *proxy.Session) {}

// SessionEnd writes what the flood bound still holds back.
func (p *scanner) SessionEnd(ctx context.Context, s *proxy.Session, exitCode int) {
	p.flood.drain()
}

// relayError scans an error the server answered one of the pin policy's
// own list requests with, which the pins pass on to the client: it is
// checked like any answer, and withheld under --block-results.
func (p *scanner) relayError(method string, e *jsonrpc.Error) *jsonrpc.Error {
	fs := scan.Error(e.Message, e.Data)
	if len(fs) == 0 {
		return e
	}
	what := "the answer to " + untrusted.Line(method)
	blocked := p.block != 0 && scan.Max(fs) >= p.block
	if p.flood.pass(floodKind("answer", method), fs) {
		var b strings.Builder
		outcome := "passed on"
		if blocked {
			outcome = "withheld (--block-results " + strings.ToLower(p.block.String()) + ")"
		}
		untrusted.Fprintf(&b, "mcpcage: %s of %q returned %s; the error was %s:\n", what, p.name, signs(fs), outcome)
		_ = scan.Format(&b, "    ", fs)
		_, _ = p.stderr.Write([]byte(b.String()))
	}
	if !blocked {
		return e
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeBlocked, Message: withheldText(what, "error", fs)}
}

func signs(fs []scan.Finding) string {
	n, h := len(fs), scan.Count(fs, scan.High)
	s := fmt.Sprintf("%d sign(s) of hidden instructions", n)
	if h > 0 {
		s += fmt.Sprintf(" (%d high-severity)", h)
	}
	return s
}

// withheldText stands in for a withheld answer. It names the rules only:
// the snippets stay out of the model's context.
func withheldText(what, answer string, fs []scan.Finding) string {
	return fmt.Sprintf("mcpcage withheld the %s of %s: it showed %s (%s). The person running mcpcage can see the details in its log.",
		answer, what, signs(fs), strings.Join(ruleIDs(fs), ", "))
}

func ruleIDs(fs []scan.Finding) []string {
	seen := map[string]bool{}
	var ids []string
	for _, f := range fs {
		if !seen[f.Rule] {
			seen[f.Rule] = true
			ids = append(ids, f.Rule)
		}
	}
	sort.Strings(ids)
	return ids
}
