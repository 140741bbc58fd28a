// Package oauth is the authorization of a remote MCP server, as the MCP
// authorization specification says: the server's protected-resource
// metadata (RFC 9728) from its 401, its authorization server's metadata
// (RFC 8414, or OpenID discovery), a client registered on the spot (RFC
// 7591) or given, the authorization code with PKCE S256, the resource
// indicator (RFC 8707) on every request, and refresh.
//
// Discovery and registration are the official Go SDK's (oauthex: issuer,
// resource and PKCE checked, dangerous URL schemes and non-https endpoints
// refused); PKCE, the code exchange and refresh are golang.org/x/oauth2's.
// What is mcpcage's own: every URL fetched or opened is https (http only on
// loopback) and never starts with "-"; the authorization URL is printed and
// handed to a browser as one argument, never through a shell; the redirect
// listener binds loopback, checks state, takes one request and stops; the
// tokens live in a file made 0600 in a 0700 folder; the refresh uses the
// token endpoint stored at login, never one found later.
package oauth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/mcpcage/mcpcage/internal/atomicfile"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// Record is what a login leaves for later sessions: the endpoints found at
// login (the refresh uses these), the client, and the token.
type Record struct {
	Resource      string        `json:"resource"`
	Issuer        string        `json:"issuer"`
	TokenEndpoint string        `json:"token_endpoint"`
	ClientID      string        `json:"client_id"`
	ClientSecret  string        `json:"client_secret,omitempty"`
	Token         *oauth2.Token `json:"token"`
}

// Store keeps records under a folder of mcpcage's state, one file per
// server name.
type Store struct{ Dir string }

func (s Store) path(name string) string { return filepath.Join(s.Dir, name+".json") }

