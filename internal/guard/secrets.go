package guard

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

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

// argSecrets refuses a tools/call whose arguments hold a secret: a private
// key, a token of a well-known shape, or the value of a credential mcpcage
// passes to another caged server. The call never reaches the server; the
// client gets a -32001 error that names the kind and how to allow it, and
// the audit log gets the kind and the argument path, never the value.
type argSecrets struct {
	cfg   SecretsConfig
	creds []secrets.Credential
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

// Inspect implements proxy.Policy.
func (p *argSecrets) Inspect(ctx context.Context, s *proxy.Session, ev *proxy.Event) proxy.Verdict {
	m := ev.Msg
	if ev.Dir != proxy.ClientToServer || m.Kind != jsonrpc.KindRequest || m.Method != "tools/call" {
		return proxy.Verdict{}
	}
	params, ok := callParams(m.Params)
	if !ok {
		// Params that do not read as a call are checked whole: the server
		// gets them as they are.
		params.Arguments = m.Params
	}
	if len(params.Arguments) == 0 {
		return proxy.Verdict{}
	}
	found := secrets.Arguments(params.Arguments, p.creds)
	if len(found) == 0 {
		return proxy.Verdict{}
	}
	refused := p.cfg.Allow.Refused(params.Name, found)
	for _, f := range found {
		outcome := "allowed"
		if !p.cfg.Allow.Permits(f.Kind, params.Name) {
			outcome = "refused"
		}
		p.record(params.Name, outcome, f)
	}
	if len(refused) == 0 {
		return proxy.Verdict{}
	}
	first := refused[0]
	var what []string
	for _, f := range refused {
		what = append(what, f.Describe())
	}
	msg := fmt.Sprintf("mcpcage blocked tools/call %q: its arguments hold %s; the call was not sent. "+
		"If this is meant, restart with --allow-secret %s (or --allow-secret %s:%s for this tool only)",
		params.Name, strings.Join(what, "; "), first.Kind, first.Kind, params.Name)
	untrusted.Fprintf(p.cfg.Stderr, "mcpcage: refused tools/call %q of %q: %s; to allow: --allow-secret %s[:%s]\n",
		params.Name, p.cfg.Name, strings.Join(what, "; "), first.Kind, params.Name)
	return proxy.Verdict{Action: proxy.Reply, Message: jsonrpc.NewErrorResponse(m.ID, jsonrpc.CodeBlocked, untrusted.Line(msg), nil)}
}

// maxPathField bounds an argument path in the audit log: the path is made
// of the model's member names.
const maxPathField = 200

func (p *argSecrets) record(tool, outcome string, f secrets.ArgFinding) {
	if p.cfg.Event == nil {
		return
	}
	path := f.Path
	if len(path) > maxPathField {
		path = strings.ToValidUTF8(path[:maxPathField], "") + "…"
	}
	fields := map[string]any{"server": p.cfg.Name, "tool": tool, "secret": f.Kind, "path": path, "outcome": outcome}
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
