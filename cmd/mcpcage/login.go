package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpcage/mcpcage/internal/guard"
	"github.com/mcpcage/mcpcage/internal/home"
	"github.com/mcpcage/mcpcage/internal/launch"
	"github.com/mcpcage/mcpcage/internal/oauth"
	"github.com/mcpcage/mcpcage/internal/plan"
)

// oauthFlow is the login of the remote server name at u, its record under
// $MCPCAGE_HOME/oauth.
func oauthFlow(name string, u *url.URL, clientID string, io *IOStreams, wait time.Duration) (*oauth.Flow, error) {
	dir, err := home.Sub("oauth")
	if err != nil {
		return nil, err
	}
	return &oauth.Flow{Name: name, Resource: u, ClientID: clientID, Store: oauth.Store{Dir: dir}, Open: oauth.Open, Log: io.ErrOut, Wait: wait}, nil
}

// LoginOptions are `mcpcage login`'s.
type LoginOptions struct {
	IO       *IOStreams
	Target   string // a URL, or the name of a remote server run before
	Name     string
	ClientID string
	Wait     time.Duration
}

func newLoginCmd(io *IOStreams) *cobra.Command {
	opts := &LoginOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "login URL|NAME",
		Short: "Authorize mcpcage with a remote MCP server (OAuth) ahead of its first session",
		Long: `Run the OAuth login of a remote MCP server now, so that its sessions
(mcpcage run --url URL) start with a token. The address to visit is printed
and handed to your browser ($BROWSER, else the system's opener), never
through a shell; the token is kept in $MCPCAGE_HOME/oauth, readable by you
alone, and refreshed at the token endpoint found now.

NAME is the name of a remote server that has run before (its pins record
its URL).`,
		Example: `  mcpcage login https://mcp.example.com/mcp
  mcpcage login --client-id abc123 https://mcp.example.com/mcp`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Target = args[0]
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			return loginRun(ctx, opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Name, "name", "", "the server's `name`, as run --name gives it (default: from the URL)")
	fs.StringVar(&opts.ClientID, "client-id", "", "the OAuth client `id` the authorization server issued you (default: mcpcage registers itself)")
	fs.DurationVar(&opts.Wait, "wait", 5*time.Minute, "how long to wait for the browser")
	return cmd
}

func loginRun(ctx context.Context, opts *LoginOptions) error {
	raw := opts.Target
	name := opts.Name
	if !strings.Contains(raw, "://") {
		// A name: its URL from its pins.
		if err := launch.ValidName(raw); err != nil {
			return usageErr(err)
		}
		state, err := home.Dir()
		if err != nil {
			return err
		}
		f, err := guard.PinStore(state).Load(raw)
		if err != nil || f.Approved == nil || f.Approved.Launch.Kind != "remote" {
			return usageErr(withHint(fmt.Errorf("%q is not a remote server mcpcage has run", raw), "give its URL: mcpcage login https://..."))
		}
		name, raw = raw, f.Approved.Launch.URL
	}
	p, err := plan.Make(plan.Request{URL: raw, Name: name, MaxLine: "16m", StartTimeout: time.Minute})
	if err != nil {
		var u *plan.UsageError
		if errors.As(err, &u) {
			return usageErr(err)
		}
		return err
	}
	flow, err := oauthFlow(p.Name, p.Remote.URL, opts.ClientID, opts.IO, opts.Wait)
	if err != nil {
		return err
	}
	if _, err := flow.Login(ctx, nil); err != nil {
		return &ExitError{Code: 1, Err: err}
	}
	fmt.Fprintf(opts.IO.Out, "Authorized %s; its sessions now start with a token.\n", p.Name)
	return nil
}
