package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mcpcage/mcpcage/internal/cage"
	"github.com/mcpcage/mcpcage/internal/clients"
	"github.com/mcpcage/mcpcage/internal/home"
	"github.com/mcpcage/mcpcage/internal/install"
	"github.com/mcpcage/mcpcage/internal/launch"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// installFailure is a planned entry whose package could not be installed.
type installFailure struct {
	file   string
	server clients.Server
	reason string
}

// installPlanned installs the package of every entry about to be caged, so
// that a client's first start of it does not spend its connect timeout
// installing (Claude Code gives a server 30 s). Each package is installed
// once however many entries run it. It returns the entries that could not be
// installed, with the reason, and how many packages were installed.
func installPlanned(ctx context.Context, opts *ProtectOptions, plans []*planFile) (failures []installFailure, count int, err error) {
	type job struct {
		cmd     launch.Command
		entries []installFailure
	}
	var jobs []*job
	byKey := map[string]*job{}
	for _, p := range plans {
		for _, c := range p.changes {
			e := installFailure{file: p.report.File.Path, server: c.Before}
			pc, perr := launch.ParseCommand(append([]string{c.Before.Command}, c.Before.Args...))
			if perr != nil {
				e.reason = perr.Error()
				failures = append(failures, e)
				continue
			}
			if pc.Kind == "exec" {
				// A local program: nothing to install, it is mounted.
				continue
			}
			k := pc.Kind + "\x00" + pc.Spec + "\x00" + pc.Bin
			if byKey[k] == nil {
				byKey[k] = &job{cmd: pc}
				jobs = append(jobs, byKey[k])
			}
			byKey[k].entries = append(byKey[k].entries, e)
		}
	}
	if len(jobs) == 0 {
		return failures, 0, nil
	}
	cli, err := cage.Connect(ctx)
	if err != nil {
		hint := "start Docker (or set DOCKER_HOST)"
		var de *cage.DockerError
		if errors.As(err, &de) {
			hint = strings.TrimSuffix(strings.TrimSuffix(de.Hint(), ", then try again"), ".")
		}
		return nil, 0, withHint(fmt.Errorf("cannot install the servers' packages: %v", err),
			"%s, and run `mcpcage protect --fix` again; --no-install cages them now and installs at each first start", hint)
	}
	defer cli.Close()
	errOut := opts.IO.ErrOut
	for i, j := range jobs {
		names := make([]string, 0, len(j.entries))
		for _, e := range j.entries {
			names = append(names, e.server.Name)
		}
		untrusted.Fprintf(errOut, "mcpcage: installing %s for %s (%d of %d)...\n", j.cmd.Spec, strings.Join(names, ", "), i+1, len(jobs))
		start := time.Now()
		res, ierr := install.Ensure(ctx, cli, install.Request{
			Kind: j.cmd.Kind, Spec: j.cmd.Spec, Bin: j.cmd.Bin, Stderr: errOut, Progress: opts.IO.Reporter(), Labels: cage.Self().Labels(),
		})
		if ierr != nil {
			if ctx.Err() != nil {
				return nil, 0, errors.New("interrupted while installing: nothing was written")
			}
			reason := "its package could not be installed: " + ierr.Error()
			var ie *install.ImageError
			if errors.As(ierr, &ie) {
				reason += " (build the cage images with `sudo mcpcage images build`)"
			}
			untrusted.Fprintf(errOut, "mcpcage: cannot install %s: %v\n", j.cmd.Spec, ierr)
			for _, e := range j.entries {
				e.reason = reason
				failures = append(failures, e)
			}
			continue
		}
		how := "installed"
		if !res.Installed {
			how = "already installed"
		}
		untrusted.Fprintf(errOut, "mcpcage: %s %s@%s (%s)\n", how, res.Package, res.Version, roundDuration(time.Since(start)))
		count++
	}
	return failures, count, nil
}

// entryKey names an entry of a file: its file and key path.
func entryKey(file string, s clients.Server) string {
	return file + "\x00" + strings.Join(s.Where, "\x00")
}

func roundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

// networkedIn counts the planned entries that get --allow-host.
func networkedIn(plans []*planFile) int {
	n := 0
	for _, p := range plans {
		for _, c := range p.changes {
			if slices.ContainsFunc(c.After.CageFlags(), func(f string) bool { return strings.HasPrefix(f, "--allow-host=") }) {
				n++
			}
		}
	}
	return n
}

// prepareSpares makes the egress gateways of the n servers just caged with
// --allow-host ahead of their client's restart (cage.PrepareSpares), as it
// installed their packages ahead: their first start then joins a network
// made in advance instead of making its own. Nothing here fails the fix: a
// server without a spare makes its own gateway at its start.
func prepareSpares(opts *ProtectOptions, n int) {
	if n == 0 || os.Getenv(EnvEgressSpare) == "off" || cage.GatewayUsable() != nil {
		return
	}
	errOut := opts.IO.ErrOut
	warn := func(err error) {
		untrusted.Fprintf(errOut, "mcpcage: warning: the egress gateways could not be made ahead (%s): each server makes its own when it starts\n", strings.TrimSpace(err.Error()))
	}
	dir, err := home.Dir()
	if err != nil {
		warn(err)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cli, err := cage.Connect(ctx)
	if err != nil {
		warn(err)
		return
	}
	defer cli.Close()
	want := min(n, cage.SpareSlots)
	fmt.Fprintf(errOut, "mcpcage: making %s ahead, for the client's restart...\n", countOf(want, "egress gateway"))
	start := time.Now()
	made, err := cage.PrepareSpares(ctx, cli, cage.SpareSpec{Home: dir, Upstream: os.Getenv(EnvEgressNetwork)}, n)
	if err != nil {
		warn(err)
	}
	if made > 0 {
		fmt.Fprintf(opts.IO.Out, "Made %s ahead in %s: servers with --allow-host started in the next %d minutes find their network ready.\n",
			countOf(made, "egress gateway"), roundDuration(time.Since(start)), int((cage.SpareAge - cage.SpareAge/10).Minutes()))
	}
}
