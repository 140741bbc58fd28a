package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/cobra"

	"github.com/mcpcage/mcpcage/internal/guard"
	"github.com/mcpcage/mcpcage/internal/home"
	"github.com/mcpcage/mcpcage/internal/launch"
	"github.com/mcpcage/mcpcage/internal/pin"
	"github.com/mcpcage/mcpcage/internal/scan"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// pinScanner is the scanner as diff and approve use it; pin_scan.go sets it.

// DiffOptions are the inputs of `mcpcage diff`.
type DiffOptions struct {
	IO   *IOStreams
	Name string
	JSON bool
}

func newDiffCmd(io *IOStreams) *cobra.Command {
	opts := &DiffOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "diff NAME",
		Short: "Show what changed in a server's tools since they were approved",
		Long: `Show every tool, prompt, resource, resource template and instruction of
the server NAME that was added, removed or changed since it was approved,
field by field, with invisible characters made visible and the signs of
hidden instructions found in each change.

Exit status: 0 when nothing is pending, 1 when changes wait for
` + "`mcpcage approve NAME`" + `, 2 on error (e.g. no pins for NAME).`,
		Example: `  mcpcage diff demo-notes
  mcpcage diff demo-notes --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return diffRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the changes as JSON")
	return cmd
}

// loadPins reads the pins of name, with the errors a person can act on.
func loadPins(name string) (*pin.File, pin.Store, error) {
	dir, err := home.Dir()
	if err != nil {
		return nil, pin.Store{}, err
	}
	st := guard.PinStore(dir)
	f, err := st.Load(name)
	if errors.Is(err, pin.ErrNoPins) {
		return nil, st, withHint(fmt.Errorf("no pins for %q", name),
			"pins are recorded the first time a session of the server lists its tools; `mcpcage pins list` shows the known servers")
	}
	if err != nil {
		return nil, st, withHint(fmt.Errorf("cannot read the pins of %q: %v", name, err),
			"if the file was damaged, `mcpcage pins forget %s` starts over (the next session trusts what it sees first)", name)
	}
	return f, st, nil
}

func diffRun(opts *DiffOptions) error {
	f, _, err := loadPins(opts.Name)
	if err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	changes, err := pin.Changes(f)
	if err != nil {
		return &ExitError{Code: 2, Err: fmt.Errorf("cannot compare the pins of %q: %v", opts.Name, err)}
	}
	if opts.JSON {
		if err := diffJSON(opts.IO.Out, f, changes, cagedTools()); err != nil {
			return &ExitError{Code: 2, Err: err}
		}
	} else {
		diffText(opts.IO.Out, opts.IO.Color(), f, changes, cagedTools())
	}
	if f.Pending != nil {
		return &ExitError{Code: 1}
	}
	return nil
}

type palette struct{ on bool }

func (p palette) wrap(code, s string) string {
	if !p.on {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}
func (p palette) red(s string) string   { return p.wrap("31", s) }
func (p palette) green(s string) string { return p.wrap("32", s) }
func (p palette) bold(s string) string  { return p.wrap("1", s) }
func (p palette) dim(s string) string   { return p.wrap("2", s) }

func itemLabel(c pin.Change) string {
	if c.Kind == pin.Instructions {
		return "instructions"
	}
	return fmt.Sprintf("%s %q", c.Kind.Noun(), untrusted.Line(c.Key))
}

func diffText(w io.Writer, color bool, f *pin.File, changes []pin.Change, others otherTools) {
	p := palette{on: color}
	if f.Pending == nil {
		fmt.Fprintf(w, "No changes pending for %q: what it shows matches what was approved.\n", untrusted.Line(f.Server))
		return
	}
	first := f.Approved == nil
	for _, c := range changes {
		switch c.Op {
		case pin.Changed:
			fmt.Fprintln(w, p.bold("~ "+itemLabel(c)+" changed since it was approved"))
			for _, field := range c.Fields {
				old, cur := c.FieldValues(field)
				name := field
				if name == "" {
					name = "text"
				}
				switch {
				case old == nil:
					fmt.Fprintf(w, "    %s (added)\n", untrusted.Line(name))
				case cur == nil:
					fmt.Fprintf(w, "    %s (removed)\n", untrusted.Line(name))
				default:
					fmt.Fprintf(w, "    %s\n", untrusted.Line(name))
				}
				var a, b string
				if old != nil {
					a = pin.FieldText(old) + "\n"
				}
				if cur != nil {
					b = pin.FieldText(cur) + "\n"
				}
				for _, l := range pin.Unified(a, b, 3) {
					switch l.Op {
					case '-':
						fmt.Fprintln(w, p.red("      - "+l.Text))
					case '+':
						fmt.Fprintln(w, p.green("      + "+l.Text))
					case '@':
						fmt.Fprintln(w, p.dim("        "+l.Text))
					default:
						fmt.Fprintln(w, "        "+l.Text)
					}
				}
			}
		case pin.Added:
			verb := "added since the last approval"
			if first || !f.Approved.Has(c.Kind) {
				verb = "not approved yet"
			}
			fmt.Fprintln(w, p.bold("+ "+itemLabel(c)+" "+verb))
			for _, l := range strings.Split(pin.FieldText(c.New), "\n") {
				fmt.Fprintln(w, p.green("      + "+l))
			}
		case pin.Removed:
			fmt.Fprintln(w, p.bold("- "+itemLabel(c)+" removed since it was approved"))
		}
		if c.New != nil {
			fs := scanItem(c, f, others)
			if len(fs) > 0 {
				var buf bytes.Buffer
				_ = scan.Format(&buf, "    ", fs)
				out := buf.String()
				if color {
					out = strings.ReplaceAll(out, "! HIGH", p.red("! HIGH"))
				}
				io.WriteString(w, out)
				if s := scan.Summary(c.Key, fs); s != "" {
					fmt.Fprintf(w, "    %s\n", s)
				}
			}
		}
	}
	if f.Approved != nil {
		for _, l := range launchChanges(f.Approved.Launch, f.Pending.Launch) {
			fmt.Fprintln(w, "! launch changed: "+l)
		}
	}
	for _, l := range contextLines(f) {
		fmt.Fprintln(w, l)
	}
	hash, _ := pin.PendingHash(f)
	fmt.Fprintf(w, "\nPending for %q: %s (pending set %s).\n", untrusted.Line(f.Server), countChanges(changes), hash)
	fmt.Fprintf(w, "If you trust what you see: mcpcage approve %s --hash %s\n", untrusted.Line(f.Server), hash)
}

// contextLines say which client capabilities the pending list was seen with
// and which were approved: servers offer some tools only to clients that
// can sample, elicit or give roots (docs/pin.md).
func contextLines(f *pin.File) []string {
	if f.Pending == nil || f.Pending.SeenWith == nil {
		return nil
	}
	var approved []string
	if f.Approved != nil {
		// One client context, and the pending list seen in it: nothing
		// to tell apart.
		if _, ok := f.Approved.Contexts[*f.Pending.SeenWith]; ok && len(f.Approved.Contexts) == 1 {
			return nil
		}
		for c := range f.Approved.Contexts {
			approved = append(approved, untrusted.Line(c))
		}
	}
	sort.Strings(approved)
	if len(approved) == 0 {
		approved = []string{"none recorded"}
	}
	return []string{
		"seen with a client offering: " + untrusted.Line(*f.Pending.SeenWith),
		"approved with clients offering: " + strings.Join(approved, "; "),
	}
}

func countChanges(changes []pin.Change) string {
	var n [4]int
	for _, c := range changes {
		n[c.Op]++
	}
	return fmt.Sprintf("%d changed, %d added, %d removed", n[pin.Changed], n[pin.Added], n[pin.Removed])
}

// launchChanges describes how the launch differs, one line per field.
func launchChanges(a, b launch.Launch) []string {
	var out []string
	add := func(field, x, y string) {
		if x != y {
			out = append(out, fmt.Sprintf("%s %q -> %q", field, untrusted.Line(x), untrusted.Line(y)))
		}
	}
	add("kind", a.Kind, b.Kind)
	add("package", a.Package, b.Package)
	add("version", a.Version, b.Version)
	add("image", a.Image, b.Image)
	add("image digest", a.ImageDigest, b.ImageDigest)
	add("argv", strings.Join(a.Argv, " "), strings.Join(b.Argv, " "))
	return out
}

type diffJSONFinding struct {
	Severity     string `json:"severity"`
	scan.Finding `json:",inline"`
}

type diffJSONChange struct {
	Kind     pin.Kind          `json:"kind"`
	Name     string            `json:"name"`
	Op       string            `json:"op"`
	Fields   []string          `json:"fields,omitempty"`
	Old      jsontext.Value    `json:"old,omitempty"`
	New      jsontext.Value    `json:"new,omitempty"`
	Findings []diffJSONFinding `json:"findings,omitempty"`
}

type diffJSONOut struct {
	Server   string              `json:"server"`
	Pending  bool                `json:"pending"`
	Hash     string              `json:"hash,omitempty"`
	Launch   []string            `json:"launch_changes,omitempty"`
	Changes  []diffJSONChange    `json:"changes"`
	Approved *time.Time          `json:"approved_at,omitempty"`
	SeenWith string              `json:"seen_with,omitempty"` // the capabilities of the client the pending list was seen with
	Contexts map[string][]string `json:"contexts,omitempty"`  // tool names approved per client context
}

func diffJSON(w io.Writer, f *pin.File, changes []pin.Change, others otherTools) error {
	out := diffJSONOut{Server: f.Server, Pending: f.Pending != nil, Changes: []diffJSONChange{}}
	if f.Pending != nil {
		out.Hash, _ = pin.PendingHash(f)
		if f.Approved != nil {
			out.Launch = launchChanges(f.Approved.Launch, f.Pending.Launch)
		}
	}
	if f.Approved != nil {
		t := f.Approved.Time
		out.Approved = &t
		out.Contexts = f.Approved.Contexts
	}
	if f.Pending != nil && f.Pending.SeenWith != nil {
		out.SeenWith = *f.Pending.SeenWith
	}
	for _, c := range changes {
		jc := diffJSONChange{Kind: c.Kind, Name: c.Key, Op: c.Op.String(), Fields: c.Fields, Old: c.Old, New: c.New}
		if len(jc.Fields) == 1 && jc.Fields[0] == "" {
			jc.Fields = nil // instructions: one text, no members
		}
		if c.New != nil {
			for _, fd := range scanItem(c, f, others) {
				jc.Findings = append(jc.Findings, diffJSONFinding{Severity: fd.Severity.String(), Finding: fd})
			}
		}
		out.Changes = append(out.Changes, jc)
	}
	b, err := json.Marshal(out, jsontext.WithIndent("  "), json.Deterministic(true))
	if err != nil {
		return err
	}
	return printJSON(w, b)
}
