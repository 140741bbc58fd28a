package fuzz

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpcage/mcpcage/internal/oauth"
)

// metadataServer serves the documents of discovery from the fuzzer's
// bytes: the protected resource's and the authorization server's.
type metadataServer struct{ prm, asm []byte }

func (m metadataServer) RoundTrip(r *http.Request) (*http.Response, error) {
	body := []byte(`{}`)
	switch {
	case strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource"):
		body = m.prm
	case strings.HasPrefix(r.URL.Path, "/.well-known/oauth-authorization-server"), strings.Contains(r.URL.Path, "openid-configuration"):
		body = m.asm
	case r.URL.Path == "/register":
		body = []byte(`{"client_id":"c"}`)
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(body)), Request: r}, nil
}

// FuzzOAuthMetadata: whatever the metadata documents say, a login never
// hands the browser a URL that is not https (or http on loopback), or one
// that starts with '-', and never panics.
func FuzzOAuthMetadata(f *testing.F) {
	f.Add([]byte(`{"resource":"https://mcp.example/mcp","authorization_servers":["https://as.example"]}`),
		[]byte(`{"issuer":"https://as.example","authorization_endpoint":"https://as.example/authorize","token_endpoint":"https://as.example/token","registration_endpoint":"https://as.example/register","code_challenge_methods_supported":["S256"],"response_types_supported":["code"]}`),
		"Bearer resource_metadata=\"https://mcp.example/.well-known/oauth-protected-resource/mcp\"")
	f.Add([]byte(`{"resource":"https://mcp.example/mcp","authorization_servers":["https://as.example"]}`),
		[]byte(`{"issuer":"https://as.example","authorization_endpoint":"file:///etc/passwd","token_endpoint":"https://as.example/token","code_challenge_methods_supported":["S256"]}`),
		"")
	f.Add([]byte(`{"resource":"https://mcp.example/mcp","authorization_servers":["-https://as.example"]}`), []byte(`{}`), `Bearer resource_metadata="-x", Basic realm="a,b"`)
	u, _ := url.Parse("https://mcp.example/mcp")
	f.Fuzz(func(t *testing.T, prm, asm []byte, challenge string) {
		var opened []string
		fl := &oauth.Flow{Name: "fuzz", Resource: u, Store: oauth.Store{Dir: t.TempDir()},
			Open:   func(s string) error { opened = append(opened, s); return nil },
			Log:    io.Discard,
			Client: &http.Client{Transport: metadataServer{prm: prm, asm: asm}},
			Wait:   time.Millisecond}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = fl.Login(ctx, []string{challenge})
		for _, o := range opened {
			if _, err := oauth.CheckURL("opened", o); err != nil {
				t.Fatalf("the browser was handed %q: %v", o, err)
			}
		}
	})
}
