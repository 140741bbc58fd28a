package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/pflag"

	"github.com/mcpcage/mcpcage/internal/cage"
	"github.com/mcpcage/mcpcage/internal/clients"
	"github.com/mcpcage/mcpcage/internal/egress"
	"github.com/mcpcage/mcpcage/internal/guard"
	"github.com/mcpcage/mcpcage/internal/home"
	"github.com/mcpcage/mcpcage/internal/pin"
	"github.com/mcpcage/mcpcage/internal/plan"
	"github.com/mcpcage/mcpcage/internal/proxy"
	"github.com/mcpcage/mcpcage/internal/scan"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// inspectTimeout bounds one server's inspection: install, start, list.
const inspectTimeout = 4 * time.Minute

// inspectResultJSON is what `protect --inspect` learned of one server.
type inspectResultJSON struct {
	Name  string `json:"name,omitempty"` // the name pins are kept under
	Error string `json:"error,omitempty"`
	// Skipped says why the server was not started (a project file's, not
	// named and not agreed to).
	Skipped string `json:"skipped,omitempty"`
	// NotGiven is what the entry asks for that inspection's minimal cage
	// leaves out (mounts, network, variables without a value in the entry).
	NotGiven []string       `json:"not_given,omitempty"`
	Tools    []string       `json:"tools,omitempty"`
	Pin      string         `json:"pin,omitempty"` // "new", "matches", "changed", "locked"
	PinText  string         `json:"pin_text,omitempty"`
	Findings []toolFindings `json:"findings,omitempty"`
	// Tried are the hosts the server tried to reach while it was
	// inspected, and refused: what it needs --allow-host for.
	Tried []triedHost `json:"tried,omitempty"`
}

type triedHost struct {
	Host  string `json:"host"`
	What  string `json:"what"` // the host, with the port when it came that far
	Allow string `json:"allow"`
}

type toolFindings struct {
	Tool     string         `json:"tool"`
	Findings []scan.Finding `json:"findings"`
}

// inspectCommand is the `mcpcage run` command line that cages a server: the
// entry's own when it is caged, the one --fix would write otherwise.
func inspectCommand(s clients.Server) ([]string, bool) {
	if s.Kind() == clients.KindRemote || s.RemoteCaged() {
		// A remote server is not started here: inspecting it would send
		// requests to its operator.
		return nil, false
	}
	if s.Caged() {
		return s.Args[1:], true
	}
	if ok, _ := s.Cageable(); ok {
		args := clients.WrapArgs(s)[1:]
		return append(append(args, s.Command), s.Args...), true
	}
	return nil, false
}

// inspectAll starts each cageable or caged server in a minimal cage, lists
// its tools, and compares them with its pins and the scanner's rules.
// Nothing is recorded: pins are only written by sessions and by approve.
//
// A project file came with the folder, not from the user's own settings (a
// cloned repository can plant one): its servers are started only when named
// on the command line, or after a question on a terminal; otherwise each is
// listed as skipped, with the command that includes it.
func inspectAll(opts *ProtectOptions, reports []*fileReport, rep *reportJSON) error {
	named := map[string]bool{}
	for _, n := range opts.Names {
		named[n] = false
	}
	for _, r := range reports {
		for _, s := range r.Servers {
			if _, ok := named[s.Name]; ok {
				named[s.Name] = true
			}
		}
	}
	for _, n := range opts.Names {
		if !named[n] {
			return &ExitError{Code: exitUsage, Err: withHint(fmt.Errorf("no server named %q in the configuration files read", n), "`mcpcage protect` lists them with their names")}
		}
	}
	answers := bufio.NewReader(opts.IO.In)
	agreed := map[string]bool{}
	for fi, r := range reports {
		for si, s := range r.Servers {
			argv, ok := inspectCommand(s)
			if !ok {
				continue
			}
			if len(named) > 0 {
				if _, ok := named[s.Name]; !ok {
					continue
				}
			} else if r.File.Scope == "project" {
				yes, asked := agreed[r.File.Path]
				if !asked {
					yes = askProject(opts, answers, r)
					agreed[r.File.Path] = yes
				}
				if !yes {
					rep.Files[fi].Servers[si].Inspect = &inspectResultJSON{Skipped: fmt.Sprintf(
						"a project file's server is started only when named (a cloned repository can plant one): `mcpcage protect --inspect %s` inspects it", quoteArgs([]string{s.Name}))}
					continue
				}
			}
			untrusted.Fprintf(opts.IO.ErrOut, "mcpcage: inspecting %s (%s)...\n", s.Name, r.File.Client.Name)
			rep.Files[fi].Servers[si].Inspect = inspectOne(s, argv)
		}
	}
	return nil
}

