package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpcage/mcpcage/internal/guard"
	"github.com/mcpcage/mcpcage/internal/launch"
	"github.com/mcpcage/mcpcage/internal/pin"
	"github.com/mcpcage/mcpcage/internal/proxy"
	"github.com/mcpcage/mcpcage/internal/scan"
	"github.com/mcpcage/mcpcage/internal/secrets"
)

// GuardFlags are the flags of `mcpcage run` that shape the session's policy
// chain (internal/guard).
type GuardFlags struct {
	Strict         bool
	Tools, Deny    []string
	ReadOnlyTools  bool
	BlockResults   string
	AuditAnchor    string
	AuditAnchorCmd string
	AllowSecrets   []string
}

// add puts the flags on fs; `mcpcage run` and the tests' bare proxy share them.
func (g *GuardFlags) add(fs *pflag.FlagSet) {
	fs.BoolVar(&g.Strict, "strict", false, "ask for approval of the first list of tools too (no trust on first use)")
	fs.StringSliceVar(&g.Tools, "tools", nil, "offer only these tools (comma-separated names)")
	fs.StringSliceVar(&g.Deny, "deny-tools", nil, "hide these tools (comma-separated names)")
	fs.BoolVar(&g.ReadOnlyTools, "read-only-tools", false, "offer only tools annotated readOnlyHint: true (the disk is read-only anyway; this filters tools)")
	fs.StringVar(&g.BlockResults, "block-results", "", "replace a tool result or error that shows signs of hidden instructions of this `severity` or higher (low, medium, high) with an error, and refuse such sampling/elicitation requests of the server (drop such notifications); default: report them and pass them on")
	fs.StringArrayVar(&g.AllowSecrets, "allow-secret", nil, "let tool-call arguments carry a secret of this `KIND` to the server, or KIND:TOOL for one tool (kinds: "+strings.Join(secrets.Kinds, ", ")+"); repeatable")
	fs.StringVar(&g.AuditAnchor, "audit-anchor", "", "copy every audit checkpoint to this `file` (on another device); default $MCPCAGE_AUDIT_ANCHOR")
	fs.StringVar(&g.AuditAnchorCmd, "audit-anchor-cmd", "", "pipe every audit checkpoint to this shell `command`; default $MCPCAGE_AUDIT_ANCHOR_CMD")
}

// config is the chain's configuration for one session of name.
func (g *GuardFlags) config(io *IOStreams, name string, l launch.Launch, home string) (guard.Config, error) {
	cfg := guard.Config{
		Name: name, Launch: l, Home: home, Version: version, Stderr: io.ErrOut,
		Strict:             g.Strict,
		Filter:             pin.Filter{Allow: trimAll(g.Tools), Deny: trimAll(g.Deny), ReadOnly: g.ReadOnlyTools},
		AuditAnchor:        g.AuditAnchor,
		AuditAnchorCommand: g.AuditAnchorCmd,
		// Read once per session, at the first scan that needs them.
		OtherTools: sync.OnceValue(cagedTools),
	}
	allow, err := secrets.ParseAllow(g.AllowSecrets)
	if err != nil {
		return cfg, usageErr(withHint(err, "e.g. --allow-secret private-key:write_file"))
	}
	cfg.AllowSecrets = allow
	if g.BlockResults != "" {
		sev, err := scan.ParseSeverity(g.BlockResults)
		if err != nil {
			return cfg, usageErr(fmt.Errorf("--block-results %q: give low, medium or high", g.BlockResults))
		}
		cfg.BlockResults = sev
	}
	return cfg, nil
}

// serveSession relays the client's stdio to srv through the session's policy
// chain until the session ends, and returns the server's exit status. `mcpcage
// run` calls it with a caged server; tests call it with a plain process.
// drain is how long a client that closed its input waits for answers.
func serveSession(ctx context.Context, io *IOStreams, g *guard.Guard, srv proxy.Server, maxLine int, drain time.Duration) (int, error) {
	policies, err := g.Chain()
	if err != nil {
		_ = srv.Stop(ctx)
		return 1, err
	}
	cfg := g.Config()
	// A client that closes its end of our stdout must turn our writes into
	// errors, not kill mcpcage with SIGPIPE before it has stopped the server.
	signal.Ignore(syscall.SIGPIPE)
	return proxy.Run(ctx, proxy.Config{
		Session:  &proxy.Session{Name: cfg.Name},
		Policies: policies,
		MaxLine:  maxLine,
		Stderr:   io.ErrOut,
		// A request the server leaves unanswered is answered by the chain's
		// silence policy after --start-timeout at most.
		DrainTimeout: drain,
	}, io.In, io.Out, srv)
}

func trimAll(list []string) []string {
	var out []string
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// otherTools are the approved tools of the other caged servers (cagedTools).
type otherTools = []json.RawMessage

// scanItem is what the scanner finds in a changed item, as the lock message
// counted it: diff and approve show the same. others are cagedTools().
func scanItem(c pin.Change, f *pin.File, others otherTools) []scan.Finding {
	return guard.ScanItem(c.Kind, c.New, f.Pending.List(c.Kind), others)
}
