package main

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/mcpcage/mcpcage/internal/cage"
	"github.com/mcpcage/mcpcage/internal/egress"
)

// EnvEgressNetwork is the default of --egress-network.
const EnvEgressNetwork = "MCPCAGE_EGRESS_NETWORK"

// planEgress reads --allow-host and its companions into p.
func planEgress(opts *RunOptions, p *runPlan) error {
	if len(opts.AllowHosts) == 0 {
		if opts.AllowPrivate {
			return usageErr(withHint(fmt.Errorf("--allow-private-addresses needs --allow-host"), "name the hosts with --allow-host HOST[:PORT]"))
		}
		if opts.EgressNetwork != "" {
			return usageErr(withHint(fmt.Errorf("--egress-network needs --allow-host"), "name the hosts with --allow-host HOST[:PORT]"))
		}
		return nil
	}
	if opts.AllowNet {
		return usageErr(withHint(fmt.Errorf("--allow-net and --allow-host do not go together: --allow-net opens everything"),
			"keep --allow-host to allow only the hosts the server needs"))
	}
	pol, err := egress.ParsePolicy(opts.AllowHosts, opts.AllowPrivate)
	if err != nil {
		return usageErr(withHint(err, "write --allow-host api.example.com, api.example.com:8443 or *.example.com"))
	}
	p.egress = &pol
	p.egressNet = opts.EgressNetwork
	if p.egressNet == "" {
		p.egressNet = os.Getenv(EnvEgressNetwork)
	}
	return nil
}

// gatewayServer is the cage with its gateway: stopping it stops the cage,
// then the gateway (which reports the connections still open), before the
// session's last audit record.
type gatewayServer struct {
	signalledCage
	gw *cage.Gateway
}

func (s gatewayServer) Stop(ctx context.Context) error {
	err := s.signalledCage.Stop(ctx)
	if gerr := s.gw.Stop(ctx); err == nil {
		err = gerr
	}
	return err
}

// egressRecorder turns the gateway's events into audit records and, for a
// refusal, one line on stderr. Events that come before the session's audit
// log is open wait for it.
type egressRecorder struct {
	name   string
	errOut interface{ Write([]byte) (int, error) }

	mu     sync.Mutex
	audit  func(kind string, fields map[string]any)
	queued []egress.Event
}

func (r *egressRecorder) event(e egress.Event) {
	if e.Verdict != "allowed" {
		fmt.Fprintln(r.errOut, cage.EgressRefusal(r.name, e))
	}
	r.mu.Lock()
	if r.audit == nil {
		if len(r.queued) < 10000 {
			r.queued = append(r.queued, e)
		}
		r.mu.Unlock()
		return
	}
	a := r.audit
	r.mu.Unlock()
	a("egress", egressFields(r.name, e))
}

// attach is given the session's audit recorder once the log is open, and
// records what came before.
func (r *egressRecorder) attach(a func(kind string, fields map[string]any)) {
	r.mu.Lock()
	r.audit = a
	q := r.queued
	r.queued = nil
	r.mu.Unlock()
	for _, e := range q {
		a("egress", egressFields(r.name, e))
	}
}

// pending are the events no audit log has taken: all of them when none
// was attached (an inspection).
func (r *egressRecorder) pending() []egress.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]egress.Event(nil), r.queued...)
}

func egressFields(name string, e egress.Event) map[string]any {
	f := map[string]any{
		"server": name, "host": e.Host, "port": e.Port, "verdict": e.Verdict, "via": e.Via,
		"sent": e.Sent, "received": e.Received, "ms": e.MS,
	}
	if e.Reason != "" {
		f["reason"] = e.Reason
	}
	if e.Addr != "" {
		f["addr"] = e.Addr
	}
	return f
}
