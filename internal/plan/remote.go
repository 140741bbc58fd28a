package plan

import (
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"regexp"
	"strings"

	"github.com/mcpcage/mcpcage/internal/launch"
	"github.com/mcpcage/mcpcage/internal/remote"
	"github.com/mcpcage/mcpcage/internal/secrets"
)

// Remote is the plan of a remote server's session (run --url).
type Remote struct {
	// URL is where requests go, its ${VAR} references filled in; Written
	// is the URL as the user wrote it (the launch's identity, the name,
	// the records).
	URL     *url.URL
	Written string
	Header  http.Header
}

// envRef is a ${NAME} reference in a header value or the URL.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expand fills in each ${NAME} of s from lookup; a name that is not set is
// refused, never sent empty.
func expand(s, what string, lookup func(string) (string, bool)) (string, error) {
	var missing []string
	out := envRef.ReplaceAllStringFunc(s, func(m string) string {
		name := envRef.FindStringSubmatch(m)[1]
		v, ok := lookup(name)
		if !ok {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", usageHint(fmt.Errorf("%s names ${%s}, which is not set", what, missing[0]), "set %s in the environment mcpcage runs in (the client entry's env block)", missing[0])
	}
	return out, nil
}

// makeRemote plans `mcpcage run --url URL [--header 'Name: value']...`.
func makeRemote(req Request, p *Plan) error {
	// What shapes a cage has no meaning for a server that runs elsewhere.
	for flag, set := range map[string]bool{
		"a command": len(req.Command) > 0, "--image": req.Image != "", "--mount": len(req.Mounts) > 0,
		"--env": len(req.Env) > 0, "--allow-net": req.AllowNet, "--allow-host": len(req.AllowHosts) > 0,
		"--runtime": req.Runtime != "", "--stdio": req.Stdio != "",
	} {
		if set {
			return usageHint(fmt.Errorf("--url runs no cage: %s has no meaning for a remote server", flag), "leave %s out, or run a local server without --url", flag)
		}
	}
	lookup := req.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	written, err := remote.CheckURL(req.URL)
	if err != nil {
		return usage(err)
	}
	if f := secrets.URL(req.URL); len(f) > 0 {
		return usageHint(fmt.Errorf("the URL carries a secret (%s in the %s): it would stay in the client's config and in argv", f[0].Kind, f[0].Where),
			"put it in an environment variable and write it as ${NAME}, e.g. ?key=${API_KEY}, or move it to --header 'Authorization: Bearer ${TOKEN}'")
	}
	written.Scheme, written.Host = strings.ToLower(written.Scheme), strings.ToLower(written.Host)
	full, err := expand(written.String(), "--url", lookup)
	if err != nil {
		return err
	}
	u, err := remote.CheckURL(full)
	if err != nil {
		return usage(err)
	}
	if u.Host != written.Host {
		return usage(errors.New("--url: a ${VAR} may stand in the path or query, not the host"))
	}
	r := &Remote{URL: u, Written: written.String(), Header: http.Header{}}
	for _, h := range req.Headers {
		name, value, ok := strings.Cut(h, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || !validHeaderName(name) {
			return usageHint(fmt.Errorf("--header %q is not 'Name: value'", clipArg(h)), "write --header 'Authorization: Bearer ${TOKEN}'")
		}
		if reserved(name) {
			return usage(fmt.Errorf("--header %s: mcpcage sets that header itself", name))
		}
		if kind, _, found := secrets.Check(name, value); found {
			return usageHint(fmt.Errorf("--header %s carries a secret (%s) written out: it would stay in the client's config and in argv", name, kind),
				"put it in an environment variable and write --header '%s: ${NAME}' (Bearer ${TOKEN} for a token)", name)
		}
		v, err := expand(value, "--header "+name, lookup)
		if err != nil {
			return err
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return usage(fmt.Errorf("--header %s: its value holds a line break", name))
		}
		r.Header.Add(textproto.CanonicalMIMEHeaderKey(name), v)
	}
	p.Remote = r
	p.Cmd = launch.Command{Kind: "remote"}
	p.Name = req.Name
	if p.Name == "" {
		p.Name = launch.DeriveName("remote", r.Written, "")
	}
	if err := launch.ValidName(p.Name); err != nil {
		return usage(err)
	}
	ml, err := parseMaxLine(req.MaxLine)
	if err != nil {
		return err
	}
	p.MaxLine = ml
	if req.StartTimeout <= 0 {
		return usage(fmt.Errorf("--start-timeout %s: give a positive duration, like 30s", req.StartTimeout))
	}
	return nil
}

// Launch is what a remote plan runs, for pins and records.
func (r *Remote) Launch() launch.Launch { return launch.Launch{Kind: "remote", URL: r.Written} }

func validHeaderName(n string) bool {
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// reserved are the headers of the protocol and of HTTP itself.
func reserved(n string) bool {
	switch strings.ToLower(n) {
	case "host", "content-type", "content-length", "accept", "mcp-session-id", "mcp-protocol-version", "last-event-id", "transfer-encoding", "connection":
		return true
	}
	return false
}

func clipArg(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
