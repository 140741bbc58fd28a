package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpcage/mcpcage/internal/egress"
)

// newEgressGatewayCmd is the gateway mode of mcpcage's own binary: what runs
// inside the egress container of a session started with --allow-host
// (internal/cage starts it). Hidden: a person never runs it.
func newEgressGatewayCmd(io *IOStreams) *cobra.Command {
	var allow []string
	var allowPrivate bool
	var subnet string
	cmd := &cobra.Command{
		Use:    egress.GatewayCommand,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := egress.ParsePolicy(allow, allowPrivate)
			if err != nil {
				return err
			}
			pfx, err := netip.ParsePrefix(subnet)
			if err != nil {
				return fmt.Errorf("--subnet %q: %v", subnet, err)
			}
			addr, err := addrIn(pfx)
			if err != nil {
				return err
			}
			g := &egress.Gateway{Policy: p, Addr: addr, Events: egress.JSONEvents(io.Out)}
			if err := g.Listen(); err != nil {
				return err
			}
			ready, _ := json.Marshal(egress.Ready{Ready: addr.String()})
			fmt.Fprintf(io.Out, "%s\n", ready)
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
			<-sig
			// Every open connection is reported before the gateway exits.
			return g.Close()
		},
	}
	cmd.Flags().StringArrayVar(&allow, "allow", nil, "allowed HOST[:PORT]")
	cmd.Flags().BoolVar(&allowPrivate, "allow-private", false, "let allowed names resolve to private addresses")
	cmd.Flags().StringVar(&subnet, "subnet", "", "the cage network's subnet: the gateway serves on its address there")
	return cmd
}

// addrIn finds this container's address in the cage network's subnet (the
// engine connects the network before the start, but allow it a moment).
func addrIn(pfx netip.Prefix) (netip.Addr, error) {
	for try := 0; try < 50; try++ {
		as, err := net.InterfaceAddrs()
		if err != nil {
			return netip.Addr{}, err
		}
		for _, a := range as {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok && pfx.Contains(ip.Unmap()) {
					return ip.Unmap(), nil
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return netip.Addr{}, fmt.Errorf("no address in %s", pfx)
}
