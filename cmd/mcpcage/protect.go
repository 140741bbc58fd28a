package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/mcpcage/mcpcage/internal/clients"
	"github.com/mcpcage/mcpcage/internal/home"
	"github.com/mcpcage/mcpcage/internal/secrets"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// ProtectOptions are the inputs of `mcpcage protect`.
type ProtectOptions struct {
	IO         *IOStreams
	Layout     clients.Layout
	ProjectDir string   // project scope: the current directory
	Clients    []string // --client, empty for all
	JSON       bool
	Fix        bool
	Yes        bool
	Inspect    bool
	// Names are the servers --inspect starts (all but project files'
	// when empty); naming one is consent to start it.
	Names     []string
	NoInstall bool   // --fix --no-install: cage without installing first
	Exe       string // absolute path of mcpcage written into caged entries
	// AllowTempExe writes Exe even from a temporary or build folder.
	AllowTempExe bool
	Now          func() time.Time
	// BeforeRename runs just before a changed file is renamed into place.
	// Only tests set it, to change the file at that moment.
	BeforeRename func(path string)
}

func newProtectCmd(io *IOStreams, h Hooks) *cobra.Command {
	opts := &ProtectOptions{IO: io, BeforeRename: h.BeforeRename}
	cmd := &cobra.Command{
		Use:   "protect [--fix [--yes]] [--inspect [NAME...]] [--json] [--client NAME]...",
		Short: "Show which MCP servers of your clients run without a cage; --fix cages them",
		Long: `protect reads the MCP configuration of every client installed here (and of
the project in the current directory) and shows, for each server, whether it
runs in a cage, how it starts, what it can reach, and any secret written in
clear text (always redacted). It changes nothing.

With --fix it shows what it is about to change, asks for confirmation, then
cages the servers started with npx or uvx, and compiled local programs:
their command becomes mcpcage and their args "run --name=NAME --env=VAR...
-- <the original command>". A backup
is left next to every file changed; mcpcage unwrap restores the originals.

Clients: ` + strings.Join(clients.IDs(), ", ") + `.

With --inspect it also starts each server, in a minimal cage (no network,
no --mount, nothing of yours writable, variables only with the values of the
entry's own env block), lists its tools, and shows their pin status and the
scanner's findings. A project file's servers (./.mcp.json, .cursor/mcp.json,
.vscode/mcp.json, ... in the current directory: a cloned repository can
plant one) are started only after a question on a terminal, or when named:
--inspect NAME... inspects only the servers named.

Exit status: 0 when the report was printed or the changes written (or there
was nothing to change); 1 on an error, when the prompt was declined, or when
a file changed while mcpcage was writing it; 2 for a usage error, or --fix
without a terminal to ask on and without --yes.`,
		Example: `  mcpcage protect
  mcpcage protect --json --client claude-desktop
  mcpcage protect --inspect --client cursor
  mcpcage protect --inspect notes
  mcpcage protect --fix
  mcpcage protect --fix --yes --client vscode`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && !opts.Inspect {
				return &ExitError{Code: 2, Err: withHint(fmt.Errorf("unexpected argument %q", args[0]), "server names go with --inspect: mcpcage protect --inspect NAME")}
			}
			opts.Names = args
			if err := opts.hostPlaces(); err != nil {
				return err
			}
			if exe, err := os.Executable(); err == nil {
				opts.Exe = exe
			}
			opts.Now = time.Now
			if opts.Yes && !opts.Fix {
				return &ExitError{Code: 2, Err: withHint(errors.New("--yes only goes with --fix"), "run `mcpcage protect --fix --yes`")}
			}
			if opts.NoInstall && !opts.Fix {
				return &ExitError{Code: 2, Err: withHint(errors.New("--no-install only goes with --fix"), "run `mcpcage protect --fix --no-install`")}
			}
			if opts.Fix && opts.JSON {
				return &ExitError{Code: 2, Err: errors.New("--json goes with the report, not with --fix")}
			}
			if opts.Fix && opts.Inspect {
				return &ExitError{Code: 2, Err: errors.New("--fix and --inspect cannot be used together: run them one after the other")}
			}
			return protectRun(opts)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.Fix, "fix", false, "cage the servers started with npx or uvx, and compiled local programs (asks first)")
	f.BoolVar(&opts.Yes, "yes", false, "with --fix: do not ask for confirmation (for scripts)")
	f.BoolVar(&opts.AllowTempExe, "allow-temp-exe", os.Getenv("MCPCAGE_ALLOW_TEMP_EXE") == "1", "with --fix: write this mcpcage's path even when it is in a temporary or build folder ($MCPCAGE_ALLOW_TEMP_EXE=1)")
	f.BoolVar(&opts.NoInstall, "no-install", false, "with --fix: do not install the packages now (each first start installs its own)")
	f.BoolVar(&opts.JSON, "json", false, "print the report as JSON")
	f.BoolVar(&opts.Inspect, "inspect", false, "also start each cageable server in the cage and show its tools, pin status and scanner findings")
	f.StringSliceVar(&opts.Clients, "client", nil, "only these clients (`NAME`, repeatable): "+strings.Join(clients.IDs(), ", "))
	return cmd
}

