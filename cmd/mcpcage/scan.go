package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpcage/mcpcage/internal/cage"
	"github.com/mcpcage/mcpcage/internal/guard"
	"github.com/mcpcage/mcpcage/internal/home"
	"github.com/mcpcage/mcpcage/internal/pin"
	"github.com/mcpcage/mcpcage/internal/plan"
	"github.com/mcpcage/mcpcage/internal/proxy"
	"github.com/mcpcage/mcpcage/internal/scan"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// Exit statuses of `mcpcage scan`.
const (
	exitScanFound = 1 // a finding at or above --fail-on
	exitScanError = 2 // the input could not be read, or the server not listed
)

// maxScanInput bounds what `mcpcage scan FILE` reads.
const maxScanInput = 256 << 20

// ScanOptions are `mcpcage scan`'s flags and arguments.
type ScanOptions struct {
	IO      *IOStreams
	File    string   // a file, or "-" for stdin
	Command []string // the server's command line, after --
	JSON    bool
	FailOn  scan.Severity

	// For a caged server.
	Image    string
	Name     string
	AllowNet bool
	Env      []string
	Timeout  time.Duration

	// Server names the package or server that offers FILE's tools.
	Server string

	// Args is a file of tool-call arguments to check for secrets instead.
	Args        string
	AllowSecret []string
}

