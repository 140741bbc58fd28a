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
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpcage/mcpcage/internal/audit"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

func newAuditCmd(io *IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Check and read the chained audit log",
		Long: `The audit log records every session, pin, drift, approval and tool call
(tool name and a keyed fingerprint of the arguments, never their values).
Each record holds the hash of the one before it and a MAC; a signed
checkpoint guards the end. See docs/audit.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newAuditVerifyCmd(io, nil), newAuditShowCmd(io, nil), newAuditTailCmd(io, nil))
	return cmd
}

// auditPaths resolves the user's log and key directories.
func auditPaths() (audit.Options, error) {
	return audit.DefaultOptions()
}

// AuditVerifyOptions are the inputs of `mcpcage audit verify`.
type AuditVerifyOptions struct {
	IO     *IOStreams
	Dir    string
	KeyDir string
	Anchor string
	JSON   bool
}

func newAuditVerifyCmd(io *IOStreams, runF func(*AuditVerifyOptions) error) *cobra.Command {
	opts := &AuditVerifyOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "verify [--json] [--anchor FILE]",
		Short: "Recompute every hash and MAC and check the signed checkpoint",
		Long: `Verify recomputes the hash and MAC of every record, checks the sequence,
the signed checkpoint and, when one is set, the anchor, and names the first
bad record: file, line and what is wrong (modified, deleted, inserted,
reordered, truncated, rewritten, forked, rolled back). A torn last line left
by a crash is reported as such, not as tampering.

Exit status: 0 when the log is intact, 1 when it is not (or cannot be checked).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := auditPaths()
			if err != nil {
				return err
			}
			opts.Dir, opts.KeyDir = o.Dir, o.KeyDir
			if !cmd.Flags().Changed("anchor") {
				opts.Anchor = o.Anchor
			}
			if runF != nil {
				return runF(opts)
			}
			return auditVerifyRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the report as JSON")
	cmd.Flags().StringVar(&opts.Anchor, "anchor", "", "also check the log against the checkpoint in this `file` (default $"+audit.EnvAnchor+")")
	return cmd
}

func auditVerifyRun(opts *AuditVerifyOptions) error {
	out := opts.IO.Out
	files, err := audit.Files(opts.Dir)
	if err != nil {
		return err
	}
	_, keyErr := audit.LoadKeys(opts.KeyDir)
	_, cpErr := os.Stat(opts.Dir + "/" + audit.CheckpointName)
	if errors.Is(keyErr, audit.ErrNoKey) {
		if _, err := os.Stat(opts.Anchor); opts.Anchor != "" && err == nil {
			return &ExitError{Code: 1, Err: withHint(fmt.Errorf("rolled back: the audit key is gone but the anchor %s holds a checkpoint: the log was deleted", opts.Anchor),
				"if you reset the audit log on purpose, move the old anchor away")}
		}
		if len(files) == 0 && cpErr != nil {
			if opts.JSON {
				return writeJSON(out, &audit.Report{OK: true, Files: []string{}})
			}
			untrusted.Fprintf(out, "the audit log is empty: no records in %s yet\n", opts.Dir)
			return nil
		}
		return &ExitError{Code: 1, Err: withHint(fmt.Errorf("%v: the audit log in %s cannot be verified", keyErr, opts.Dir),
			"the key is made with the log and never leaves %s; without it no record can be checked", opts.KeyDir)}
	}
	r, err := audit.Verify(audit.VerifyOptions{Dir: opts.Dir, KeyDir: opts.KeyDir, Anchor: opts.Anchor})
	if err != nil {
		return &ExitError{Code: 1, Err: err}
	}
	// Calls whose outcome is not in the log: not a fault of the log (a
	// crash can lose a plain outcome, docs/audit.md), but a record that
	// says less than the others.
	missing := 0
	if r.OK {
		if _, missing, err = callOutcomes(opts.Dir); err != nil {
			return &ExitError{Code: 1, Err: err}
		}
	}
	if opts.JSON {
		if err := writeJSON(out, struct {
			*audit.Report
			CallsWithoutOutcome int `json:"calls_without_outcome"`
		}{r, missing}); err != nil {
			return err
		}
	} else {
		printVerifyReport(opts.IO, r)
		if missing > 0 {
			fmt.Fprintf(out, "  %s with no outcome record (a crash lost it, or the call still runs): audit show marks them\n",
				plural(uint64(missing), "call", "calls"))
		}
	}
	if !r.OK {
		return &ExitError{Code: 1}
	}
	return nil
}

