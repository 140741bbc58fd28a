package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpcage/mcpcage/internal/egress"
)

// newEgressGatewayCmd is the gateway mode of mcpcage's own binary: what runs
// inside the egress container of a session started with --allow-host
// (internal/cage starts it). It serves the session of the cage's shim over
// the named pipes in --pipes, anew each time the shim opens them, until
// SIGTERM. Hidden: a person never runs it.
func newEgressGatewayCmd(io *IOStreams) *cobra.Command {
	var allow []string
	var allowPrivate bool
	var pipes string
	cmd := &cobra.Command{
		Use:    egress.GatewayCommand,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if pipes == "" {
				return errors.New("--pipes is required")
			}
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
			p, err := egress.ParsePolicy(allow, allowPrivate)
			if err != nil {
				return err
			}
			g := &egress.Gateway{Policy: p, Events: egress.JSONEvents(io.Out)}
			ready, _ := json.Marshal(egress.Ready{Ready: pipes})
			fmt.Fprintf(io.Out, "%s\n", ready)
			go func() {
				for {
					conn, err := egress.OpenGatewayPipes(pipes)
					if err != nil {
						fmt.Fprintf(io.ErrOut, "cannot open the pipes: %v\n", err)
						time.Sleep(time.Second)
						continue
					}
					_ = g.Serve(conn)
				}
			}()
			<-sig
			// Every open connection is reported before the gateway exits.
			return g.Close()
		},
	}
	cmd.Flags().StringArrayVar(&allow, "allow", nil, "allowed HOST[:PORT]")
	cmd.Flags().BoolVar(&allowPrivate, "allow-private", false, "let allowed names resolve to private addresses")
	cmd.Flags().StringVar(&pipes, "pipes", "", "the folder of the session's pipes to the cage's shim")
	return cmd
}

// newEgressShimCmd runs in the cage, as its entrypoint, before the server:
// it starts the shim (this binary again, with --serve) on the cage's
// loopback address, waits until it listens, then replaces itself with the
// server's command (so the server keeps this process, its stdio and its
// signals). Hidden.
func newEgressShimCmd(ios *IOStreams) *cobra.Command {
	var ports []int
	var pipes string
	var serve bool
	cmd := &cobra.Command{
		Use:    egress.ShimCommand + " --pipes DIR [--port N]... -- COMMAND [ARG]...",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if pipes == "" {
				return errors.New("--pipes is required")
			}
			if serve {
				return serveShim(pipes, ports)
			}
			if len(args) == 0 {
				return errors.New("no command to run after the shim")
			}
			if err := startShim(pipes, ports); err != nil {
				fmt.Fprintf(ios.ErrOut, "mcpcage: the cage's network shim did not start (%v); the server is not run\n", err)
				os.Exit(125)
			}
			path, err := exec.LookPath(args[0])
			if err != nil {
				fmt.Fprintf(ios.ErrOut, "mcpcage: cannot run %s: %v\n", strconv.Quote(args[0]), err)
				os.Exit(127)
			}
			err = syscall.Exec(path, args, os.Environ())
			fmt.Fprintf(ios.ErrOut, "mcpcage: cannot run %s: %v\n", strconv.Quote(args[0]), err)
			os.Exit(126)
			return nil
		},
	}
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().IntSliceVar(&ports, "port", nil, "an allowed port to listen on")
	cmd.Flags().StringVar(&pipes, "pipes", "", "the folder of the session's pipes to the gateway")
	cmd.Flags().BoolVar(&serve, "serve", false, "be the shim (started by the shim command itself)")
	return cmd
}

// startShim starts the shim as a child process and waits for the line that
// says it listens.
func startShim(pipes string, ports []int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	args := []string{egress.ShimCommand, "--serve", "--pipes", pipes}
	for _, p := range ports {
		args = append(args, "--port", strconv.Itoa(p))
	}
	c := exec.Command(self, args...)
	c.Stderr = os.Stderr // the server's stderr: mcpcage shows it, escaped
	c.ExtraFiles = []*os.File{w}
	if err := c.Start(); err != nil {
		w.Close()
		return err
	}
	w.Close()
	_ = r.SetReadDeadline(time.Now().Add(10 * time.Second))
	b := make([]byte, 3)
	if _, err := io.ReadFull(r, b); err != nil || string(b) != "ok\n" {
		_ = c.Process.Kill()
		return fmt.Errorf("it did not say it listens: %v", err)
	}
	// Its exit is not waited for: it lives as long as the cage.
	return nil
}

// serveShim is the shim: it listens, says so on fd 3, and serves until the
// cage ends.
func serveShim(pipes string, ports []int) error {
	s := &egress.Shim{
		Addr:  netip.AddrFrom4([4]byte{127, 0, 0, 1}),
		Ports: ports,
		Dial:  func() (io.ReadWriteCloser, error) { return egress.OpenShimPipes(pipes) },
	}
	if err := s.Listen(); err != nil {
		return err
	}
	ready := os.NewFile(3, "ready")
	if _, err := ready.Write([]byte("ok\n")); err != nil {
		return err
	}
	ready.Close()
	for {
		time.Sleep(time.Hour)
	}
}