func newScanCmd(io *IOStreams) *cobra.Command {
	opts := &ScanOptions{IO: io}
	var failOn string
	cmd := &cobra.Command{
		Use:   "scan [flags] FILE|- | scan [flags] -- npx -y PACKAGE [ARGS...]",
		Short: "Look for signs of hidden instructions in tool definitions",
		Long: `Scan tool definitions for signs of hidden instructions with mcpcage's
fixed local rules: tags addressed to the model, paths to secret files,
requests to tell you nothing, orders about other tools, invisible characters
and more. Nothing is sent off your computer.

FILE (or - for stdin) holds a tools/list result ({"tools":[...]}), a bare array
of tools, or JSON Lines with one tool per line (a tool object, or a record with
the tool under "tool"). All tools of the input are scanned as one list.

After --, the server is started in a cage (no network unless --allow-net),
listed, and stopped: its tools and instructions are scanned.

With --args FILE, FILE holds a tool call's arguments (or the tools/call
request): they are checked for secrets as a session checks every call.

Exit status: 0 when nothing at or above --fail-on was found, 1 when something
was (with --args: a secret not allowed), 2 when the input could not be read
or the server could not be listed.`,
		Example: `  mcpcage scan tools.json
  mcpcage scan --json --fail-on medium - < tools.json
  mcpcage scan -- npx -y @modelcontextprotocol/server-everything
  mcpcage scan --args call.json --allow-secret private-key:write_file`,
		RunE: func(cmd *cobra.Command, args []string) error {
			sev, err := scan.ParseSeverity(failOn)
			if err != nil {
				return &ExitError{Code: exitScanError, Err: fmt.Errorf("--fail-on %q: give low, medium or high", failOn)}
			}
			opts.FailOn = sev
			if opts.Args != "" {
				if len(args) > 0 {
					return &ExitError{Code: exitScanError, Err: errors.New("--args takes the file itself; give no other FILE or command")}
				}
				return scanArgs(opts)
			}
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				if dash > 0 {
					return &ExitError{Code: exitScanError, Err: errors.New("give either FILE or -- COMMAND, not both")}
				}
				opts.Command = args
				if len(opts.Command) == 0 && opts.Image == "" {
					return &ExitError{Code: exitScanError, Err: errors.New("nothing after --: give the server's command, like -- npx -y PACKAGE")}
				}
			} else if opts.Image != "" {
				if len(args) > 0 {
					return &ExitError{Code: exitScanError, Err: errors.New("with --image, put the image's arguments after --")}
				}
			} else {
				if len(args) != 1 {
					return &ExitError{Code: exitScanError, Err: withHint(errors.New("give one FILE (or - for stdin), or a server's command after --"),
						"mcpcage scan tools.json, or mcpcage scan -- npx -y PACKAGE")}
				}
				opts.File = args[0]
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return scanRun(ctx, opts)
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&opts.JSON, "json", false, "print the findings as JSON: per tool its name and findings")
	fs.StringVar(&failOn, "fail-on", "high", "exit 1 when a finding of this `severity` or higher is found: low, medium or high")
	fs.StringVar(&opts.Image, "image", "", "scan a server that ships as a Docker `image` (arguments after --)")
	fs.StringVar(&opts.Name, "name", "", "the server's `name` for its private HOME (default: from the package or image)")
	fs.BoolVar(&opts.AllowNet, "allow-net", false, "give the server the network while it is listed")
	fs.StringArrayVar(&opts.Env, "env", nil, "pass the environment variable `NAME` to the server (repeatable)")
	fs.DurationVar(&opts.Timeout, "timeout", 2*time.Minute, "how long to wait for the server's tool list")
	fs.StringVar(&opts.Args, "args", "", "check a `FILE` of tool-call arguments (or - for stdin) for secrets, as a session does")
	fs.StringArrayVar(&opts.AllowSecret, "allow-secret", nil, "with --args: let a secret of this `KIND` (or KIND:TOOL) through; repeatable")
	fs.StringVar(&opts.Server, "server", "", "the `package` or server that offers FILE's tools, to notice tools named like another server's")
	return cmd
}

// scannedItem is one definition and what the scanner found in it.
type scannedItem struct {
	Kind     string         `json:"kind"`
	Name     string         `json:"name"`
	Findings []scan.Finding `json:"findings"`
}

type scanReport struct {
	Server string        `json:"server,omitempty"`
	Tools  []scannedItem `json:"tools"`
	Other  []scannedItem `json:"other,omitempty"` // instructions, prompts, resources
}

func scanRun(ctx context.Context, opts *ScanOptions) error {
	var rep *scanReport
	var err error
	if opts.File != "" {
		rep, err = scanFile(opts)
	} else {
		rep, err = scanCaged(ctx, opts)
	}
	if err != nil {
		var exit *ExitError
		if errors.As(err, &exit) {
			return err
		}
		return &ExitError{Code: exitScanError, Err: err}
	}
	if err := printScan(opts, rep); err != nil {
		return err
	}
	for _, it := range append(rep.Tools, rep.Other...) {
		if scan.Max(it.Findings) >= opts.FailOn {
			return &ExitError{Code: exitScanFound}
		}
	}
	return nil
}

func scanFile(opts *ScanOptions) (*scanReport, error) {
	var r io.Reader
	name := opts.File
	if name == "-" {
		r = opts.IO.In
		name = "stdin"
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, withHint(fmt.Errorf("cannot read %s: %v", name, unwrapPathErr(err)), "give a file of tool definitions, or - for stdin")
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxScanInput+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %v", name, err)
	}
	if len(data) > maxScanInput {
		return nil, fmt.Errorf("%s is larger than %d MiB", name, maxScanInput>>20)
	}
	in, err := parseScanInput(data)
	if err != nil {
		return nil, withHint(fmt.Errorf("%s: %v", name, err),
			`give a tools/list result {"tools":[...]}, an array of tools, or one tool per line`)
	}
	return scanAll(in, scan.Origin{Package: opts.Server}), nil
}

func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// scanInput is what a file or a server gave to scan.
type scanInput struct {
	tools        []json.RawMessage
	prompts      []json.RawMessage
	resources    []json.RawMessage
	templates    []json.RawMessage
	instructions []string
}

// parseScanInput reads a sequence of JSON values (one document, or JSON
// Lines): tools/list results and other list results, JSON-RPC responses
// carrying them, arrays of tools, tool objects and records with a "tool".
func parseScanInput(data []byte) (*scanInput, error) {
	in := &scanInput{}
	dec := json.NewDecoder(bytes.NewReader(data))
	n := 0
	for {
		var v json.RawMessage
		err := dec.Decode(&v)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not JSON after %d value(s): %v", n, err)
		}
		n++
		if err := in.add(v, 0); err != nil {
			return nil, fmt.Errorf("value %d: %v", n, err)
		}
	}
	if n == 0 {
		return nil, errors.New("empty input")
	}
	return in, nil
}

