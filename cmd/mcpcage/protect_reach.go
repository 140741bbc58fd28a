package main

import (
	"github.com/mcpcage/mcpcage/internal/remote"
	"io"
	"strings"

	"github.com/mcpcage/mcpcage/internal/clients"
	"github.com/mcpcage/mcpcage/internal/plan"
)

// entryPlan is the plan `mcpcage run` makes for a caged entry: its
// arguments read with run's own flags, "~/x" read against the user's home
// and "." against the project folder of a project entry (a user entry's
// "." is wherever its client starts it: not known here), its variables
// from the entry's env block, and nothing refused for a path that does not
// exist yet (the report says what run would do; cageNotes warns).
func entryPlan(opts *ProtectOptions, r *fileReport, s clients.Server) (*plan.Plan, error) {
	if !s.Caged() {
		return nil, nil
	}
	rio := &IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}
	ropts, err := parseRunArgs(s.Args[1:], rio)
	if err != nil {
		return nil, err
	}
	block := map[string]string{}
	for _, v := range s.Env {
		block[v.Name] = v.Value
	}
	req := ropts.request()
	req.ListOnly = true
	req.UserHome = opts.Layout.Home
	req.Dir = projectDirOf(opts, r, s)
	req.LookupEnv = func(n string) (string, bool) {
		v, ok := block[n]
		return v, ok
	}
	return plan.Make(req)
}

// reachOf is what the server can reach: for a caged entry, the plan run
// makes of it (the folders it sees and how, the network); for the rest,
// what the client gives it (clients.Server.Reach).
func reachOf(opts *ProtectOptions, r *fileReport, s clients.Server) clients.Reach {
	reach := s.Reach()
	if !s.Caged() {
		return reach
	}
	p, err := entryPlan(opts, r, s)
	if err != nil {
		reach.Refused = "mcpcage run refuses this entry: " + errText(err)
		return reach
	}
	if p.Remote != nil {
		reach.Remote = remote.Redacted(p.Remote.URL)
		return reach
	}
	reach.Network = p.AllowNet
	reach.Hosts = p.AllowHosts
	for _, m := range p.Mounts {
		how := " (read-only)"
		if m.Writable {
			how = " (read-write)"
		}
		reach.Mounts = append(reach.Mounts, m.Target+how)
	}
	return reach
}