// selectClients turns --client values into table entries (nil for all).
func selectClients(names []string) ([]*clients.Client, error) {
	if len(names) == 0 {
		return nil, nil
	}
	var out []*clients.Client
	for _, n := range names {
		c := clients.Lookup(strings.TrimSpace(n))
		if c == nil {
			return nil, &ExitError{Code: 2, Err: withHint(fmt.Errorf("unknown client %q", n), "use one of: %s", strings.Join(clients.IDs(), ", "))}
		}
		out = append(out, c)
	}
	return out, nil
}

// fileReport is one configuration file as read now.
type fileReport struct {
	File    clients.File
	Data    []byte
	Servers []clients.Server
	Err     error
	Warning string
}

func readFiles(l clients.Layout, projectDir string, only []*clients.Client) []*fileReport {
	var out []*fileReport
	for _, f := range clients.Locate(l, projectDir, only) {
		r := &fileReport{File: f}
		if f.Refused != "" {
			r.Err = errors.New(f.Refused)
			out = append(out, r)
			continue
		}
		r.Data, r.Err = clients.ReadFile(f.Path)
		if r.Err == nil {
			r.Servers, r.Err = clients.Read(f.Client.Format, r.Data, f.Client.Tables)
		}
		if r.Err == nil && f.Client.Format == clients.JSON && !json.Valid(r.Data) && len(bytes.TrimSpace(r.Data)) > 0 {
			r.Warning = fmt.Sprintf("this file is not strict JSON (a comment or a trailing comma): %s may refuse to read it", f.Client.Name)
		}
		out = append(out, r)
	}
	return out
}

// openLedger opens the record of the entries --fix caged. A ledger that
// cannot be read is reported and left out: protect then cannot say "was
// caged", but everything else works.
func openLedger(errOut io.Writer) *clients.Ledger {
	d, err := home.Sub("protect")
	if err != nil {
		return nil
	}
	ledger, err := clients.OpenLedger(filepath.Join(d, "caged.json"))
	if err != nil {
		untrusted.Fprintf(errOut, "mcpcage: warning: %v\n", err)
	}
	return ledger
}

// Status words shown for a server.
const (
	statusCaged    = "caged"
	statusUncaged  = "uncaged"
	statusWasCaged = "uncaged (was caged)"
	statusRemote   = "remote"
)

// serverJSON is one server in `protect --json`.
type serverJSON struct {
	Name     string             `json:"name"`
	Scope    string             `json:"scope,omitempty"`
	Status   string             `json:"status"`
	Caged    bool               `json:"caged"`
	WasCaged bool               `json:"was_caged"`
	Kind     clients.Kind       `json:"kind"`
	Disabled bool               `json:"disabled"`
	Cageable bool               `json:"cageable"`
	Command  []string           `json:"command,omitempty"` // redacted
	URL      string             `json:"url,omitempty"`     // redacted
	Reach    clients.Reach      `json:"reach"`
	Secrets  []secrets.Finding  `json:"secrets"`
	Hint     string             `json:"hint,omitempty"`
	Warnings []string           `json:"warnings,omitempty"`
	Inspect  *inspectResultJSON `json:"inspect,omitempty"`
}

