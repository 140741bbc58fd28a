package main

import (
	"context"
	"os/signal"
	"sort"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpcage/mcpcage/internal/launch"
	"github.com/mcpcage/mcpcage/internal/proxy"
)

// RunContext is what a policy builder knows about the session `mcpcage run`
// is starting.
type RunContext struct {
	IO     *IOStreams
	Name   string        // the server's identity (--name, else derived from the launch)
	Launch launch.Launch // what runs in the cage
	Home   string        // $MCPCAGE_HOME, resolved
	Env    []string      // the --env names passed to the server
	// Audit records an event of another concern (pins, drift) in the
	// session's audit log; set by the audit extension when it builds its
	// policy, so read it when the event happens, not at build time.
	Audit func(kind string, fields map[string]any)
	// Before are `mcpcage run`'s own policies (a server that never answers),
	// consulted ahead of every extension's.
	Before []proxy.Policy
	// Drain is how long a client that closed its input waits for answers
	// (proxy.Config.DrainTimeout).
	Drain time.Duration
	// Stopped names the signal that ended the session ("SIGINT"), or "".
	Stopped func() string
}

// runExtension lets a concern (pinning, scanning, auditing) add its flags to
// `mcpcage run` and a policy to the proxy, each from its own file, so run.go
// never has to know them.
type runExtension struct {
	// Order places the policy in the chain: lower runs first
	// (tool filters and pins 10, scanner 20, audit 30).
	Order int
	// Flags adds the extension's flags to `mcpcage run` (and the commands
	// that share its flags). May be nil.
	Flags func(fs *pflag.FlagSet)
	// Check refuses a bad flag value before anything is set up (exit 2).
	// May be nil.
	Check func() error
	// Policy builds the policy for one session after flags are parsed; a nil
	// policy with a nil error means "nothing to do this session".
	Policy func(rc *RunContext) (proxy.Policy, error)
}

var runExtensions []runExtension

func addRunExtension(e runExtension) {
	runExtensions = append(runExtensions, e)
	sort.SliceStable(runExtensions, func(i, j int) bool { return runExtensions[i].Order < runExtensions[j].Order })
}

// runPolicies builds the policy chain for one session, in order.
func runPolicies(rc *RunContext) ([]proxy.Policy, error) {
	var ps []proxy.Policy
	for _, e := range runExtensions {
		if e.Policy == nil {
			continue
		}
		p, err := e.Policy(rc)
		if err != nil {
			return nil, err
		}
		if p != nil {
			ps = append(ps, p)
		}
	}
	return ps, nil
}

// checkRunFlags runs every extension's Check.
func checkRunFlags() error {
	for _, e := range runExtensions {
		if e.Check != nil {
			if err := e.Check(); err != nil {
				return err
			}
		}
	}
	return nil
}

// addRunFlags adds every extension's flags to fs.
func addRunFlags(fs *pflag.FlagSet) {
	for _, e := range runExtensions {
		if e.Flags != nil {
			e.Flags(fs)
		}
	}
}

// serveSession relays the client's stdio to srv through the policy chain
// until the session ends, and returns the server's exit status. `mcpcage run`
// calls it with a caged server; tests call it with a plain process.
func serveSession(ctx context.Context, rc *RunContext, srv proxy.Server, maxLine int) (int, error) {
	policies, err := runPolicies(rc)
	if err != nil {
		_ = srv.Stop(ctx)
		return 1, err
	}
	policies = append(append([]proxy.Policy(nil), rc.Before...), policies...)
	sess := &proxy.Session{Name: rc.Name, Launch: rc.Launch}
	// A client that closes its end of our stdout must turn our writes into
	// errors, not kill mcpcage with SIGPIPE before it has stopped the server.
	signal.Ignore(syscall.SIGPIPE)
	return proxy.Run(ctx, proxy.Config{
		Session:  sess,
		Policies: policies,
		MaxLine:  maxLine,
		Stderr:   rc.IO.ErrOut,
		// A request the server leaves unanswered is answered by firstReply
		// after --start-timeout at most.
		DrainTimeout: rc.Drain,
	}, rc.IO.In, rc.IO.Out, srv)
}
