package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpcage/mcpcage/internal/cage"
	"github.com/mcpcage/mcpcage/internal/clients"
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
			if c.Original != "" {
				continue // a remote server: nothing to install
			}
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
