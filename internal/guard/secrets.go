package guard

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
	"github.com/mcpcage/mcpcage/internal/proxy"
	"github.com/mcpcage/mcpcage/internal/secrets"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// SecretsConfig is what the argument check of one session needs.
type SecretsConfig struct {
	Name   string   // the caged server's name
	Home   string   // $MCPCAGE_HOME, resolved
	Env    []string // the server's --env names (recorded, so other sessions know them)
	Allow  secrets.Allow
	Stderr io.Writer
	// Event records the kind and the argument path of a secret refused or
	// let through in the session's audit log; nil records nothing.
	Event func(kind string, fields map[string]any)
	// Getenv reads mcpcage's own environment; nil is os.Getenv.
	Getenv func(string) string
}

// argSecrets refuses what the client sends the server when it holds a
// secret: a private key, a token of a well-known shape, or the value of a
// credential mcpcage passes to another caged server. Every message the
// client sends is checked, whatever its method: a request's params (a
// tools/call's arguments, a resources/read uri, prompts/get arguments,
// completion/complete, params.inputResponses), a notification's params,
// and the client's answers to the server's own requests (a sampling
// result, an elicitation answer, roots). A secret split between two
// strings, or two messages, counts too (secrets.Window). A refused request
// never reaches the server: the client gets a -32001 error that names the
// kind and how to allow it; a notification is dropped; an answer is
// replaced with an error to the server. The audit log gets the kind and
// the path, never the value.
type argSecrets struct {
	cfg   SecretsConfig
	creds []secrets.Credential

	mu  sync.Mutex
	win secrets.Window // the end of what the client sent last
}

// NewArgSecrets records this server's --env names under cfg.Home and reads,
// once, the values of the credentials of every other recorded server from
// mcpcage's environment (they stay in memory only).
func NewArgSecrets(cfg SecretsConfig) (proxy.Policy, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	dir := secrets.EnvRecords(cfg.Home)
	if err := secrets.RecordEnv(dir, cfg.Name, cfg.Env); err != nil {
		// Another session would miss this server's credentials, but this
		// one is not less safe: say so and go on.
		untrusted.Fprintf(cfg.Stderr, "mcpcage: warning: cannot record the --env names of %q for the argument check of other sessions: %v\n", cfg.Name, err)
	}
	return &argSecrets{cfg: cfg, creds: secrets.CagedCredentials(dir, cfg.Name, cfg.Env, getenv)}, nil
}

// check looks at one JSON value the client sends, in the session's
// window.
func (p *argSecrets) check(v []byte) []secrets.ArgFinding {
	p.mu.Lock()
	defer p.mu.Unlock()
	return secrets.Params(v, p.creds, &p.win)
}

// Inspect implements proxy.Policy.
func (p *argSecrets) Inspect(ctx context.Context, s *proxy.Session, ev *proxy.Event) proxy.Verdict {
	m := ev.Msg
	if ev.Dir != proxy.ClientToServer {
		return proxy.Verdict{}
	}
	var found []secrets.ArgFinding
	tool, what := "", m.Method
	switch {
	case m.Kind == jsonrpc.KindResponse:
		what = "the client's answer to " + ev.Method
		found = p.check(m.Raw)
	case m.Method == "tools/call":
		params, _ := callParams(m.Params)
		tool, what = params.Name, "tools/call "+strconv.Quote(params.Name)
		found = callPaths(p.check(m.Params))
	default:
		if len(m.Params) > 0 {
			found = prefixed(p.check(m.Params), "params")
		}
	}
	if len(found) == 0 {
		return proxy.Verdict{}
	}
	refused := p.cfg.Allow.Refused(tool, found)
	for _, f := range found {
		outcome := "allowed"
		if !p.cfg.Allow.Permits(f.Kind, tool) {
			outcome = "refused"
		}
		p.record(m.Method, ev.Method, tool, outcome, f)
	}
	if len(refused) == 0 {
		return proxy.Verdict{}
	}
	first := refused[0]
	var said []string
	for _, f := range refused {
		said = append(said, f.Describe())
	}
	allow := "--allow-secret " + first.Kind
	if tool != "" {
		allow += " (or --allow-secret " + first.Kind + ":" + tool + " for this tool only)"
	}
	short := "--allow-secret " + first.Kind
	if tool != "" {
		short += "[:" + tool + "]"
	}
	untrusted.Fprintf(p.cfg.Stderr, "mcpcage: refused %s of %q: %s; to allow: %s\n", what, p.cfg.Name, strings.Join(said, "; "), short)
	switch m.Kind {
	case jsonrpc.KindRequest:
		holds, sent := "its params hold", "the request was not sent"
		if tool != "" || m.Method == "tools/call" {
			holds, sent = "its arguments hold", "the call was not sent"
		}
		msg := fmt.Sprintf("mcpcage blocked %s: %s %s; %s. If this is meant, restart with %s",
			what, holds, strings.Join(said, "; "), sent, allow)
		return proxy.Verdict{Action: proxy.Reply, Message: jsonrpc.NewErrorResponse(m.ID, jsonrpc.CodeBlocked, untrusted.Line(msg), nil)}
	case jsonrpc.KindResponse:
		// The server asked; it gets an error in place of the secret.
		return proxy.Verdict{Action: proxy.Replace, Message: jsonrpc.NewErrorResponse(m.ID, jsonrpc.CodeBlocked,
			"mcpcage withheld the client's answer: it held "+first.Kind+". The person running mcpcage can see the details in its log.", nil)}
	}
	return proxy.Verdict{Action: proxy.Drop}
}