func (in *scanInput) add(v json.RawMessage, depth int) error {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return errors.New("empty value")
	}
	switch v[0] {
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(v, &items); err != nil {
			return err
		}
		for _, it := range items {
			if err := in.addTool(it); err != nil {
				return err
			}
		}
		return nil
	case '{':
	default:
		return errors.New("not a tool, a list of tools or a tools/list result")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(v, &obj); err != nil {
		return err
	}
	lists := []struct {
		key string
		dst *[]json.RawMessage
	}{{"tools", &in.tools}, {"prompts", &in.prompts}, {"resources", &in.resources}, {"resourceTemplates", &in.templates}}
	found := false
	for _, l := range lists {
		raw, ok := obj[l.key]
		if !ok {
			continue
		}
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return fmt.Errorf("%q is not an array", l.key)
		}
		*l.dst = append(*l.dst, items...)
		found = true
	}
	if raw, ok := obj["instructions"]; ok {
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" {
			in.instructions = append(in.instructions, s)
			found = true
		}
	}
	if found {
		return nil
	}
	if res, ok := obj["result"]; ok && depth == 0 {
		return in.add(res, depth+1)
	}
	return in.addTool(v)
}

// addTool takes a tool object or a record with the tool under "tool".
func (in *scanInput) addTool(v json.RawMessage) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(v, &obj); err != nil {
		return errors.New("a list item is not an object")
	}
	if t, ok := obj["tool"]; ok && len(bytes.TrimSpace(t)) > 0 && bytes.TrimSpace(t)[0] == '{' {
		in.tools = append(in.tools, t)
		return nil
	}
	if _, ok := obj["name"]; !ok {
		if _, ok := obj["description"]; !ok {
			return errors.New(`an object with no "name", "tool" or "tools"`)
		}
	}
	in.tools = append(in.tools, v)
	return nil
}

func scanInputItems(kind string, items []json.RawMessage) []scannedItem {
	out := make([]scannedItem, len(items))
	for i, it := range items {
		name := itemDisplayName(it, i)
		out[i] = scannedItem{Kind: kind, Name: name, Findings: scan.Item(kind, it, items)}
	}
	return out
}

func scanAll(in *scanInput, origin scan.Origin) *scanReport {
	rep := &scanReport{Tools: []scannedItem{}}
	for i, fs := range scan.ToolsFrom(origin, in.tools, cagedTools()) {
		if fs == nil {
			fs = []scan.Finding{}
		}
		rep.Tools = append(rep.Tools, scannedItem{Kind: "tool", Name: itemDisplayName(in.tools[i], i), Findings: fs})
	}
	for _, s := range in.instructions {
		b, _ := json.Marshal(s)
		rep.Other = append(rep.Other, scannedItem{Kind: "instructions", Name: "instructions", Findings: scan.Item("instructions", b, in.tools)})
	}
	rep.Other = append(rep.Other, scanInputItems("prompt", in.prompts)...)
	rep.Other = append(rep.Other, scanInputItems("resource", in.resources)...)
	rep.Other = append(rep.Other, scanInputItems("resourceTemplate", in.templates)...)
	for i := range rep.Other {
		if rep.Other[i].Findings == nil {
			rep.Other[i].Findings = []scan.Finding{}
		}
	}
	return rep
}

func itemDisplayName(item json.RawMessage, i int) string {
	var v struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(item, &v) == nil && v.Name != "" {
		return v.Name
	}
	return "#" + strconv.Itoa(i+1)
}

