package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/mcpcage/mcpcage/internal/progress"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// version is set at release time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// IOStreams is the one place commands read and write, so tests can use buffers.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// InTTY and OutTTY say whether stdin and stdout are terminals (prompts, colour).
	InTTY, OutTTY bool
	// ErrTTY says whether stderr is a terminal (progress and banners).
	ErrTTY bool
	// Progress is --progress (else $MCPCAGE_PROGRESS), read before any
	// command runs; "" is auto.
	Progress progress.Mode
}

// Reporter writes the progress of slow steps to stderr, in the mode asked.
func (s *IOStreams) Reporter() *progress.Reporter {
	return progress.New(s.ErrOut, s.Progress, s.ErrTTY)
}

// Color reports whether output may use ANSI colour: on a terminal, unless NO_COLOR is set.
func (s *IOStreams) Color() bool {
	return s.OutTTY && os.Getenv("NO_COLOR") == ""
}

func systemStreams() *IOStreams {
	return &IOStreams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		InTTY:  term.IsTerminal(int(os.Stdin.Fd())),
		OutTTY: term.IsTerminal(int(os.Stdout.Fd())),
		ErrTTY: term.IsTerminal(int(os.Stderr.Fd())),
	}
}

// Hooks change what the commands do at points only a test program reaches;
// the shipped program passes none.
type Hooks struct {
	// BeforeRename runs just before protect --fix or unwrap renames a
	// changed file into place (a client rewriting its config then).
	BeforeRename func(path string)
}

// newCommands builds the top-level commands, each fresh with its own
// options, so a root can be built twice in one process (tests do).
func newCommands(io *IOStreams, h Hooks) []*cobra.Command {
	return []*cobra.Command{
		newRunCmd(io), newLoginCmd(io), newProtectCmd(io, h), newUnwrapCmd(io, h), newPsCmd(io), newPinsCmd(io), newDiffCmd(io),
		newApproveCmd(io), newScanCmd(io), newAuditCmd(io), newImagesCmd(io), newEgressGatewayCmd(io), newEgressShimCmd(io), newStdioLaunchCmd(io),
	}
}

// ExitError ends the program with Code after printing Err (when not nil).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// HintError is an error with a second line that says what to do.
type HintError struct {
	Err error
	Fix string
}

func (e *HintError) Error() string { return e.Err.Error() }
func (e *HintError) Unwrap() error { return e.Err }

// Hint says what to do.
func (e *HintError) Hint() string { return e.Fix }

// withHint wraps err with a hint line printed after it.
func withHint(err error, format string, args ...any) error {
	return &HintError{Err: err, Fix: fmt.Sprintf(format, args...)}
}

// hinter is every error that says what to do about it: the command line's
// own (HintError) and those of the packages (launch.UsageError,
// cage.UpError, cage.AccessError, cage.DockerError, guard.SetupError,
// install.ForeignError). The hint is read once, where the error is printed.
type hinter interface{ Hint() string }

// hintOf is the first hint on err's chain that says something.
func hintOf(err error) string {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if h, ok := e.(hinter); ok && h.Hint() != "" {
			return h.Hint()
		}
	}
	return ""
}

func newRootCmd(io *IOStreams, h Hooks) *cobra.Command {
	var progressFlag string
	root := &cobra.Command{
		Use:   "mcpcage",
		Short: "Every MCP server in its own cage",
		Long: `mcpcage runs each MCP server in a Docker container with no network, a
read-only disk and no access to your home directory, pins its tools on first
use, points out signs of hidden instructions, and keeps a chained audit log.`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			v, from := progressFlag, "--progress"
			if !cmd.Flags().Changed("progress") {
				v, from = os.Getenv(progress.Env), progress.Env
			}
			m, err := progress.ParseMode(v)
			if err != nil {
				return refuseSession(io, cmd, fmt.Errorf("%s: %v", from, err))
			}
			io.Progress = m
			return nil
		},
	}
	root.PersistentFlags().StringVar(&progressFlag, "progress", "", "how much to say while installing or building: auto (plain on a terminal, else brief), plain (every phase, a line every 10 s), brief (start and end), quiet (default $"+progress.Env+", else auto)")
	// A flag cobra cannot parse is a refused command line (exit 2) like
	// any other.
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return refuseSession(io, cmd, err) })
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.ErrOut)
	root.AddCommand(newCommands(io, h)...)
	return root
}

// refuseSession makes err a refused command line (exit 2). For run, whose
// stdin is a client that has sent or will send initialize, it first answers
// the requests waiting there, so the client shows why instead of seeing its
// server's pipe close.
func refuseSession(io *IOStreams, cmd *cobra.Command, err error) error {
	if cmd.Name() == "run" && cmd.HasParent() && !cmd.Parent().HasParent() {
		answerWaitingClient(io, fmt.Sprintf("mcpcage could not start the server: %v", err))
	}
	return usageErr(err)
}

// Main runs the command line and returns the exit status.
func Main() int {
	return run(systemStreams(), os.Args[1:], Hooks{})
}

func run(io *IOStreams, args []string, h Hooks) int {
	root := newRootCmd(io, h)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var exit *ExitError
	code := 1
	if errors.As(err, &exit) {
		code = exit.Code
		if exit.Err == nil {
			return code
		}
	}
	untrusted.Fprintf(io.ErrOut, "mcpcage: error: %s\n", strings.TrimSpace(err.Error()))
	if h := hintOf(err); h != "" {
		untrusted.Fprintf(io.ErrOut, "mcpcage: hint: %s\n", h)
	}
	return code
}
