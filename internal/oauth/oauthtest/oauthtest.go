// Package oauthtest is an OAuth authorization server and a protected MCP
// resource for tests, on loopback: discovery (RFC 9728, RFC 8414),
// registration (RFC 7591), the authorization code with PKCE S256 checked,
// the resource indicator checked, refresh. Each part can be made hostile.
package oauthtest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
)

// AS is the authorization server.
type AS struct {
	*httptest.Server
	// Meta, when set, edits the metadata document before it is served.
	Meta func(map[string]any)
	// Resource is the resource indicator every request must carry.
	Resource string

	mu       sync.Mutex
	codes    map[string]string // code -> the challenge it was issued under
	Tokens   map[string]bool   // access tokens issued
	refresh  map[string]bool
	Authz    []url.Values // the authorization requests seen
	TokenHit atomic.Int32
	n        int
}

// NewAS starts an authorization server.
func NewAS() *AS {
	a := &AS{codes: map[string]string{}, Tokens: map[string]bool{}, refresh: map[string]bool{}}
	a.Server = httptest.NewServer(http.HandlerFunc(a.serve))
	return a
}

func (a *AS) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		m := map[string]any{
			"issuer": a.URL, "authorization_endpoint": a.URL + "/authorize", "token_endpoint": a.URL + "/token",
			"registration_endpoint": a.URL + "/register", "response_types_supported": []string{"code"},
			"code_challenge_methods_supported": []string{"S256"}, "grant_types_supported": []string{"authorization_code", "refresh_token"},
		}
		if a.Meta != nil {
			a.Meta(m)
		}
		writeJSON(w, m)
	case "/register":
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		writeJSON(w, map[string]any{"client_id": "client-1", "redirect_uris": req["redirect_uris"]})
	case "/authorize":
		q := r.URL.Query()
		a.mu.Lock()
		a.Authz = append(a.Authz, q)
		a.n++
		code := fmt.Sprintf("code-%d", a.n)
		a.codes[code] = q.Get("code_challenge")
		a.mu.Unlock()
		if q.Get("code_challenge_method") != "S256" || q.Get("resource") != a.Resource || q.Get("client_id") == "" {
			http.Error(w, "bad request", 400)
			return
		}
		u, err := url.Parse(q.Get("redirect_uri"))
		if err != nil {
			http.Error(w, "bad redirect", 400)
			return
		}
		v := url.Values{"code": {code}, "state": {q.Get("state")}}
		u.RawQuery = v.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	case "/token":
		a.TokenHit.Add(1)
		r.ParseForm()
		a.mu.Lock()
		defer a.mu.Unlock()
		switch r.Form.Get("grant_type") {
		case "authorization_code":
			ch, ok := a.codes[r.Form.Get("code")]
			delete(a.codes, r.Form.Get("code"))
			sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != ch || r.Form.Get("resource") != a.Resource {
				w.WriteHeader(400)
				writeJSON(w, map[string]any{"error": "invalid_grant"})
				return
			}
		case "refresh_token":
			if !a.refresh[r.Form.Get("refresh_token")] {
				w.WriteHeader(400)
				writeJSON(w, map[string]any{"error": "invalid_grant"})
				return
			}
		default:
			w.WriteHeader(400)
			return
		}
		a.n++
		at, rt := fmt.Sprintf("at-%d", a.n), fmt.Sprintf("rt-%d", a.n)
		a.Tokens[at], a.refresh[rt] = true, true
		writeJSON(w, map[string]any{"access_token": at, "token_type": "Bearer", "refresh_token": rt, "expires_in": 3600})
	default:
		http.NotFound(w, r)
	}
}

// Valid says whether tok is a token this server issued.
func (a *AS) Valid(tok string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.Tokens[tok]
}

// Protect wraps an MCP server's handler: a request without a token the
// AS issued is answered 401 with the resource's metadata URL; the
// metadata names the AS. resourcePath is the MCP endpoint's path.
func Protect(a *AS, next http.Handler, resourcePath string) *httptest.Server {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource") {
			writeJSON(w, map[string]any{"resource": srv.URL + resourcePath, "authorization_servers": []string{a.URL}})
			return
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !a.Valid(tok) {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource`+resourcePath+`"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	}))
	return srv
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// Browser follows an authorization URL as a browser would, to the
// loopback redirect: what a person's click does.
func Browser(u string) error {
	go func() {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
		}
	}()
	return nil
}
