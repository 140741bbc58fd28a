package secrets

import (
	"strings"
	"testing"
)

// Token-shaped test values are built by concatenation so that secret
// scanners do not mistake this file for a leak.
var (
	ghp       = "ghp" + "_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"
	ghPat     = "github" + "_pat_" + "11AAAAAAA0" + strings.Repeat("xY9", 10)
	aws       = "AKIA" + "IOSFODNN7EXAMPLE"
	ant       = "sk-ant" + "-api03-" + strings.Repeat("Ab3", 10)
	oai       = "sk-" + "proj-" + strings.Repeat("Zx7", 10)
	slack     = "xoxb" + "-1234567890-" + "AbCdEfGhIjKl"
	stripe    = "sk_" + "live_" + "4eC39HqLyjWDarjtT1zdp7dc"
	pem       = "-----BEGIN " + "OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
	random32  = "q8Zr2LmW9xTc4VbN7eKpYdUa3JsRt5Gh"
	hexSecret = "3f9a81b36c4d4e5f9a0b1c2d3e4f5a6b"
)

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name, value, kind, redacted string
	}{
		{"", ghp, "GitHub token", "ghp_…"},
		{"", "token=" + ghPat, "GitHub token", "github_pat_…"},
		{"", aws, "AWS access key id", "AKIA…"},
		{"", ant, "Anthropic API key", "sk-ant-…"},
		{"", oai, "OpenAI API key", "sk-proj-…"},
		{"", slack, "Slack token", "xoxb-…"},
		{"", stripe, "Stripe key", "sk_live_…"},
		{"", pem, "private key", "-----BEGIN OPENSSH PRIVATE KEY-----…"},
		{"API_TOKEN", random32, "high-entropy value", "…"},
		{"AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq9Lm2Wt", "high-entropy value", "…"},
		{"db_password", "Tr0ub4dor&3xZq9!kLm", "high-entropy value", "…"},
		{"Authorization", "Bearer " + random32, "high-entropy value", "…"},
		{"OPENWEATHER_API_KEY", hexSecret, "high-entropy value", "…"},
		{"", "postgresql://shop:" + random32 + "@localhost/shop", "password in a URL", "postgresql://shop:…@"},
	} {
		kind, red, ok := Check(c.name, c.value)
		if !ok || kind != c.kind || red != c.redacted {
			t.Errorf("Check(%q, %.12q…) = %q %q %v, want %q %q", c.name, c.value, kind, red, ok, c.kind, c.redacted)
		}
		if ok && len(red) > 4 && strings.Contains(c.value, red[:len(red)-len("…")]) && len(red)-len("…") > 12 && !strings.HasPrefix(red, "-----BEGIN") {
			t.Errorf("redaction %q shows too much", red)
		}
	}
}

func TestCheckNotSecrets(t *testing.T) {
	for _, c := range []struct{ name, value string }{
		{"GITHUB_TOKEN", "${input:github_token}"},
		{"GITHUB_TOKEN", "${env:GITHUB_TOKEN}"},
		{"GITHUB_TOKEN", "$GITHUB_TOKEN"},
		{"SENTRY_ACCESS_TOKEN", "COPILOT_MCP_SENTRY_TOKEN"},
		{"API_KEY", "your-api-key-here"},
		{"API_KEY", "<YOUR_API_KEY>"},
		{"API_KEY", "short"},
		{"KEY_FILE", "/home/ana/.config/key.pem"},
		{"TZ", random32}, // not a secret name, no known shape
		{"", random32},   // no name at all
		{"PASSWORD", "correct horse battery staple"},
		{"TOKEN_URL", "https://auth.example.com/oauth/token"},
		{"LANG", "fr_FR.UTF-8"},
		{"DATABASE_URL", "postgresql://shop:${DB_PASSWORD}@localhost/shop"},
		{"DATABASE_URL", "postgresql://localhost/shop"},
	} {
		if kind, _, ok := Check(c.name, c.value); ok {
			t.Errorf("Check(%q, %q) = %q, want no secret", c.name, c.value, kind)
		}
	}
}

func TestArgs(t *testing.T) {
	args := []string{"-y", "@stripe/mcp", "--tools=all", "--api-key=" + stripe, "--token", random32, "/home/me", "--verbose"}
	fs := Args(args)
	if len(fs) != 2 || fs[0].Where != "args[3]" || fs[1].Where != "args[5]" {
		t.Fatalf("got %+v", fs)
	}
	red := RedactArgs(args)
	joined := strings.Join(red, " ")
	if strings.Contains(joined, stripe) || strings.Contains(joined, random32) {
		t.Errorf("not redacted: %q", red)
	}
	if red[3] != "--api-key=sk_live_…" || red[5] != "…" || red[6] != "/home/me" {
		t.Errorf("got %q", red)
	}
}

func TestRedactInPlace(t *testing.T) {
	args := []string{"-y", "@modelcontextprotocol/server-postgres", "postgresql://shop:" + random32 + "@db.local:5432/shop", "--key=" + pem}
	red := RedactArgs(args)
	if red[2] != "postgresql://shop:…@db.local:5432/shop" {
		t.Errorf("connection string: %q", red[2])
	}
	if red[3] != "--key=-----BEGIN OPENSSH PRIVATE KEY-----…" || strings.Contains(red[3], "b3Bl") {
		t.Errorf("private key: %q", red[3])
	}
}

func TestURL(t *testing.T) {
	fs := URL("https://example.com/mcp?api_key=" + random32 + "&x=1")
	if len(fs) != 1 || fs[0].Where != "url query api_key" {
		t.Errorf("got %+v", fs)
	}
	if fs := URL("https://mcp.linear.app/sse"); len(fs) != 0 {
		t.Errorf("got %+v", fs)
	}
}
