// Package secrets finds credentials written in clear text in MCP client
// configurations, and redacts them for display.
//
// Two kinds of evidence count:
//
//   - a value with the shape of a known credential, anywhere in a string:
//     GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_), AWS access
//     key ids (AKIA, ASIA), Anthropic keys (sk-ant-), OpenAI keys (sk-,
//     sk-proj-), Slack tokens (xoxa-, xoxb-, xoxp-, xoxr-, xoxs-, xapp-),
//     Stripe secret and restricted keys (sk_live_, sk_test_, rk_live_,
//     rk_test_), PEM private keys, and passwords in URLs
//     (scheme://user:password@host);
//   - a high-entropy value (at least 16 characters, no spaces, at least two
//     of lower case, upper case and digits, at least 3.2 bits of Shannon
//     entropy per character) stored under a name that
//     says it is secret: *TOKEN*, *KEY*, *SECRET*, *PASSWORD*, *PASSWD*,
//     *CREDENTIAL*, Authorization, Cookie.
//
// References that a client resolves at start (${input:x}, ${env:X}, $X,
// ${X}) are not secrets written in the file and never match.
//
// Redaction keeps at most the well-known prefix of a credential (for
// example "ghp_") and replaces everything else with "…", so what is shown
// says what kind of secret it is and nothing of its value. Nothing in this
// package logs or returns a secret value.
package secrets

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Finding is one secret found in a configuration entry.
type Finding struct {
	Where    string `json:"where"`    // e.g. "env GITHUB_TOKEN", "args[3]", "header Authorization"
	Kind     string `json:"kind"`     // e.g. "GitHub token", "high-entropy value"
	Redacted string `json:"redacted"` // what may be shown, e.g. "ghp_…"
}

type shape struct {
	kind   string
	re     *regexp.Regexp
	prefix int // submatch index of the prefix that may be shown
}

// Order matters: the Anthropic shape must be tried before OpenAI's sk-.
// Compiled on first use, not at load (see argShapes).
var shapes = sync.OnceValue(func() []shape {
	return []shape{
		{"private key", regexp.MustCompile(`-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY)-----`), 0},
		{"GitHub token", regexp.MustCompile(`\b(gh[pousr]_)[A-Za-z0-9]{30,255}\b`), 1},
		{"GitHub token", regexp.MustCompile(`\b(github_pat_)[A-Za-z0-9_]{30,255}\b`), 1},
		{"AWS access key id", regexp.MustCompile(`\b((?:AKIA|ASIA))[0-9A-Z]{16}\b`), 1},
		{"Anthropic API key", regexp.MustCompile(`\b(sk-ant-)[A-Za-z0-9_\-]{20,}`), 1},
		{"OpenAI API key", regexp.MustCompile(`\b(sk-(?:proj-|svcacct-|admin-)?)[A-Za-z0-9_\-]{20,}`), 1},
		{"Slack token", regexp.MustCompile(`\b(xox[abprs]-|xapp-)[A-Za-z0-9\-]{10,}`), 1},
		{"Stripe key", regexp.MustCompile(`\b((?:sk|rk)_(?:live|test)_)[A-Za-z0-9]{10,}`), 1},
		{"password in a URL", regexp.MustCompile(`\b([a-zA-Z][a-zA-Z0-9+.\-]*://[^/:@\s]*:)[^@/\s]+@`), 1},
	}
})

var secretName = regexp.MustCompile(`(?i)(token|key|secret|passw(or)?d|credential|^authorization$|^cookie$|^x-api-key$)`)

// reference is a value the client resolves when it starts the server.
var reference = regexp.MustCompile(`^\$(\{[^}]*\}|[A-Za-z_][A-Za-z0-9_]*)$`)

// SecretName reports whether a variable, header or flag name says its value
// is a secret.
func SecretName(name string) bool {
	name = strings.TrimLeft(name, "-")
	return secretName.MatchString(name)
}

// Check looks at one value and the name it is stored under ("" when it has
// none). It returns the kind of secret and its redacted form.
func Check(name, value string) (kind, redacted string, ok bool) {
	for _, s := range shapes() {
		if m := s.re.FindStringSubmatch(value); m != nil {
			if s.prefix == 0 {
				return s.kind, "-----BEGIN " + m[1] + "-----…", true
			}
			if s.kind == "password in a URL" {
				if strings.HasPrefix(m[0][len(m[1]):], "$") {
					continue // a reference such as ${DB_PASSWORD}
				}
				return s.kind, m[1] + "…@", true
			}
			return s.kind, m[s.prefix] + "…", true
		}
	}
	if name == "" || !SecretName(name) {
		return "", "", false
	}
	v := value
	// "Bearer xyz" and "Basic xyz" carry the secret after the scheme.
	if i := strings.IndexByte(v, ' '); i > 0 {
		switch strings.ToLower(v[:i]) {
		case "bearer", "basic", "token":
			v = strings.TrimSpace(v[i+1:])
		}
	}
	if HighEntropy(v) {
		return "high-entropy value", "…", true
	}
	return "", "", false
}