// Load reads a server's record; a missing one is (nil, nil).
func (s Store) Load(name string) (*Record, error) {
	b, err := os.ReadFile(s.path(name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("the stored authorization of %s is damaged (%v): run `mcpcage login %s` again", name, err, name)
	}
	return &r, nil
}

// Save writes a server's record: the folder 0700, the file created 0600
// (never written, then narrowed).
func (s Store) Save(name string, r *Record) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(s.Dir, 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(s.path(name), b, 0o600)
}

// CheckURL refuses what is never fetched or opened: a URL that is not
// https (http only on loopback), has no host, carries user information,
// or starts with "-" (an option to the program that would open it).
func CheckURL(what, raw string) (*url.URL, error) {
	if strings.HasPrefix(strings.TrimSpace(raw), "-") {
		return nil, fmt.Errorf("the %s starts with '-'", what)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("the %s does not parse", what)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && loopback(u.Hostname()):
	default:
		return nil, fmt.Errorf("the %s is not https (scheme %q)", what, clip(u.Scheme, 20))
	}
	if u.Host == "" || u.Opaque != "" || u.User != nil {
		return nil, fmt.Errorf("the %s has no host, or has user information", what)
	}
	return u, nil
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// Flow is one login, for one server.
type Flow struct {
	Name     string   // the server's name: its record's file
	Resource *url.URL // the MCP server's URL (the resource indicator)
	ClientID string   // given with --client-id; "": registered on the spot
	Store    Store
	// Open hands the authorization URL to a browser (Open below).
	Open func(string) error
	// Log hears what a person must do: the URL to visit.
	Log    io.Writer
	Client *http.Client // nil: Go's default
	// Wait bounds the wait for the person in the browser.
	Wait time.Duration
}

// resource is the resource indicator: the server's URL without query or
// fragment.
func (f *Flow) resource() string {
	u := *f.Resource
	u.RawQuery, u.Fragment, u.RawFragment = "", "", ""
	return u.String()
}

// Login runs the whole flow and saves the record. challenge is the server's
// WWW-Authenticate headers (nil: the well-known places are asked).
func (f *Flow) Login(ctx context.Context, challenge []string) (*Record, error) {
	prm, err := f.resourceMeta(ctx, challenge)
	if err != nil {
		return nil, err
	}
	if len(prm.AuthorizationServers) == 0 {
		return nil, errors.New("the server's protected-resource metadata names no authorization server")
	}
	issuer := prm.AuthorizationServers[0]
	if _, err := CheckURL("authorization server", issuer); err != nil {
		return nil, err
	}
	asm, err := f.serverMeta(ctx, issuer)
	if err != nil {
		return nil, err
	}
	for what, u := range map[string]string{"authorization_endpoint": asm.AuthorizationEndpoint, "token_endpoint": asm.TokenEndpoint} {
		if _, err := CheckURL(what, u); err != nil {
			return nil, fmt.Errorf("the authorization server's %v", err)
		}
	}
	if !slices.Contains(asm.CodeChallengeMethodsSupported, "S256") {
		return nil, errors.New("the authorization server does not offer PKCE with S256; mcpcage logs in with nothing less")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("cannot listen on loopback for the browser's return: %v", err)
	}
	defer ln.Close()
	redirect := "http://" + ln.Addr().String() + "/callback"
	rec := &Record{Resource: f.resource(), Issuer: issuer, TokenEndpoint: asm.TokenEndpoint, ClientID: f.ClientID}
	if rec.ClientID == "" {
		if asm.RegistrationEndpoint == "" {
			return nil, errors.New("the authorization server registers no clients: give the client id it issued you with --client-id")
		}
		if _, err := CheckURL("registration_endpoint", asm.RegistrationEndpoint); err != nil {
			return nil, err
		}
		reg, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{redirect}, TokenEndpointAuthMethod: "none", ClientName: "mcpcage",
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		}, f.Client)
		if err != nil {
			return nil, fmt.Errorf("the authorization server refused to register mcpcage: %v", err)
		}
		rec.ClientID, rec.ClientSecret = reg.ClientID, reg.ClientSecret
	}
	cfg := f.config(rec, asm.AuthorizationEndpoint, redirect)
	verifier := oauth2.GenerateVerifier()
	state := randomState()
	authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", rec.Resource))
	if _, err := CheckURL("authorization URL", authURL); err != nil {
		return nil, err
	}
	code, err := f.await(ctx, ln, state, authURL)
	if err != nil {
		return nil, err
	}
	tok, err := cfg.Exchange(f.ctx(ctx), code, oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", rec.Resource))
	if err != nil {
		return nil, fmt.Errorf("the authorization server did not give a token for the code: %v", oneLine(err))
	}
	rec.Token = tok
	if err := f.Store.Save(f.Name, rec); err != nil {
		return nil, err
	}
	return rec, nil
}

func (f *Flow) ctx(ctx context.Context) context.Context {
	if f.Client != nil {
		return context.WithValue(ctx, oauth2.HTTPClient, f.Client)
	}
	return ctx
}

func (f *Flow) config(rec *Record, authEndpoint, redirect string) *oauth2.Config {
	style := oauth2.AuthStyleInParams
	if rec.ClientSecret != "" {
		style = oauth2.AuthStyleInHeader
	}
	return &oauth2.Config{ClientID: rec.ClientID, ClientSecret: rec.ClientSecret, RedirectURL: redirect,
		Endpoint: oauth2.Endpoint{AuthURL: authEndpoint, TokenURL: rec.TokenEndpoint, AuthStyle: style}}
}

// resourceMeta finds and checks the server's protected-resource metadata:
// where its challenge says, else at the well-known places (path-inserted,
// then the origin's).
func (f *Flow) resourceMeta(ctx context.Context, challenge []string) (*oauthex.ProtectedResourceMetadata, error) {
	var tries []string
	if cs, err := oauthex.ParseWWWAuthenticate(challenge); err == nil {
		for _, c := range cs {
			if c.Scheme == "bearer" && c.Params["resource_metadata"] != "" {
				tries = append(tries, c.Params["resource_metadata"])
			}
		}
	}
	origin := f.Resource.Scheme + "://" + f.Resource.Host
	if p := strings.TrimSuffix(f.Resource.EscapedPath(), "/"); p != "" {
		tries = append(tries, origin+"/.well-known/oauth-protected-resource"+p)
	}
	tries = append(tries, origin+"/.well-known/oauth-protected-resource")
	var last error
	for _, t := range tries {
		if _, err := CheckURL("protected-resource metadata URL", t); err != nil {
			return nil, fmt.Errorf("the server's %v", err)
		}
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, t, f.resource(), f.Client)
		if err == nil {
			return prm, nil
		}
		last = err
	}
	return nil, fmt.Errorf("the server's protected-resource metadata could not be read or did not pass its checks: %v", oneLine(last))
}

// serverMeta finds and checks the authorization server's metadata (RFC
// 8414, then OpenID discovery).
func (f *Flow) serverMeta(ctx context.Context, issuer string) (*oauthex.AuthServerMeta, error) {
	u, _ := url.Parse(issuer)
	origin := u.Scheme + "://" + u.Host
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	tries := []string{origin + "/.well-known/oauth-authorization-server" + p, origin + "/.well-known/openid-configuration" + p}
	if p != "" {
		tries = append(tries, origin+p+"/.well-known/openid-configuration")
	}
	for _, t := range tries {
		asm, err := oauthex.GetAuthServerMeta(ctx, t, issuer, f.Client)
		if err != nil {
			return nil, fmt.Errorf("the authorization server's metadata did not pass its checks: %v", oneLine(err))
		}
		if asm != nil {
			return asm, nil
		}
	}
	return nil, fmt.Errorf("the authorization server %s publishes no metadata", issuer)
}

