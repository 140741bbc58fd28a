package main

import (
	"context"
	"fmt"
	"os"

	"github.com/mcpcage/mcpcage/internal/cage"
	"github.com/mcpcage/mcpcage/internal/egress"
	"github.com/mcpcage/mcpcage/internal/guard"
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
// then the gateway (which reports the connections still open), and writes
// what the recorder still sums up, before the session's last audit record.
type gatewayServer struct {
	signalledCage
	gw  *cage.Gateway
	rec *guard.Egress
}

func (s gatewayServer) Stop(ctx context.Context) error {
	err := s.signalledCage.Stop(ctx)
	if gerr := s.gw.Stop(ctx); err == nil {
		err = gerr
	}
	s.rec.Flush()
	return err
}

// egressRefusal is the stderr line of a refused attempt.
func egressRefusal(name string) func(egress.Event) string {
	return func(e egress.Event) string { return egress.Refusal(name, e) }
}
