package oauth_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpcage/mcpcage/internal/oauth"
	"github.com/mcpcage/mcpcage/internal/oauth/oauthtest"
)

type logBuf struct{ strings.Builder }

func setup(t *testing.T) (*oauthtest.AS, *url.URL, *oauth.Flow) {
	t.Helper()
	as := oauthtest.NewAS()
	t.Cleanup(as.Close)
	rs := oauthtest.Protect(as, http.NotFoundHandler(), "/mcp")
	t.Cleanup(rs.Close)
	as.Resource = rs.URL + "/mcp"
	u, _ := url.Parse(rs.URL + "/mcp")
	dir := filepath.Join(t.TempDir(), "oauth")
	f := &oauth.Flow{Name: "demo", Resource: u, Store: oauth.Store{Dir: dir}, Open: oauthtest.Browser, Log: &logBuf{}, Wait: 20 * time.Second}
	return as, u, f
}

// The whole flow: discovery from the 401's metadata, registration, PKCE
// S256 and the resource indicator (the server checks both), the token
// stored 0600 in a 0700 folder; refresh at the endpoint stored at login,
// even once the server's metadata names another.
func TestLoginAndRefresh(t *testing.T) {
	as, u, f := setup(t)
	resp, err := http.Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	rec, err := f.Login(context.Background(), resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		t.Fatal(err)
	}
	if !as.Valid(rec.Token.AccessToken) || rec.ClientID != "client-1" || rec.Resource != u.String() {
		t.Fatalf("record: %+v", rec)
	}
	if got := as.Authz[0].Get("redirect_uri"); !strings.HasPrefix(got, "http://127.0.0.1:") {
		t.Errorf("redirect_uri %q is not on loopback", got)
	}
	for _, p := range []struct {
		path string
		mode os.FileMode
	}{{f.Store.Dir, 0o700 | os.ModeDir}, {filepath.Join(f.Store.Dir, "demo.json"), 0o600}} {
		st, err := os.Stat(p.path)
		if err != nil || st.Mode() != p.mode {
			t.Errorf("%s: %v %v, want %v", p.path, st.Mode(), err, p.mode)
		}
	}
	if strings.Contains(f.Log.(*logBuf).String(), rec.Token.AccessToken) {
		t.Error("the token reached the log")
	}

	// The token expires; the server's metadata now names another token
	// endpoint, which must never be asked.
	var evil atomic.Int32
	other := oauthtest.NewAS()
	defer other.Close()
	as.Meta = func(m map[string]any) { m["token_endpoint"] = other.URL + "/token" }
	rec.Token.Expiry = time.Now().Add(-time.Hour)
	if err := f.Store.Save("demo", rec); err != nil {
		t.Fatal(err)
	}
	a := &oauth.Authorizer{Flow: f}
	before := as.TokenHit.Load()
	tok, err := a.Token()
	if err != nil || tok == "" || tok == rec.Token.AccessToken || !as.Valid(tok) {
		t.Fatalf("refreshed token %q %v", tok, err)
	}
	if as.TokenHit.Load() != before+1 || other.TokenHit.Load() != 0 || evil.Load() != 0 {
		t.Errorf("refresh went to %d/%d", as.TokenHit.Load()-before, other.TokenHit.Load())
	}
	again, _ := f.Store.Load("demo")
	if again.Token.AccessToken != tok {
		t.Error("the refreshed token was not saved")
	}
}

