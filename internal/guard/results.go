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

// scanner scans what the server sends towards the model or the user:
// findings go to stderr and, through the tally, into the call's audit
// record. What it scans passes unchanged unless Config.BlockResults asks
// otherwise.
type scanner struct {
	name   string
	stderr io.Writer
	block  scan.Severity // 0: never block
	tally  *tally
	event  func(kind string, fields map[string]any) // the audit log
}

// scannedMethod is the kind of item whose result a method returns, for the
// methods whose results are scanned.
func scannedMethod(method string) (kind string, ok bool) {
	switch method {
	case "tools/call":
		return "tool", true
	case "prompts/get":
		return "prompt", true
	case "resources/read":
		return "resource", true
	}
	return "", false
}

// scannedServerMessage says whether a method is one a server sends on its
// own that reaches the client's model (a sampling request's systemPrompt and
// messages) or the person (an elicitation's message and form, log and
// progress messages).
func scannedServerMessage(method string) bool {
	switch method {
	case "sampling/createMessage", "elicitation/create", "notifications/message", "notifications/progress":
		return true
	}
	return false
}

func (p *scanner) Inspect(ctx context.Context, s *proxy.Session, ev *proxy.Event) proxy.Verdict {
	m := ev.Msg
	if ev.Dir == proxy.ServerToClient && m.Kind != jsonrpc.KindResponse && scannedServerMessage(m.Method) {
		return p.serverMessage(m)
	}
	kind, ok := scannedMethod(ev.Method)
	if ev.Dir != proxy.ServerToClient || m.Kind != jsonrpc.KindResponse || !ok {
		return proxy.Verdict{Action: proxy.Forward}
	}
	var fs []scan.Finding
	answer := "result"
	if m.Error != nil {
		// Clients give the model an error's text as the failure of the call.
		fs, answer = scan.Error(m.Error.Message, m.Error.Data), "error"
	} else {
		fs = scan.Result(m.Result)
	}
	if ev.Method == "tools/call" {
		p.tally.put(m.ID.Key(), len(fs))
	}
	if len(fs) == 0 {
		return proxy.Verdict{Action: proxy.Forward}
	}
	what := kind + " " + strconv.Quote(untrusted.Line(ev.Target))
	blocked := p.block != 0 && scan.Max(fs) >= p.block
	var b strings.Builder
	outcome := "passed on"
	if blocked {
		outcome = "withheld (--block-results " + strings.ToLower(p.block.String()) + ")"
	}
	untrusted.Fprintf(&b, "mcpcage: %s of %q returned %s; the %s was %s:\n", what, p.name, signs(fs), answer, outcome)
	_ = scan.Format(&b, "    ", fs)
	_, _ = p.stderr.Write([]byte(b.String()))
	if !blocked {
		return proxy.Verdict{Action: proxy.Forward}
	}
	text := withheldText(what, answer, fs)
	if ev.Method != "tools/call" {
		// prompts/get and resources/read have no isError result.
		return proxy.Verdict{Action: proxy.Replace, Message: jsonrpc.NewErrorResponse(m.ID, jsonrpc.CodeBlocked, text, nil)}
	}
	result, _ := json.Marshal(map[string]any{
		"content": []map[string]string{{"type": "text", "text": text}},
		"isError": true,
	})
	return proxy.Verdict{Action: proxy.Replace, Message: jsonrpc.NewResponse(m.ID, result)}
}

// serverMessage scans a request or notification of the server's own. Under
// --block-results one with findings at that level never reaches the client:
// a request is answered to the server with an error, a notification dropped.
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
	var b strings.Builder
	untrusted.Fprintf(&b, "mcpcage: %q sent %s with %s; %s:\n", p.name, m.Method, signs(fs), said)
	_ = scan.Format(&b, "    ", fs)
	_, _ = p.stderr.Write([]byte(b.String()))
	if p.event != nil {
		p.event("server_message", map[string]any{"server": p.name, "method": m.Method, "findings": len(fs),
			"high": scan.Count(fs, scan.High), "rules": ruleIDs(fs), "outcome": outcome})
	}
	switch outcome {
	case "refused":
		text := fmt.Sprintf("mcpcage refused %s: it showed %s (%s). The person running mcpcage can see the details in its log.",
			m.Method, signs(fs), strings.Join(ruleIDs(fs), ", "))
		return proxy.Verdict{Action: proxy.Reply, Message: jsonrpc.NewErrorResponse(m.ID, jsonrpc.CodeBlocked, text, nil)}
	case "dropped":
		return proxy.Verdict{Action: proxy.Drop}
	}
	return proxy.Verdict{Action: proxy.Forward}
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