type fileJSON struct {
	Client  string       `json:"client"`
	Name    string       `json:"name"`
	Scope   string       `json:"scope"`
	Path    string       `json:"path"`
	Format  string       `json:"format"`
	Error   string       `json:"error,omitempty"`
	Warning string       `json:"warning,omitempty"`
	Servers []serverJSON `json:"servers"`
}

type summaryJSON struct {
	Files    int `json:"files"`
	Servers  int `json:"servers"`
	Caged    int `json:"caged"`
	Uncaged  int `json:"uncaged"`
	Cageable int `json:"cageable"`
	Remote   int `json:"remote"`
	Secrets  int `json:"secrets"`
}

type reportJSON struct {
	Files   []fileJSON  `json:"files"`
	Summary summaryJSON `json:"summary"`
}

func describe(opts *ProtectOptions, r *fileReport, s clients.Server, ledger *clients.Ledger) serverJSON {
	j := serverJSON{
		Name: s.Name, Scope: s.Scope(), Caged: s.Caged(), Kind: s.Kind(), Disabled: s.Disabled,
		Reach: reachOf(opts, r, s), Secrets: s.Secrets(),
	}
	if j.Secrets == nil {
		j.Secrets = []secrets.Finding{}
	}
	ok, why := s.Cageable()
	j.Cageable = ok
	switch {
	case j.Caged:
		j.Status = statusCaged
	case j.Kind == clients.KindRemote:
		j.Status = statusRemote
	case ledger != nil && ledger.Has(r.File.Path, s.Where):
		j.Status, j.WasCaged = statusWasCaged, true
	default:
		j.Status = statusUncaged
	}
	if !ok && !j.Caged {
		j.Hint = why
	}
	j.Warnings = s.Warnings()
	if s.HasCommand {
		j.Command = append([]string{s.Command}, secrets.RedactArgs(s.Args)...)
	}
	if s.URL != "" {
		j.URL = redactURL(s.URL)
	}
	return j
}

// redactURL keeps a remote address readable without its credentials.
func redactURL(u string) string {
	if len(secrets.URL(u)) == 0 {
		return u
	}
	u, _ = secrets.Redact(u)
	if base, q, ok := strings.Cut(u, "?"); ok && len(secrets.URL("x?"+q)) > 0 {
		return base + "?…"
	}
	return u
}

// hostPlaces sets where the clients' files are: this user's home and, for
// project scope, the current directory.
func (opts *ProtectOptions) hostPlaces() error {
	l, err := clients.HostLayout()
	if err != nil {
		return withHint(errors.New("cannot find your home directory"), "set HOME")
	}
	opts.Layout = l
	if wd, err := os.Getwd(); err == nil {
		opts.ProjectDir = wd
	}
	return nil
}

// readClients reads the configuration files of the clients --client names
// (all when none) and opens protect's ledger, which may be nil.
func (opts *ProtectOptions) readClients() ([]*fileReport, *clients.Ledger, error) {
	only, err := selectClients(opts.Clients)
	if err != nil {
		return nil, nil, err
	}
	return readFiles(opts.Layout, opts.ProjectDir, only), openLedger(opts.IO.ErrOut), nil
}

func protectRun(opts *ProtectOptions) error {
	reports, ledger, err := opts.readClients()
	if err != nil {
		return err
	}
	if opts.Fix {
		return fixRun(opts, reports, ledger)
	}
	rep := buildReport(opts, reports, ledger)
	if opts.Inspect {
		if err := inspectAll(opts, reports, &rep); err != nil {
			return err
		}
	}
	if opts.JSON {
		return writeJSON(opts.IO.Out, rep)
	}
	printReport(opts, rep)
	return nil
}

func buildReport(opts *ProtectOptions, reports []*fileReport, ledger *clients.Ledger) reportJSON {
	rep := reportJSON{Files: []fileJSON{}}
	for _, r := range reports {
		fj := fileJSON{Client: r.File.Client.ID, Name: r.File.Client.Name, Scope: r.File.Scope, Path: r.File.Path, Format: r.File.Client.Format.String(), Servers: []serverJSON{}}
		if r.Err != nil {
			fj.Error = r.Err.Error()
		}
		fj.Warning = r.Warning
		for _, s := range r.Servers {
			sj := describe(opts, r, s, ledger)
			fj.Servers = append(fj.Servers, sj)
			rep.Summary.Servers++
			switch sj.Status {
			case statusCaged:
				rep.Summary.Caged++
			case statusRemote:
				rep.Summary.Remote++
			default:
				rep.Summary.Uncaged++
			}
			if sj.Cageable {
				rep.Summary.Cageable++
			}
			rep.Summary.Secrets += len(sj.Secrets)
		}
		rep.Files = append(rep.Files, fj)
	}
	rep.Summary.Files = len(rep.Files)
	return rep
}