// HighEntropy reports whether v looks like a random credential rather than
// a word, a path, a placeholder or a reference.
func HighEntropy(v string) bool {
	if len(v) < 16 || strings.ContainsAny(v, " \t\n") || reference.MatchString(v) || strings.Contains(v, "${") {
		return false
	}
	if strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~") || strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://") {
		return false
	}
	lower := strings.ToLower(v)
	for _, p := range []string{"your", "xxxx", "change", "replace", "example", "placeholder", "<", "****"} {
		if strings.Contains(lower, p) {
			return false
		}
	}
	// A random credential mixes at least two of lower case, upper case and
	// digits; a name such as COPILOT_MCP_SENTRY_TOKEN does not.
	classes := 0
	for _, set := range []string{"abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789"} {
		if strings.ContainsAny(v, set) {
			classes++
		}
	}
	return classes >= 2 && entropy(v) >= 3.2
}

func entropy(s string) float64 {
	counts := map[rune]int{}
	n := 0
	for _, r := range s {
		counts[r]++
		n++
	}
	h := 0.0
	for _, c := range counts {
		p := float64(c) / float64(n)
		h -= p * math.Log2(p)
	}
	return h
}

// Args checks a server's arguments: shapes anywhere, and high-entropy
// values given to a flag whose name says secret (--api-key=X or --api-key X).
func Args(args []string) []Finding {
	var out []Finding
	for i := range args {
		if kind, red, _, ok := checkArg(args, i); ok {
			out = append(out, Finding{Where: "args[" + strconv.Itoa(i) + "]", Kind: kind, Redacted: red})
		}
	}
	return out
}

func checkArg(args []string, i int) (kind, redacted string, flag bool, ok bool) {
	a := args[i]
	name, val := "", a
	if strings.HasPrefix(a, "-") {
		if k, v, found := strings.Cut(a, "="); found {
			name, val, flag = k, v, true
		}
	} else if i > 0 && strings.HasPrefix(args[i-1], "-") && !strings.Contains(args[i-1], "=") {
		name = args[i-1]
	}
	kind, redacted, ok = Check(name, val)
	return kind, redacted, flag, ok
}

// RedactArgs returns args with every secret replaced by its redacted form,
// for showing a command line: a credential inside a longer argument (a
// connection string, --key=...) is replaced in place, the rest kept.
func RedactArgs(args []string) []string {
	out := append([]string(nil), args...)
	for i := range args {
		if _, red, flag, ok := checkArg(args, i); ok {
			k, v := "", args[i]
			if flag {
				k, v, _ = strings.Cut(args[i], "=")
				k += "="
			}
			if r, changed := Redact(v); changed {
				out[i] = k + r
			} else {
				out[i] = k + red
			}
		}
	}
	return out
}

// Redact replaces every credential of a known shape in s by its redacted
// form and reports whether there was one.
func Redact(s string) (string, bool) {
	// A private key is redacted whole: its body follows the header.
	if m := shapes()[0].re.FindStringSubmatch(s); m != nil {
		return "-----BEGIN " + m[1] + "-----…", true
	}
	changed := false
	for _, sh := range shapes()[1:] {
		s = sh.re.ReplaceAllStringFunc(s, func(m string) string {
			sub := sh.re.FindStringSubmatch(m)
			switch {
			case sh.kind == "password in a URL":
				if strings.HasPrefix(m[len(sub[1]):], "$") {
					return m
				}
				changed = true
				return sub[1] + "…@"
			}
			changed = true
			return sub[sh.prefix] + "…"
		})
	}
	return s, changed
}

// URL checks a remote server's address for credentials in its query or
// user information.
func URL(u string) []Finding {
	var out []Finding
	if kind, red, ok := Check("", u); ok {
		return []Finding{{Where: "url", Kind: kind, Redacted: red}}
	}
	if _, q, ok := strings.Cut(u, "?"); ok {
		for _, kv := range strings.Split(q, "&") {
			k, v, _ := strings.Cut(kv, "=")
			if kind, red, ok := Check(k, v); ok {
				out = append(out, Finding{Where: "url query " + k, Kind: kind, Redacted: red})
			}
		}
	}
	return out
}