// What the authorization server names is checked before anything is
// opened: a scheme other than https (http on loopback), a URL that starts
// with '-'; PKCE without S256 is refused; shell metacharacters in an https
// URL reach the opener as one argument and run nothing.
func TestHostileAuthorizationServer(t *testing.T) {
	for name, c := range map[string]struct {
		edit func(m map[string]any)
		want string
	}{
		"file scheme":       {func(m map[string]any) { m["authorization_endpoint"] = "file:///etc/passwd" }, "HTTPS"},
		"smb scheme":        {func(m map[string]any) { m["authorization_endpoint"] = "smb://host/share" }, "HTTPS"},
		"javascript":        {func(m map[string]any) { m["authorization_endpoint"] = "javascript:alert(1)" }, "javascript"},
		"custom scheme":     {func(m map[string]any) { m["authorization_endpoint"] = "myapp://open?x=1" }, "HTTPS"},
		"option":            {func(m map[string]any) { m["authorization_endpoint"] = "--new-window=https://x" }, ""},
		"plain http":        {func(m map[string]any) { m["token_endpoint"] = "http://example.com/token" }, "HTTPS"},
		"no S256":           {func(m map[string]any) { m["code_challenge_methods_supported"] = []string{"plain"} }, "S256"},
		"other issuer":      {func(m map[string]any) { m["issuer"] = "https://evil.example" }, "issuer"},
		"no registration":   {func(m map[string]any) { delete(m, "registration_endpoint") }, "--client-id"},
		"registration http": {func(m map[string]any) { m["registration_endpoint"] = "http://example.com/r" }, "HTTPS"},
	} {
		t.Run(name, func(t *testing.T) {
			as, u, f := setup(t)
			as.Meta = c.edit
			var opened atomic.Int32
			f.Open = func(string) error { opened.Add(1); return nil }
			_, err := f.Login(context.Background(), nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("login: %v, want an error with %q", err, c.want)
			}
			if opened.Load() != 0 {
				t.Error("a browser was opened")
			}
			_ = u
		})
	}
}

// A protected-resource metadata URL that starts with '-', or names an
// authorization server that is not https, is refused before any fetch.
func TestHostileResourceMetadata(t *testing.T) {
	_, _, f := setup(t)
	_, err := f.Login(context.Background(), []string{`Bearer resource_metadata="-https://x/.well-known/oauth-protected-resource"`})
	if err == nil || !strings.Contains(err.Error(), "starts with '-'") {
		t.Errorf("login: %v", err)
	}
}

// Shell metacharacters in the authorization URL are inert: the opener gets
// the URL as one argument, no shell runs.
func TestOpenNeverUsesAShell(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "pwned")
	argv := filepath.Join(dir, "argv")
	browser := filepath.Join(dir, "fake-browser")
	// The fake browser writes its arguments, one a line.
	if err := os.WriteFile(browser, []byte("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > "+argv+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BROWSER", browser)
	for _, u := range []string{
		"https://auth.example/authorize?x=$(touch${IFS}" + marker + ")&y=`touch${IFS}" + marker + "`",
		"https://auth.example/a;touch%20" + marker + "&b=%25COMSPEC%25|x&c=$HOME",
	} {
		os.Remove(argv)
		if err := oauth.Open(u); err != nil {
			t.Fatal(err)
		}
		var got []byte
		for range 100 {
			if got, _ = os.ReadFile(argv); len(got) > 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if string(got) != u+"\n" {
			t.Errorf("the opener got %q, want %q as its one argument", got, u)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("a shell ran the URL")
		}
	}
	for _, u := range []string{"file:///etc/passwd", "javascript:alert(1)", "-https://x", "smb://h/s", "http://example.com/"} {
		if err := oauth.Open(u); err == nil {
			t.Errorf("Open(%q) was not refused", u)
		}
	}
	t.Setenv("BROWSER", "sh -c id")
	if err := oauth.Open("https://auth.example/"); err == nil {
		t.Error("a $BROWSER with arguments was run")
	}
}

// The browser coming back with another state is refused.
func TestStateChecked(t *testing.T) {
	_, _, f := setup(t)
	f.Open = func(u string) error {
		pu, _ := url.Parse(u)
		q := pu.Query()
		go func() {
			resp, err := http.Get(q.Get("redirect_uri") + "?code=x&state=forged")
			if err == nil {
				resp.Body.Close()
			}
		}()
		return nil
	}
	if _, err := f.Login(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "state") {
		t.Errorf("login: %v", err)
	}
}
