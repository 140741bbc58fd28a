package main

import (
	"bytes"
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

	"github.com/mcpcage/mcpcage/internal/cage"
	"github.com/mcpcage/mcpcage/internal/clients"
	"github.com/mcpcage/mcpcage/internal/egress"
	"github.com/mcpcage/mcpcage/internal/guard"
	"github.com/mcpcage/mcpcage/internal/home"
	"github.com/mcpcage/mcpcage/internal/pin"
	"github.com/mcpcage/mcpcage/internal/proxy"
	"github.com/mcpcage/mcpcage/internal/scan"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// inspectTimeout bounds one server's inspection: install, start, list.
const inspectTimeout = 4 * time.Minute

// inspectResultJSON is what `protect --inspect` learned of one server.
type inspectResultJSON struct {
	Name     string         `json:"name,omitempty"` // the name pins are kept under
	Error    string         `json:"error,omitempty"`
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
	if s.Caged() {
		return s.Args[1:], true
	}
	if ok, _ := s.Cageable(); ok {
		args := clients.WrapArgs(s)[1:]
		return append(append(args, s.Command), s.Args...), true
	}
	return nil, false
}

// inspectAll starts each cageable or caged server in the cage, lists its
// tools, and compares them with its pins and the scanner's rules. Nothing is
// recorded: pins are only written by sessions and by approve.
func inspectAll(opts *ProtectOptions, reports []*fileReport, rep *reportJSON) {
	for fi, r := range reports {
		for si, s := range r.Servers {
			argv, ok := inspectCommand(s)
			if !ok {
				continue
			}
			untrusted.Fprintf(opts.IO.ErrOut, "mcpcage: inspecting %s (%s)...\n", s.Name, r.File.Client.Name)
			res := inspectOne(opts, s, argv)
			rep.Files[fi].Servers[si].Inspect = res
		}
	}
}

func inspectOne(opts *ProtectOptions, s clients.Server, argv []string) *inspectResultJSON {
	res := &inspectResultJSON{}
	// Parse the run flags with `mcpcage run`'s own command, so inspection
	// cages the server exactly as a session would.
	rio := &IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}
	cmd := newRunCmd(rio)
	if err := cmd.Flags().Parse(argv); err != nil {
		res.Error = err.Error()
		return res
	}
	ropts := &RunOptions{IO: rio}
	fs := cmd.Flags()
	ropts.Image, _ = fs.GetString("image")
	ropts.Name, _ = fs.GetString("name")
	ropts.AllowNet, _ = fs.GetBool("allow-net")
	ropts.AllowHosts, _ = fs.GetStringArray("allow-host")
	ropts.AllowPrivate, _ = fs.GetBool("allow-private-addresses")
	ropts.EgressNetwork, _ = fs.GetString("egress-network")
	ropts.Mounts, _ = fs.GetStringArray("mount")
	ropts.Env, _ = fs.GetStringArray("env")
	ropts.Memory, _ = fs.GetString("memory")
	ropts.Pids, _ = fs.GetInt64("pids")
	ropts.CPUs, _ = fs.GetFloat64("cpus")
	ropts.TmpSize, _ = fs.GetString("tmp-size")
	ropts.MaxLine, _ = fs.GetString("max-line")
	ropts.StartTimeout, _ = fs.GetDuration("start-timeout")
	ropts.Command = fs.Args()

	// The client would give the server its env block; so does inspection,
	// through mcpcage's own environment, never argv.
	restore := setEnv(s.Env)
	p, err := planRun(ropts)
	restore()
	if err != nil {
		res.Error = errText(err)
		return res
	}
	res.Name = p.name
	if p.egress == nil && !ropts.AllowNet && cage.GatewayUsable() == nil {
		// A server without the network is inspected behind a gateway that
		// allows nothing: it reaches no more than in its cage, and the
		// hosts it tries at start are named, so the user learns what to
		// allow.
		p.egress = &egress.Policy{}
		p.egressNet = os.Getenv(EnvEgressNetwork)
	}
	ctx, cancel := context.WithTimeout(context.Background(), inspectTimeout)
	defer cancel()
	var errBuf bytes.Buffer
	ropts.IO.ErrOut = &errBuf
	st, err := upCage(ctx, ropts, p)
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
		res.Tried = triedHosts(p.egressRec.pending())
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
	res.Pin, res.PinText = pinStatus(p.name, current)
	origin := scan.Origin{Package: strings.Join(append([]string{ropts.Image}, ropts.Command...), " "), Name: p.name}
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
		host, what, flag := cage.EgressAllowing(e)
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
	var h *HintError
	if errors.As(err, &h) && h.Hint != "" {
		s += " (" + h.Hint + ")"
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

// setEnv sets the entry's variables in this process for planRun, and
// returns a function that puts the environment back.
func setEnv(vars []clients.Var) func() {
	type old struct {
		v  string
		ok bool
	}
	saved := map[string]old{}
	for _, v := range vars {
		if _, done := saved[v.Name]; !done {
			ov, ok := os.LookupEnv(v.Name)
			saved[v.Name] = old{ov, ok}
		}
		os.Setenv(v.Name, v.Value)
	}
	return func() {
		for n, o := range saved {
			if o.ok {
				os.Setenv(n, o.v)
			} else {
				os.Unsetenv(n)
			}
		}
	}
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