// callPaths makes the paths of a tools/call's params read as before the
// whole params were checked: a path in the arguments (matched as a Go
// server decodes them, in any case) is the path within them; any other is
// under "params".
func callPaths(fs []secrets.ArgFinding) []secrets.ArgFinding {
	for i, f := range fs {
		p := f.Path
		if len(p) >= len("arguments") && strings.EqualFold(p[:len("arguments")], "arguments") {
			rest := p[len("arguments"):]
			switch {
			case rest == "":
				fs[i].Path = "arguments"
			case rest[0] == '.':
				fs[i].Path = rest[1:]
			case rest[0] == '[':
				fs[i].Path = rest
			default:
				fs[i].Path = "params." + p
			}
			continue
		}
		fs[i].Path = "params." + p
	}
	return fs
}

func prefixed(fs []secrets.ArgFinding, root string) []secrets.ArgFinding {
	for i, f := range fs {
		if f.Path == "arguments" { // the whole value
			fs[i].Path = root
		} else if strings.HasPrefix(f.Path, "[") {
			fs[i].Path = root + f.Path
		} else {
			fs[i].Path = root + "." + f.Path
		}
	}
	return fs
}

// maxPathField bounds an argument path in the audit log: the path is made
// of the model's member names.
const maxPathField = 200

func (p *argSecrets) record(method, answers, tool, outcome string, f secrets.ArgFinding) {
	if p.cfg.Event == nil {
		return
	}
	path := f.Path
	if len(path) > maxPathField {
		path = strings.ToValidUTF8(path[:maxPathField], "") + "…"
	}
	fields := map[string]any{"server": p.cfg.Name, "secret": f.Kind, "path": path, "outcome": outcome}
	switch {
	case method == "tools/call":
		fields["tool"] = tool
	case method != "":
		fields["method"] = method
	default:
		fields["answer_to"] = answers
	}
	if f.Split {
		fields["split"] = true
	}
	if f.Env != "" {
		fields["env"], fields["of"] = f.Env, f.Server
	}
	p.cfg.Event("secret_in_arguments", fields)
}

// toolCallParams is what the argument check reads of a tools/call's params.
type toolCallParams struct {
	Name      string
	Arguments []byte // aliases the params: never copied
}

// callParams reads a tools/call's params without copying its arguments.
// Member names match as a server decoding them with Go's encoding/json
// would match them, ignoring case ("Arguments" is the arguments too; the
// strict parser has refused two names that differ only in case). ok is
// false, and the caller checks the whole params, when params is not an
// object or its name is neither a string nor null.
func callParams(params []byte) (toolCallParams, bool) {
	var out toolCallParams
	ok := true
	read := jsonrpc.Members(params, func(name string, value []byte) bool {
		switch {
		case strings.EqualFold(name, "arguments"):
			out.Arguments = value
		case strings.EqualFold(name, "name"):
			if name, isString := jsonrpc.String(value); isString {
				out.Name = name
			} else if value[0] != 'n' { // null reads as no name
				ok = false
				return false
			}
		}
		return true
	})
	return out, ok && read
}
