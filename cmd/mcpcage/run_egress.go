package main

import (
	"fmt"
	"os"

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