// askProject asks on a terminal whether to start the servers of a project
// file; without a terminal the answer is no.
func askProject(opts *ProtectOptions, answers *bufio.Reader, r *fileReport) bool {
	if !opts.IO.InTTY {
		return false
	}
	n := 0
	for _, s := range r.Servers {
		if _, ok := inspectCommand(s); ok {
			n++
		}
	}
	untrusted.Fprintf(opts.IO.ErrOut, "mcpcage: %s is a project file: it came with this folder, not from your settings, and a cloned repository can plant one. Start its %s to inspect them, each in a minimal cage (no network, none of your files writable)? [y/N] ",
		tilde(opts.Layout, r.File.Path), countOf(n, "server"))
	line, _ := answers.ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

// inspectRun is the `mcpcage run` that inspection starts for an entry whose
// run arguments are argv: its server (package, image and arguments) and
// name, in a minimal cage whatever else the entry asks for. No network, no
// --mount (only the read-only mounts run itself makes of the paths among the
// arguments, as for an entry --fix wrote), HOME an empty tmpfs, default
// limits, and variables only with their values from the entry's own env
// block, never from mcpcage's environment (the user's shell). It returns
// what was left out.
func inspectRun(s clients.Server, argv []string, rio *IOStreams) (*RunOptions, []string, error) {
	cmd := newRunCmd(rio)
	if err := cmd.Flags().Parse(argv); err != nil {
		return nil, nil, err
	}
	fs := cmd.Flags()
	block := map[string]string{}
	for _, v := range s.Env {
		block[v.Name] = v.Value
	}
	var keep, notGiven []string
	add := func(flag, value string) { keep = append(keep, "--"+flag, value) }
	fs.Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "image", "name", "runtime":
			add(f.Name, f.Value.String())
		case "env":
			vs, _ := fs.GetStringArray("env")
			for _, n := range vs {
				if _, ok := block[n]; ok {
					add("env", n)
				} else {
					notGiven = append(notGiven, "--env "+n+" (no value in the entry's env block)")
				}
			}
		case "mount", "allow-host", "allow-dependency":
			vs, _ := fs.GetStringArray(f.Name)
			for _, v := range vs {
				notGiven = append(notGiven, "--"+f.Name+" "+v)
			}
		case "allow-net", "allow-private-addresses", "allow-scripts":
			notGiven = append(notGiven, "--"+f.Name)
		case "egress-network", "memory", "pids", "cpus", "tmp-size", "max-line", "start-timeout":
			notGiven = append(notGiven, "--"+f.Name+" "+f.Value.String())
		}
		// The rest (--home, --update, the session's policy flags) grants
		// the server nothing and changes nothing of a listing.
	})
	min := newRunCmd(rio)
	if err := min.Flags().Parse(append(append(keep, "--"), fs.Args()...)); err != nil {
		return nil, nil, err
	}
	fs = min.Flags()
	ropts := &RunOptions{IO: rio, ScratchHome: true, Request: plan.Request{ListOnly: true}}
	ropts.LookupEnv = func(n string) (string, bool) {
		v, ok := block[n]
		return v, ok
	}
	ropts.Image, _ = fs.GetString("image")
	ropts.Name, _ = fs.GetString("name")
	ropts.Runtime, _ = fs.GetString("runtime")
	ropts.Env, _ = fs.GetStringArray("env")
	ropts.Memory, _ = fs.GetString("memory")
	ropts.Pids, _ = fs.GetInt64("pids")
	ropts.CPUs, _ = fs.GetFloat64("cpus")
	ropts.TmpSize, _ = fs.GetString("tmp-size")
	ropts.MaxLine, _ = fs.GetString("max-line")
	ropts.StartTimeout, _ = fs.GetDuration("start-timeout")
	ropts.Command = fs.Args()
	return ropts, notGiven, nil
}