// await shows the authorization URL, hands it to a browser, and takes the
// one request the browser makes to the loopback listener.
func (f *Flow) await(ctx context.Context, ln net.Listener, state, authURL string) (string, error) {
	untrusted.Fprintf(f.Log, "mcpcage: to authorize %s, open this address in your browser (waiting %s):\n  %s\n", f.Name, f.Wait, authURL)
	if f.Open != nil {
		if err := f.Open(authURL); err != nil {
			untrusted.Fprintf(f.Log, "mcpcage: could not open a browser (%v); open the address above yourself\n", err)
		}
	}
	type result struct {
		code string
		err  error
	}
	got := make(chan result, 1)
	var once sync.Once
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		res := result{code: q.Get("code")}
		switch {
		case subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(state)) != 1:
			res = result{err: errors.New("the browser came back with a state that is not this login's; nothing was accepted")}
		case q.Get("error") != "":
			res = result{err: fmt.Errorf("the authorization server said %q", clip(q.Get("error"), 64))}
		case res.code == "":
			res = result{err: errors.New("the browser came back without a code")}
		}
		msg := "mcpcage is authorized; you may close this page."
		if res.err != nil {
			msg = "mcpcage was not authorized: " + res.err.Error()
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><p>%s</p>", html.EscapeString(msg))
		once.Do(func() { got <- res })
	})}
	go srv.Serve(ln)
	defer func() {
		// The page the browser waits for is written before the listener goes.
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
	}()
	wait := f.Wait
	if wait <= 0 {
		wait = 5 * time.Minute
	}
	select {
	case r := <-got:
		return r.code, r.err
	case <-time.After(wait):
		return "", fmt.Errorf("no authorization came back in %s", wait)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func randomState() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func oneLine(err error) string {
	if err == nil {
		return ""
	}
	s := strings.Join(strings.Fields(err.Error()), " ")
	return clip(s, 300)
}

// Source is a record's token, refreshed at the token endpoint stored at
// login when it has expired, and saved again.
type Source struct {
	name  string
	store Store
	mu    sync.Mutex
	rec   *Record
	ts    oauth2.TokenSource
}

// NewSource is the token source of a stored record.
func NewSource(ctx context.Context, name string, store Store, rec *Record, client *http.Client) *Source {
	f := &Flow{Client: client}
	cfg := f.config(rec, "", "")
	return &Source{name: name, store: store, rec: rec, ts: cfg.TokenSource(f.ctx(ctx), rec.Token)}
}

// Token is a valid access token, refreshed if need be.
func (s *Source) Token() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tok, err := s.ts.Token()
	if err != nil {
		return "", fmt.Errorf("the token of %s could not be refreshed (%s): run `mcpcage login %s`", s.name, oneLine(err), s.name)
	}
	if tok.AccessToken != s.rec.Token.AccessToken {
		s.rec.Token = tok
		if err := s.store.Save(s.name, s.rec); err != nil {
			return "", err
		}
	}
	return tok.AccessToken, nil
}

// Open hands url to a browser as one argument, never through a shell:
// $BROWSER when set (its first entry, as a program name), else the
// system's opener. The URL is checked first (CheckURL).
func Open(raw string) error {
	if _, err := CheckURL("authorization URL", raw); err != nil {
		return err
	}
	prog, args := "", []string{raw}
	if b := os.Getenv("BROWSER"); b != "" {
		prog, _, _ = strings.Cut(b, ":")
		prog = strings.TrimSpace(prog)
	} else {
		switch runtime.GOOS {
		case "darwin":
			prog = "open"
		case "windows":
			prog, args = "rundll32", []string{"url.dll,FileProtocolHandler", raw}
		default:
			prog = "xdg-open"
		}
	}
	if prog == "" || strings.ContainsAny(prog, " \t%$`&|;<>") {
		return fmt.Errorf("$BROWSER %q is not a program name", clip(prog, 40))
	}
	cmd := exec.Command(prog, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}

// Authorizer is a session's authorization: the stored token (refreshed),
// and a login when the server answers 401. It implements
// remote.Authorizer.
type Authorizer struct {
	Flow   *Flow
	mu     sync.Mutex
	src    *Source
	failed error // a login of this session that did not finish: not tried again
}

// Token is the current access token, "" when there is none yet (or its
// refresh failed: the server's 401 then starts a login).
func (a *Authorizer) Token() (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.src == nil {
		rec, err := a.Flow.Store.Load(a.Flow.Name)
		if err != nil {
			return "", err
		}
		if rec == nil || rec.Token == nil || rec.Resource != a.Flow.resource() {
			return "", nil // none, or another URL's under this name
		}
		a.src = NewSource(context.Background(), a.Flow.Name, a.Flow.Store, rec, a.Flow.Client)
	}
	tok, err := a.src.Token()
	if err != nil {
		untrusted.Fprintf(a.Flow.Log, "mcpcage: %v\n", err)
		a.src = nil
		return "", nil
	}
	return tok, nil
}

// Unauthorized logs in, saying so on the log.
func (a *Authorizer) Unauthorized(ctx context.Context, challenge []string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failed != nil {
		return a.failed
	}
	untrusted.Fprintf(a.Flow.Log, "mcpcage: %s asks for authorization; starting the login\n", a.Flow.Name)
	rec, err := a.Flow.Login(ctx, challenge)
	if err != nil {
		a.failed = fmt.Errorf("the authorization of %s did not finish: %v (run `mcpcage login %s`, then connect again)", a.Flow.Name, err, a.Flow.Name)
		return a.failed
	}
	a.src = NewSource(context.Background(), a.Flow.Name, a.Flow.Store, rec, a.Flow.Client)
	return nil
}
