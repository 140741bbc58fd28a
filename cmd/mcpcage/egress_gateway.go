package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mcpcage/mcpcage/internal/egress"
)

// newEgressGatewayCmd is the gateway mode of mcpcage's own binary: what runs
// inside the egress container of a session started with --allow-host
// (internal/cage starts it). Hidden: a person never runs it.
//
// With --wait-claim it is a spare's gateway: it listens on nothing until a
// session claims it by writing its policy (an egress.Claim line) on stdin,
// exits when none comes within the duration, and once claimed ends at EOF
// on stdin (the claiming mcpcage is gone: the engine closes the stdin of a
// StdinOnce container when its attachment ends).
func newEgressGatewayCmd(io *IOStreams) *cobra.Command {
	var allow []string
	var allowPrivate bool
	var subnet string
	var waitClaim time.Duration
	cmd := &cobra.Command{
		Use:    egress.GatewayCommand,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			pfx, err := netip.ParsePrefix(subnet)
			if err != nil {
				return fmt.Errorf("--subnet %q: %v", subnet, err)
			}
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
			end := make(chan struct{}, 1)
			if waitClaim > 0 {
				if len(allow) > 0 || allowPrivate {
					return errors.New("--wait-claim takes the policy from stdin, not flags")
				}
				line, err := claimLine(os.Stdin, waitClaim, sig)
				if err != nil {
					return err
				}
				if allow, allowPrivate, err = claimPolicy(line); err != nil {
					return err
				}
				go func() {
					_, _ = ioCopyDiscard(os.Stdin)
					end <- struct{}{}
				}()
			}
			p, err := egress.ParsePolicy(allow, allowPrivate)
			if err != nil {
				return err
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
			select {
			case <-sig:
			case <-end:
			}
			// Every open connection is reported before the gateway exits.
			return g.Close()
		},
	}
	cmd.Flags().StringArrayVar(&allow, "allow", nil, "allowed HOST[:PORT]")
	cmd.Flags().BoolVar(&allowPrivate, "allow-private", false, "let allowed names resolve to private addresses")
	cmd.Flags().StringVar(&subnet, "subnet", "", "the cage network's subnet: the gateway serves on its address there")
	cmd.Flags().DurationVar(&waitClaim, "wait-claim", 0, "a spare: wait this long for the policy on stdin, then exit")
	return cmd
}

// newEgressHoldCmd holds a spare cage's network namespace: it waits for one
// line on stdin (the claim) for at most --wait-claim, then for EOF (the
// claiming mcpcage is gone), and exits. Hidden.
func newEgressHoldCmd() *cobra.Command {
	var waitClaim time.Duration
	cmd := &cobra.Command{
		Use:    egress.HoldCommand,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
			if _, err := claimLine(os.Stdin, waitClaim, sig); err != nil {
				return err
			}
			end := make(chan struct{})
			go func() {
				_, _ = ioCopyDiscard(os.Stdin)
				close(end)
			}()
			select {
			case <-sig:
			case <-end:
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&waitClaim, "wait-claim", 10*time.Minute, "wait this long for a claim on stdin, then exit")
	return cmd
}

// claimLine reads the first line of r, giving up after wait or at a signal.
func claimLine(r io.Reader, wait time.Duration, sig <-chan os.Signal) ([]byte, error) {
	type line struct {
		b   []byte
		err error
	}
	got := make(chan line, 1)
	br := bufio.NewReader(io.LimitReader(r, 64<<10))
	go func() {
		b, err := br.ReadBytes('\n')
		got <- line{b, err}
	}()
	select {
	case l := <-got:
		if l.err != nil {
			return nil, fmt.Errorf("no claim: %v", l.err)
		}
		return l.b, nil
	case <-time.After(wait):
		return nil, fmt.Errorf("not claimed within %s", wait)
	case <-sig:
		return nil, errors.New("stopped before a claim")
	}
}

// claimPolicy reads a Claim's arguments with the gateway's own policy flags
// and nothing else.
func claimPolicy(line []byte) ([]string, bool, error) {
	var c egress.Claim
	if err := json.Unmarshal(line, &c); err != nil {
		return nil, false, fmt.Errorf("the claim is not JSON: %v", err)
	}
	fs := pflag.NewFlagSet("claim", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	allow := fs.StringArray("allow", nil, "")
	private := fs.Bool("allow-private", false, "")
	if err := fs.Parse(c.Args); err != nil {
		return nil, false, fmt.Errorf("the claim's policy: %v", err)
	}
	if fs.NArg() > 0 {
		return nil, false, fmt.Errorf("the claim's policy has stray arguments %q", fs.Args())
	}
	return *allow, *private, nil
}

func ioCopyDiscard(r io.Reader) (int64, error) { return io.Copy(io.Discard, r) }

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