// writeJSON prints v as indented JSON (printJSON).
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	return printJSON(w, bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// printJSON prints the JSON text b and a newline for --json: every --json
// output passes here, so the control and format runes a server's strings
// carry reach the terminal as \uXXXX escapes (untrusted.JSON), never raw.
func printJSON(w io.Writer, b []byte) error {
	_, err := w.Write(append(untrusted.JSON(b), '\n'))
	return err
}

func plural(n uint64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func printVerifyReport(io *IOStreams, r *audit.Report) {
	out := io.Out
	if !r.OK {
		fmt.Fprintln(out, "audit log NOT intact")
		p := r.Problem
		where := p.File
		if p.Line > 0 {
			where = fmt.Sprintf("%s line %d", p.File, p.Line)
		}
		if where != "" {
			untrusted.Fprintf(out, "  first bad record: %s\n", where)
		}
		untrusted.Fprintf(out, "  %s: %s\n", p.Kind, p.Message)
		return
	}
	if r.Records == 0 {
		fmt.Fprintln(out, "audit log intact: no records yet")
	} else {
		untrusted.Fprintf(out, "audit log intact: %s in %s, head %s\n", plural(r.Records, "record", "records"),
			plural(uint64(len(r.Files)), "file", "files"), r.Head[:16])
	}
	if c := r.Checkpoint; c != nil {
		untrusted.Fprintf(out, "  checkpoint: %s, signed %s\n", plural(c.Records, "record", "records"), c.Time.UTC().Format(time.RFC3339))
	}
	if c := r.Anchor; c != nil {
		untrusted.Fprintf(out, "  anchor %s: %s, signed %s\n", r.AnchorPath, plural(c.Records, "record", "records"), c.Time.UTC().Format(time.RFC3339))
	} else {
		untrusted.Fprintf(out, "  no anchor set: a rollback of both the log and its checkpoint to an older copy cannot be seen (see --anchor)\n")
	}
	if r.Unanchored > 0 {
		untrusted.Fprintf(out, "  %s after the checkpoint (a session still running, or one that crashed): a cut there would not be seen\n",
			plural(r.Unanchored, "record", "records"))
	}
	for _, rc := range r.Recoveries {
		untrusted.Fprintf(out, "  recovery: record %d (%s line %d) cut a torn write of %d bytes left by a crash\n", rc.Seq, rc.File, rc.Line, rc.TornBytes)
	}
	if t := r.Torn; t != nil {
		untrusted.Fprintf(out, "  torn: %s line %d is an incomplete write of %d bytes (a crash while writing, not tampering); the next record written cuts it and records a recovery\n",
			t.File, t.Line, t.Bytes)
	}
}

// AuditShowOptions are the inputs of `mcpcage audit show`.
type AuditShowOptions struct {
	IO     *IOStreams
	Dir    string
	Server string
	Since  time.Time
	Kind   string
	JSON   bool
}

func newAuditShowCmd(io *IOStreams, runF func(*AuditShowOptions) error) *cobra.Command {
	opts := &AuditShowOptions{IO: io}
	var since string
	cmd := &cobra.Command{
		Use:   "show [--server NAME] [--since TIME] [--kind KIND] [--json]",
		Short: "Print the records of the audit log",
		Long: `Show prints the audit log's records, oldest first. It does not check them:
run mcpcage audit verify for that. With --json it prints the records' lines
(JSON Lines), with control and format characters as \u escapes: the same
JSON values, nothing a terminal acts on.

--since takes an RFC 3339 time (2026-01-02T15:04:05Z), a date (2026-01-02)
or a duration back from now (90m, 24h).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := auditPaths()
			if err != nil {
				return err
			}
			opts.Dir = o.Dir
			if since != "" {
				t, err := parseSince(since, time.Now())
				if err != nil {
					return &ExitError{Code: 2, Err: err}
				}
				opts.Since = t
			}
			if runF != nil {
				return runF(opts)
			}
			return auditShowRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Server, "server", "", "only records of the server `NAME`")
	cmd.Flags().StringVar(&since, "since", "", "only records from `TIME` on")
	cmd.Flags().StringVar(&opts.Kind, "kind", "", "only records of this `kind` (session_start, call_start, call, task_result, blocked, pin, drift, approve, secret_in_arguments, server_message, reports_held, refused, egress, egress_lost, egress_gateway_ended, session_end, recovery)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the record lines (JSON Lines; control and format characters as \\u escapes)")
	return cmd
}

func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q: want an RFC 3339 time, a date (2006-01-02) or a duration (24h)", s)
}

func auditShowRun(opts *AuditShowOptions) error {
	out := opts.IO.Out
	// A forwarded call's outcome is its call record, which follows its
	// call_start; a crash can lose a plain one (docs/audit.md).
	var outcomes map[string]bool
	if !opts.JSON {
		var err error
		if outcomes, _, err = callOutcomes(opts.Dir); err != nil {
			return err
		}
	}
	n := 0
	err := audit.Scan(opts.Dir, func(file string, line int, rec *audit.Record, err error) error {
		if err != nil {
			if !opts.JSON {
				untrusted.Fprintf(out, "%s line %d: not a record (run mcpcage audit verify)\n", file, line)
			}
			return nil
		}
		if !showMatch(opts, rec) {
			return nil
		}
		n++
		if opts.JSON {
			return printJSON(out, rec.Line)
		}
		text := formatRecord(rec)
		if k, ok := callKey(rec); ok && rec.Kind == "call_start" && !outcomes[k] {
			text += " (outcome not recorded)"
		}
		_, err = fmt.Fprintln(out, text)
		return err
	})
	if err != nil {
		return err
	}
	if n == 0 && !opts.JSON {
		fmt.Fprintln(opts.IO.ErrOut, "no matching records")
	}
	return nil
}

// callOutcomes reads the log for its calls: the calls with a call record
// (their outcome), and how many call_start records have none.
func callOutcomes(dir string) (outcomes map[string]bool, missing int, err error) {
	outcomes = map[string]bool{}
	started := map[string]bool{}
	err = audit.Scan(dir, func(file string, line int, rec *audit.Record, err error) error {
		if k, ok := callKey(rec); ok {
			if rec.Kind == "call" {
				outcomes[k] = true
			} else {
				started[k] = true
			}
		}
		return nil
	})
	for k := range started {
		if !outcomes[k] {
			missing++
		}
	}
	return outcomes, missing, err
}

// callKey names the call a call_start or call record is of: its session
// and its number there.
func callKey(rec *audit.Record) (string, bool) {
	if rec == nil || rec.Kind != "call" && rec.Kind != "call_start" {
		return "", false
	}
	var f struct {
		Session string `json:"session"`
		N       int    `json:"n"`
	}
	if json.Unmarshal(rec.Fields, &f) != nil || f.N == 0 {
		return "", false
	}
	return f.Session + "/" + strconv.Itoa(f.N), true
}

func showMatch(opts *AuditShowOptions, rec *audit.Record) bool {
	if !opts.Since.IsZero() && rec.Time.Before(opts.Since) {
		return false
	}
	if opts.Kind != "" && rec.Kind != opts.Kind {
		return false
	}
	if opts.Server != "" {
		var f struct {
			Server string `json:"server"`
		}
		_ = json.Unmarshal(rec.Fields, &f)
		if f.Server != opts.Server {
			return false
		}
	}
	return true
}

// formatRecord is the one-line human form of a record.
func formatRecord(rec *audit.Record) string {
	var f map[string]any
	d := json.NewDecoder(bytes.NewReader(rec.Fields))
	d.UseNumber()
	_ = d.Decode(&f)
	str := func(k string) string {
		if v, ok := f[k]; ok && v != nil {
			return fmt.Sprint(v)
		}
		return ""
	}
	short := func(k string) string {
		s := str(k)
		if len(s) > 12 {
			s = s[:12]
		}
		return s
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s #%-5d %-13s", rec.Time.UTC().Format(time.RFC3339), rec.Seq, rec.Kind)
	if s := str("server"); s != "" {
		fmt.Fprintf(&b, " %s", s)
	}
	switch rec.Kind {
	case "call":
		fmt.Fprintf(&b, " %s %s", str("tool"), str("outcome"))
		if c := str("code"); c != "" {
			fmt.Fprintf(&b, " %s", c)
		}
		if n, ok := f["dur_us"].(json.Number); ok {
			us, _ := n.Int64()
			fmt.Fprintf(&b, " %s", (time.Duration(us) * time.Microsecond).Round(time.Microsecond*100))
		}
		fmt.Fprintf(&b, " args=%s", short("args"))
		if s := short("def"); s != "" {
			fmt.Fprintf(&b, " def=%s", s)
		}
		if s := str("findings"); s != "" {
			fmt.Fprintf(&b, " findings=%s", s)
		}
		if s := str("by"); s == "mcpcage" {
			b.WriteString(" (answered by mcpcage)")
		}
	case "call_start":
		fmt.Fprintf(&b, " %s args=%s", str("tool"), short("args"))
		if s := short("def"); s != "" {
			fmt.Fprintf(&b, " def=%s", s)
		}
	case "session_start":
		if l, ok := f["launch"].(map[string]any); ok {
			what := fmt.Sprint(l["kind"])
			if p, ok := l["package"]; ok {
				what += " " + fmt.Sprint(p)
				if v, ok := l["version"]; ok {
					what += "@" + fmt.Sprint(v)
				}
			}
			if img, ok := l["image_digest"]; ok {
				what += " image " + fmt.Sprint(img)
			}
			fmt.Fprintf(&b, " %s", what)
		}
		fmt.Fprintf(&b, " protocol=%s mcpcage=%s", str("protocol"), str("mcpcage"))
	case "session_end":
		fmt.Fprintf(&b, " exit=%s calls=%s", str("exit"), str("calls"))
	case "egress":
		fmt.Fprintf(&b, " %s:%s %s via=%s sent=%s received=%s %sms", str("host"), str("port"), str("verdict"), str("via"), str("sent"), str("received"), str("ms"))
		if s := str("phase"); s != "" {
			fmt.Fprintf(&b, " phase=%s", s)
		}
		if s := str("reason"); s != "" {
			fmt.Fprintf(&b, " (%s)", s)
		}
	case "recovery":
		fmt.Fprintf(&b, " cut a torn write of %s bytes at %s offset %s", str("torn_bytes"), str("file"), str("offset"))
	default:
		keys := make([]string, 0, len(f))
		for k := range f {
			if k != "server" && k != "session" {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			v, _ := json.Marshal(f[k])
			fmt.Fprintf(&b, " %s=%s", k, v)
		}
	}
	// One render of the whole line: whatever kind or field a record holds,
	// a forged record cannot add lines or steer the terminal.
	return untrusted.Line(b.String())
}

// AuditTailOptions are the inputs of `mcpcage audit tail`.
type AuditTailOptions struct {
	IO     *IOStreams
	Dir    string
	Lines  int
	Follow bool
	JSON   bool
	// Poll is how often -f looks for new records.
	Poll time.Duration
}

func newAuditTailCmd(io *IOStreams, runF func(context.Context, *AuditTailOptions) error) *cobra.Command {
	opts := &AuditTailOptions{IO: io, Poll: 200 * time.Millisecond}
	cmd := &cobra.Command{
		Use:   "tail [-n N] [-f] [--json]",
		Short: "Print the last records of the audit log, and with -f new ones as they come",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := auditPaths()
			if err != nil {
				return err
			}
			opts.Dir = o.Dir
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if runF != nil {
				return runF(ctx, opts)
			}
			return auditTailRun(ctx, opts)
		},
	}
	cmd.Flags().IntVarP(&opts.Lines, "lines", "n", 10, "how many of the last records to print first")
	cmd.Flags().BoolVarP(&opts.Follow, "follow", "f", false, "keep printing records as they are written, until interrupted")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the record lines (JSON Lines; control and format characters as \\u escapes)")
	return cmd
}

func auditTailRun(ctx context.Context, opts *AuditTailOptions) error {
	// Take the follow position first, so no record falls between the two.
	fol, err := audit.NewFollower(opts.Dir)
	if err != nil {
		return err
	}
	var last []*audit.Record
	if opts.Lines > 0 {
		err = fol.ScanBefore(func(file string, line int, rec *audit.Record, err error) error {
			if rec == nil {
				return nil
			}
			last = append(last, rec)
			if len(last) > opts.Lines {
				last = last[1:]
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	show := func(rec *audit.Record) {
		if opts.JSON {
			_ = printJSON(opts.IO.Out, rec.Line)
			return
		}
		fmt.Fprintln(opts.IO.Out, formatRecord(rec))
	}
	for _, rec := range last {
		show(rec)
	}
	if !opts.Follow {
		return nil
	}
	t := time.NewTicker(opts.Poll)
	defer t.Stop()
	for {
		lines, err := fol.Next()
		if err != nil {
			return err
		}
		for _, l := range lines {
			if rec, err := audit.ParseLine(l); err == nil {
				show(rec)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// auditEvent records a one-off event of a command that is not a session
// (an approval). A failure is a warning: the command's own work is done.
func auditEvent(io *IOStreams, kind string, fields map[string]any) {
	if err := audit.AppendDefault(kind, fields); err != nil {
		untrusted.Fprintf(io.ErrOut, "mcpcage: audit: warning: the %s was not recorded in the audit log: %v\n", kind, err)
	}
}