func printScan(opts *ScanOptions, rep *scanReport) error {
	w := opts.IO.Out
	if opts.JSON {
		return writeJSON(w, rep)
	}
	all := append(append([]scannedItem(nil), rep.Tools...), rep.Other...)
	flagged, high := 0, 0
	for _, it := range all {
		if len(it.Findings) == 0 {
			continue
		}
		flagged++
		high += scan.Count(it.Findings, scan.High)
		label := it.Kind + " " + strconv.Quote(untrusted.Line(it.Name))
		if it.Kind == "instructions" {
			label = "the server's instructions"
		}
		untrusted.Fprintf(w, "%s\n", label)
		if err := scan.Format(w, "    ", it.Findings); err != nil {
			return err
		}
		if s := scan.Summary(it.Name, it.Findings); s != "" {
			untrusted.Fprintf(w, "    %s\n", s)
		}
	}
	what := fmt.Sprintf("%d tool(s)", len(rep.Tools))
	if n := len(rep.Other); n > 0 {
		what = fmt.Sprintf("%d definition(s) (%d tool(s), %d other)", len(rep.Tools)+n, len(rep.Tools), n)
	}
	if rep.Server != "" {
		what += " of " + strconv.Quote(rep.Server)
	}
	if flagged == 0 {
		untrusted.Fprintf(w, "no signs of hidden instructions in %s\n", what)
		return nil
	}
	untrusted.Fprintf(w, "%d of %s with signs of hidden instructions; %s\n", flagged, what, scan.HighCount(high))
	return nil
}

// scanCaged starts the server in a cage as `mcpcage run` would, lists it
// and stops it.
func scanCaged(ctx context.Context, opts *ScanOptions) (*scanReport, error) {
	ro := &RunOptions{IO: opts.IO, Request: plan.Request{
		Command: opts.Command, Image: opts.Image, Name: opts.Name, AllowNet: opts.AllowNet, Env: opts.Env, ListOnly: true,
		Memory: "512m", Pids: cage.DefaultPids, CPUs: cage.DefaultCPUs, TmpSize: "64m", MaxLine: "16m", StartTimeout: 30 * time.Second,
	}}
	p, err := planRun(ro)
	if err != nil {
		return nil, err
	}
	st, err := upCage(ctx, ro, p, nil)
	if err != nil {
		return nil, err
	}
	c := st.Cage
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = st.Stop(sctx)
	}()
	// The cage's stdout and stderr share one stream: an unread stderr
	// would stall the server's answers behind it.
	stderrTail := &tailBuffer{max: 4096}
	go func() { _, _ = io.Copy(stderrTail, c.Stderr()) }()
	lctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	l, err := proxy.ListTools(lctx, c)
	if err != nil {
		err = fmt.Errorf("cannot list the tools of %q: %v", p.Name, err)
		if tail := lastLine(stderrTail.String()); tail != "" {
			err = fmt.Errorf("%v (the server said: %s)", err, untrusted.Line(tail))
		}
		return nil, withHint(err, "if the server needs the network to start, try --allow-net; if it needs a variable, --env NAME")
	}
	in := &scanInput{tools: l.Tools}
	if strings.TrimSpace(l.Instructions) != "" {
		in.instructions = []string{l.Instructions}
	}
	rep := scanAll(in, scan.Origin{Package: strings.Join(append([]string{opts.Image}, opts.Command...), " "), Name: p.Name})
	rep.Server = p.Name
	return rep, nil
}

var _ proxy.Server = (*cage.Cage)(nil)

// cagedTools returns the approved tools of every server pinned under
// $MCPCAGE_HOME, read anew at each call (a command reads them once and
// passes them on): cross-tool checks then notice a description that gives
// orders about a tool of another caged server. Unreadable pin files are
// skipped here; `mcpcage pins` reports them.
func cagedTools() []json.RawMessage {
	dir, err := home.Dir()
	if err != nil {
		return nil
	}
	files, _ := guard.PinStore(dir).List()
	var out []json.RawMessage
	for _, f := range files {
		if f.Approved == nil {
			continue
		}
		for _, t := range f.Approved.List(pin.Tools) {
			out = append(out, json.RawMessage(t))
		}
	}
	return out
}