// tilde shortens a path under the home directory for display.
func tilde(l clients.Layout, p string) string {
	if l.Home != "" {
		if rel, err := filepath.Rel(l.Home, p); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.Join("~", rel)
		}
	}
	return p
}

func quoteArgs(argv []string) string {
	var parts []string
	for _, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`!*?[]{}()<>|&;#~") {
			b, _ := json.Marshal(a)
			parts = append(parts, string(b))
		} else {
			parts = append(parts, a)
		}
	}
	return strings.Join(parts, " ")
}

func printReport(opts *ProtectOptions, rep reportJSON) {
	w := opts.IO.Out
	if len(rep.Files) == 0 {
		fmt.Fprintln(w, "No MCP client configuration found.")
		ids := clients.IDs()
		if len(opts.Clients) > 0 {
			ids = opts.Clients
		}
		untrusted.Fprintf(w, "Looked for: %s.\n", strings.Join(ids, ", "))
		return
	}
	for i, f := range rep.Files {
		if i > 0 {
			fmt.Fprintln(w)
		}
		untrusted.Fprintf(w, "%s (%s)  %s\n", f.Name, f.Scope, tilde(opts.Layout, f.Path))
		if f.Error != "" {
			untrusted.Fprintf(w, "  cannot read it: %s\n", f.Error)
			continue
		}
		if f.Warning != "" {
			untrusted.Fprintf(w, "  note: %s\n", f.Warning)
		}
		if len(f.Servers) == 0 {
			fmt.Fprintln(w, "  no MCP servers")
		}
		statusW, nameW := 0, 0
		for _, s := range f.Servers {
			statusW = max(statusW, len(s.Status))
			nameW = max(nameW, utf8.RuneCountInString(displayName(s)))
		}
		for _, s := range f.Servers {
			dis := ""
			if s.Disabled {
				dis = " (disabled)"
			}
			name := displayName(s)
			untrusted.Fprintf(w, "  %s  %s  %s%s\n", padRight(strings.ToUpper(s.Status[:1])+s.Status[1:], statusW), padRight(name, nameW), s.Kind, dis)
			switch {
			case s.URL != "":
				untrusted.Fprintf(w, "      url: %s\n", s.URL)
			case len(s.Command) > 0:
				untrusted.Fprintf(w, "      runs: %s\n", quoteArgs(s.Command))
			}
			untrusted.Fprintf(w, "      reaches: %s\n", reachText(s))
			for _, sec := range s.Secrets {
				untrusted.Fprintf(w, "      ! secret in clear text: %s (%s %s)\n", sec.Where, sec.Kind, sec.Redacted)
			}
			if s.Hint != "" && s.Status != statusCaged && s.Status != statusRemote {
				untrusted.Fprintf(w, "      hint: %s\n", s.Hint)
			}
			for _, wn := range s.Warnings {
				untrusted.Fprintf(w, "      note: %s\n", wn)
			}
			if s.Inspect != nil {
				printInspect(w, s.Inspect)
			}
		}
	}
	sm := rep.Summary
	fmt.Fprintln(w)
	untrusted.Fprintf(w, "%s in %s: %d caged, %d uncaged, %d remote.", countOf(sm.Servers, "server"), countOf(sm.Files, "file"), sm.Caged, sm.Uncaged, sm.Remote)
	if sm.Secrets > 0 {
		untrusted.Fprintf(w, " %s written in clear text.", countOf(sm.Secrets, "secret"))
	}
	fmt.Fprintln(w)
	if sm.Cageable > 0 {
		untrusted.Fprintf(w, "%d can be caged: run `mcpcage protect --fix`.\n", sm.Cageable)
	}
}

func displayName(s serverJSON) string {
	if s.Scope != "" {
		return s.Name + "  [" + s.Scope + "]"
	}
	return s.Name
}

func padRight(s string, w int) string {
	if n := utf8.RuneCountInString(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}

func countOf(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func reachText(s serverJSON) string {
	var parts []string
	switch {
	case s.Kind == clients.KindRemote && !s.Caged:
		parts = append(parts, "runs elsewhere; receives what the assistant sends it")
	case s.Reach.Remote != "":
		parts = append(parts, "runs elsewhere, at "+s.Reach.Remote+", through mcpcage's guard")
	default:
		if s.Reach.Home {
			parts = append(parts, "your whole home directory")
		}
		if s.Reach.Network {
			parts = append(parts, "the network")
		} else if len(s.Reach.Hosts) > 0 {
			parts = append(parts, "the network to "+strings.Join(s.Reach.Hosts, ", ")+" only")
		} else {
			parts = append(parts, "no network")
		}
		if s.Caged && len(s.Reach.Mounts) > 0 {
			parts = append(parts, "folders "+strings.Join(s.Reach.Mounts, ", "))
		} else if s.Kind == clients.KindImage && len(s.Reach.Mounts) > 0 {
			parts = append(parts, "volumes "+strings.Join(s.Reach.Mounts, ", "))
		}
	}
	if len(s.Reach.Env) > 0 {
		parts = append(parts, "env "+strings.Join(s.Reach.Env, ", "))
	}
	if s.Reach.Refused != "" {
		parts = append(parts, s.Reach.Refused)
	}
	return strings.Join(parts, "; ")
}

// planFile is one file an edit changes.
type planFile struct {
	report  *fileReport
	after   []byte
	changes []clients.Change
}

// planEdit plans the edit of every file, each entry wrapped as wrap says;
// only, when not nil, limits the edit to the entries of a file it accepts.
func planEdit(reports []*fileReport, op clients.Op, wrap func(*fileReport) clients.Wrap, only func(path string, s clients.Server) bool, errOut *fileErrors) []*planFile {
	var out []*planFile
	for _, r := range reports {
		if r.Err != nil {
			errOut.add(r.File.Path, r.Err)
			continue
		}
		var keep func(clients.Server) bool
		if only != nil {
			path := r.File.Path
			keep = func(s clients.Server) bool { return only(path, s) }
		}
		after, changes, err := clients.EditWith(r.File.Client.Format, r.Data, r.File.Client.Tables, op, wrap(r), keep)
		if err != nil {
			errOut.add(r.File.Path, err)
			continue
		}
		if len(changes) > 0 {
			out = append(out, &planFile{report: r, after: after, changes: changes})
		}
	}
	return out
}

type fileErrors struct{ lines []string }

func (e *fileErrors) add(path string, err error) {
	e.lines = append(e.lines, fmt.Sprintf("%s: %v", path, err))
}

func printPlan(opts *ProtectOptions, plans []*planFile, verb string) {
	w := opts.IO.Out
	for _, p := range plans {
		untrusted.Fprintf(w, "%s (%s)  %s\n", p.report.File.Client.Name, p.report.File.Scope, tilde(opts.Layout, p.report.File.Path))
		for _, c := range p.changes {
			name := c.Before.Name
			if sc := c.Before.Scope(); sc != "" {
				name += "  [" + sc + "]"
			}
			untrusted.Fprintf(w, "  %s %s\n", verb, name)
			untrusted.Fprintf(w, "      before: %s\n", quoteArgs(append([]string{c.Before.Command}, secrets.RedactArgs(c.Before.Args)...)))
			untrusted.Fprintf(w, "      after:  %s\n", quoteArgs(append([]string{c.After.Command}, secrets.RedactArgs(c.After.Args)...)))
			for _, wn := range warningsFor(verb, c.Before) {
				untrusted.Fprintf(w, "      note: %s\n", wn)
			}
			if verb == "cage" {
				for _, n := range cageNotes(opts, p.report, c) {
					untrusted.Fprintf(w, "      %s\n", n)
				}
			}
		}
	}
}

func warningsFor(verb string, s clients.Server) []string {
	if verb != "cage" {
		return nil
	}
	return s.Warnings()
}

// confirm asks on a terminal; without one it refuses unless --yes was given.
func confirm(opts *ProtectOptions, yes bool, question, yesFlagCmd string) error {
	if yes {
		return nil
	}
	if !opts.IO.InTTY {
		return &ExitError{Code: 2, Err: withHint(errors.New("not changing any file without confirmation, and there is no terminal to ask on"), "run `%s` to confirm from a script", yesFlagCmd)}
	}
	untrusted.Fprintf(opts.IO.ErrOut, "%s [y/N] ", question)
	line, _ := bufio.NewReader(opts.IO.In).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return &ExitError{Code: 1, Err: errors.New("cancelled: nothing was written")}
}

// offerLogins names, for each remote server just caged, the login that
// gives its sessions a token ahead of time (a server that signs in with
// OAuth would otherwise ask at its first start, within the client's wait).
func offerLogins(opts *ProtectOptions, plans []*planFile) {
	first := true
	for _, p := range plans {
		for _, c := range p.changes {
			if c.Original == "" || slices.ContainsFunc(c.After.Args, func(a string) bool { return strings.HasPrefix(a, "Authorization:") }) {
				continue
			}
			if first {
				fmt.Fprintln(opts.IO.Out, "Remote servers that sign in with OAuth: log in once before their first session:")
				first = false
			}
			name := clients.CageName(c.Before.Name)
			if name == "" {
				name = c.Before.URL
			}
			untrusted.Fprintf(opts.IO.Out, "  mcpcage login %s\n", name)
		}
	}
}

// apply writes every planned file and records the result in the ledger.
func apply(opts *ProtectOptions, plans []*planFile, ledger *clients.Ledger, caged bool) (written, entries int, failed []string) {
	for _, p := range plans {
		path := p.report.File.Path
		var hook func()
		if opts.BeforeRename != nil {
			hook = func() { opts.BeforeRename(path) }
		}
		backup, err := clients.Write(path, p.report.Data, p.after, opts.Now(), hook)
		if err != nil {
			if errors.Is(err, clients.ErrChanged) {
				failed = append(failed, fmt.Sprintf("%s changed after it was read (a client may have rewritten it); nothing was written to it", path))
			} else {
				failed = append(failed, fmt.Sprintf("cannot write %s: %v", path, err))
			}
			continue
		}
		written++
		entries += len(p.changes)
		untrusted.Fprintf(opts.IO.Out, "wrote %s (backup: %s)\n", tilde(opts.Layout, path), filepath.Base(backup))
		if ledger != nil {
			for _, c := range p.changes {
				switch {
				case caged && c.Original != "":
					// A remote entry: what --fix wrote, and what it replaced.
					ledger.RecordRemote(path, c.Before.Where, c.After.Args, c.Original)
				case caged:
					ledger.Record(path, c.Before.Where, append([]string{c.Before.Command}, c.Before.Args...))
				default:
					ledger.Set(path, c.Before.Where, false)
				}
			}
		}
	}
	if ledger != nil && written > 0 {
		if err := ledger.Save(); err != nil {
			untrusted.Fprintf(opts.IO.ErrOut, "mcpcage: warning: cannot record the caged entries: %v\n", err)
		}
	}
	return written, entries, failed
}

// transientExe says why exe is a poor path to write into client configs (a
// temporary folder, a build folder), or "".
func transientExe(exe string) string {
	slash := filepath.ToSlash(exe)
	if strings.Contains(slash, "/go-build") {
		return "a temporary build (go run)"
	}
	for _, d := range []string{os.TempDir(), "/tmp", "/var/tmp"} {
		if d = filepath.Clean(d); d != "" && strings.HasPrefix(exe, d+string(filepath.Separator)) {
			return "in a temporary folder (" + d + ")"
		}
	}
	// A checkout's bin/ or dist/: a go.mod beside the folder the binary is in.
	dir := filepath.Dir(exe)
	if base := filepath.Base(dir); base == "bin" || base == "dist" || base == "build" {
		if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "go.mod")); err == nil {
			return "in a source checkout's build folder (" + dir + ")"
		}
	}
	return ""
}

func fixRun(opts *ProtectOptions, reports []*fileReport, ledger *clients.Ledger) error {
	if opts.Exe == "" || !filepath.IsAbs(opts.Exe) {
		return errors.New("cannot find the absolute path of the mcpcage program")
	}
	// `go run` builds into a temporary directory that is gone afterwards,
	// and a checkout's bin/ changes at the next build: clients would be left
	// pointing at nothing, or at whatever was built last.
	if why := transientExe(opts.Exe); why != "" && !opts.AllowTempExe && os.Getenv("MCPCAGE_ALLOW_TEMP_EXE") != "1" {
		return &ExitError{Code: exitUsage, Err: withHint(fmt.Errorf("this mcpcage (%s) is %s: every client config would point at it", opts.Exe, why),
			"install mcpcage (npm install -g mcpcage, or make install) and run the installed one's protect --fix; --allow-temp-exe writes this path anyway")}
	}
	var errs fileErrors
	wrap := fixWrap(opts)
	plans := planEdit(reports, clients.OpFix, wrap, nil, &errs)
	w := opts.IO.Out
	for _, l := range errs.lines {
		untrusted.Fprintf(opts.IO.ErrOut, "mcpcage: warning: left as it is: %s\n", l)
	}
	// What stays uncaged, and why, so nobody believes everything is caged.
	left := 0
	for _, r := range reports {
		for _, s := range r.Servers {
			if ok, why := s.Cageable(); !ok && !s.Caged() {
				if left == 0 {
					fmt.Fprintln(w, "Left as they are:")
				}
				left++
				untrusted.Fprintf(w, "  %s  %s (%s): %s\n", tilde(opts.Layout, r.File.Path), s.Name, s.Kind(), why)
			}
		}
	}
	if left > 0 {
		fmt.Fprintln(w)
	}
	if len(plans) == 0 {
		fmt.Fprintln(w, "Nothing to cage: no uncaged server started with npx, uvx or a compiled program.")
		if len(errs.lines) > 0 {
			return &ExitError{Code: 1}
		}
		return nil
	}
	printPlan(opts, plans, "cage")
	n, networked := 0, networkedIn(plans)
	for _, p := range plans {
		n += len(p.changes)
	}
	what := fmt.Sprintf("cage %s in %s", countOf(n, "server"), countOf(len(plans), "file"))
	if networked > 0 {
		// The network a server gets is asked for, never granted unsaid.
		what += fmt.Sprintf(", %d of them with the hosts its plan names", networked)
	}
	question := "C" + what[1:] + "?"
	if !opts.NoInstall {
		question = "Install their packages and " + what + "?"
	}
	if err := confirm(opts, opts.Yes, question, "mcpcage protect --fix --yes"); err != nil {
		return err
	}
	installed := ""
	if !opts.NoInstall {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		start := time.Now()
		failures, count, err := installPlanned(ctx, opts, plans)
		if err != nil {
			return err
		}
		installed = fmt.Sprintf(" Installed %s in %s beforehand: the first start is as quick as the next ones.", countOf(count, "package"), roundDuration(time.Since(start)))
		if len(failures) > 0 {
			fmt.Fprintln(w, "Left uncaged, their packages could not be installed:")
			for _, f := range failures {
				untrusted.Fprintf(w, "  %s  %s: %s\n", tilde(opts.Layout, f.file), f.server.Name, f.reason)
			}
			bad := map[string]bool{}
			for _, f := range failures {
				bad[entryKey(f.file, f.server)] = true
			}
			plans = planEdit(reports, clients.OpFix, wrap, func(path string, s clients.Server) bool {
				return !bad[entryKey(path, s)]
			}, &fileErrors{})
			if len(plans) == 0 {
				return withHint(errors.New("no server was caged: none of their packages could be installed"), "check the names and the registry, then run `mcpcage protect --fix` again")
			}
		}
	} else {
		installed = " Nothing was installed (--no-install): each first start installs its package, which can take longer than a client waits."
	}
	written, entries, failed := apply(opts, plans, ledger, true)
	if written > 0 {
		untrusted.Fprintf(w, "Caged %s in %s.%s Restart the clients to start them caged; `mcpcage unwrap` restores them.\n", countOf(entries, "server"), countOf(written, "file"), installed)
		offerLogins(opts, plans)
	}
	if len(failed) > 0 {
		for _, f := range failed[:len(failed)-1] {
			untrusted.Fprintf(opts.IO.ErrOut, "mcpcage: error: %s\n", f)
		}
		return withHint(errors.New(failed[len(failed)-1]), "run `mcpcage protect --fix` again")
	}
	return nil
}