func inspectOne(s clients.Server, argv []string) *inspectResultJSON {
	res := &inspectResultJSON{}
	rio := &IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}
	ropts, notGiven, err := inspectRun(s, argv, rio)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.NotGiven = notGiven
	p, err := planRun(ropts)
	if err != nil {
		res.Error = errText(err)
		return res
	}
	res.Name = p.Name
	if p.Egress == nil && !ropts.AllowNet && cage.GatewayUsable() == nil {
		// A server without the network is inspected behind a gateway that
		// allows nothing: it reaches no more than in its cage, and the
		// hosts it tries at start are named, so the user learns what to
		// allow.
		p.Egress = &egress.Policy{}
		p.EgressNet = os.Getenv(plan.EnvEgressNetwork)
	}
	ctx, cancel := context.WithTimeout(context.Background(), inspectTimeout)
	defer cancel()
	// Written by the install and by the gateway's readers at once.
	errBuf := &tailBuffer{max: 64 << 10}
	ropts.IO.ErrOut = errBuf
	st, err := upCage(ctx, ropts, p, nil)
	if err != nil {
		res.Error = errText(err)
		return res
	}
	c := st.Cage
	// The cage's stderr is a pipe: unread, a chatty server blocks its own
	// stdout behind it. Keep the end of it for the error message.
	stderrTail := &tailBuffer{max: 4096}
	drained := make(chan struct{})
	go func() {
		_, _ = io.Copy(stderrTail, c.Stderr())
		close(drained)
	}()
	listing, err := proxy.ListTools(ctx, c)
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 30*time.Second)
	// The cage, then its gateway, which reports what was still open.
	_ = st.Stop(stopCtx)
	if st.Gateway != nil {
		res.Tried = triedHosts(p.egressRec.Refused())
	}
	stopCancel()
	select {
	case <-drained:
	case <-time.After(5 * time.Second):
	}
	if err != nil {
		res.Error = "could not list its tools: " + errText(err)
		if tail := lastLine(errBuf.String() + "\n" + stderrTail.String()); tail != "" {
			res.Error += " (server said: " + tail + ")"
		}
		return res
	}
	current := make([]jsontext.Value, 0, len(listing.Tools))
	raws := make([]json.RawMessage, 0, len(listing.Tools))
	for _, t := range listing.Tools {
		current = append(current, jsontext.Value(t))
		raws = append(raws, t)
		var named struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(t, &named)
		res.Tools = append(res.Tools, named.Name)
	}
	res.Pin, res.PinText = pinStatus(p.Name, current)
	origin := scan.Origin{Package: strings.Join(append([]string{ropts.Image}, ropts.Command...), " "), Name: p.Name}
	for i, fs := range scan.ToolsFrom(origin, raws, cagedTools()) {
		if len(fs) > 0 {
			res.Findings = append(res.Findings, toolFindings{Tool: res.Tools[i], Findings: fs})
		}
	}
	return res
}

// triedHosts are the refused attempts' hosts, each once, in the order they
// came.
func triedHosts(events []egress.Event) []triedHost {
	var out []triedHost
	seen := map[string]bool{}
	for _, e := range events {
		if e.Verdict == "allowed" {
			continue
		}
		host, what, flag := egress.Allowing(e)
		if host == "" || seen[flag] {
			continue
		}
		seen[flag] = true
		out = append(out, triedHost{Host: host, What: what, Allow: flag})
	}
	return out
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

func errText(err error) string {
	s := strings.TrimSpace(err.Error())
	if h := hintOf(err); h != "" {
		s += " (" + h + ")"
	}
	return s
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if len(l) > 200 {
		l = l[:200] + "…"
	}
	return l
}

// pinStatus compares the tools listed now with the pins of name.
func pinStatus(name string, current []jsontext.Value) (string, string) {
	dir, err := home.Dir()
	if err != nil {
		return "error", err.Error()
	}
	f, err := guard.PinStore(dir).Load(name)
	if errors.Is(err, pin.ErrNoPins) {
		return "new", fmt.Sprintf("not pinned yet: the first session will pin these %d tools", len(current))
	}
	if err != nil {
		return "error", fmt.Sprintf("cannot read the pins of %q: %v", name, err)
	}
	if f.Pending != nil {
		return "locked", fmt.Sprintf("locked: a change waits for approval (`mcpcage diff %s`)", name)
	}
	var approved []jsontext.Value
	if f.Approved != nil {
		approved = f.Approved.List(pin.Tools)
	}
	changes, err := pin.Compare(pin.Tools, approved, current)
	if err != nil {
		return "error", err.Error()
	}
	// Servers offer some tools only to clients with some capabilities
	// (server-everything's get-roots-list needs roots), and inspection is a
	// bare client: a tool it is not shown is not evidence of a change.
	var what, missing []string
	for _, c := range changes {
		if c.Op == pin.Removed {
			missing = append(missing, untrusted.Line(c.Key))
			continue
		}
		what = append(what, fmt.Sprintf("%s %s", untrusted.Line(c.Key), c.Op))
	}
	if len(what) > 0 {
		return "changed", fmt.Sprintf("differs from the approved tools (%s): a session would lock (`mcpcage diff %s` then)", strings.Join(what, ", "), name)
	}
	text := fmt.Sprintf("matches the %d approved tools", len(approved))
	if len(missing) > 0 {
		text = fmt.Sprintf("matches the approved tools it was shown; not offered to inspection: %s (some tools are offered only to clients with certain capabilities)", strings.Join(missing, ", "))
	}
	return "matches", text
}

func printInspect(w io.Writer, r *inspectResultJSON) {
	if r.Skipped != "" {
		untrusted.Fprintf(w, "      inspect: skipped: %s\n", r.Skipped)
		return
	}
	if len(r.NotGiven) > 0 {
		untrusted.Fprintf(w, "      inspect: in a minimal cage, without: %s\n", strings.Join(r.NotGiven, ", "))
	}
	for _, t := range r.Tried {
		port := ""
		if t.What == t.Host && strings.HasPrefix(t.Allow, "--allow-host ") {
			// Refused at its name: the port it wanted is not known.
			port = " (HOST:PORT for a port other than 443)"
		}
		untrusted.Fprintf(w, "      ! tried %s at start, refused: add %s%s to its args before -- if it needs it\n", untrusted.Line(t.What), untrusted.Line(t.Allow), port)
	}
	if r.Error != "" {
		untrusted.Fprintf(w, "      inspect: %s\n", r.Error)
		return
	}
	untrusted.Fprintf(w, "      tools (%d): %s\n", len(r.Tools), strings.Join(r.Tools, ", "))
	untrusted.Fprintf(w, "      pins: %s\n", r.PinText)
	if len(r.Findings) == 0 {
		fmt.Fprintln(w, "      scanner: no sign of hidden instructions")
		return
	}
	for _, tf := range r.Findings {
		untrusted.Fprintf(w, "      scanner: tool %q\n", untrusted.Line(tf.Tool))
		_ = scan.Format(w, "        ", tf.Findings)
		if s := scan.Summary(tf.Tool, tf.Findings); s != "" {
			untrusted.Fprintf(w, "        %s\n", s)
		}
	}
}
