package secrets

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"math/big"
	"net/url"
	"strings"
	"testing"
	"time"
)

// pemBody is a key's base64 body as a PEM file writes it (64 characters a
// line), without the header and footer.
func pemBody(der []byte) string {
	b := base64.StdEncoding.EncodeToString(der)
	var lines []string
	for len(b) > 64 {
		lines = append(lines, b[:64])
		b = b[64:]
	}
	return strings.Join(append(lines, b), "\n")
}

// TestArgumentsOneStepAway: a secret one step of encoding away from its
// shape is found as the shape: a letter before its prefix, a zero-width
// space inside it, its prefix in upper case, percent or \x encoding,
// fullwidth letters, a lower-cased AWS key id, a private key's body without
// its PEM header (RSA PKCS#1, PKCS#8, EC SEC1, Ed25519, OpenSSH).
func TestArgumentsOneStepAway(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(rsaKey)
	sec1, _ := x509.MarshalECPrivateKey(ecKey)
	ed8, _ := x509.MarshalPKCS8PrivateKey(edKey)
	openssh := append([]byte("openssh-key-v1\x00\x00\x00\x00\x04none\x00\x00\x00\x04none"), make([]byte, 40)...)
	fullwidth := strings.Map(func(r rune) rune {
		if r >= '!' && r <= '~' {
			return r - '!' + '！'
		}
		return r
	}, ghp)
	cases := []struct{ name, value, kind string }{
		{"a letter before the prefix", "x" + ghp, KindGitHub},
		{"a zero-width space in it", ghp[:6] + "\u200b" + ghp[6:], KindGitHub},
		{"a soft hyphen and a word joiner", ghp[:3] + "\u00ad" + ghp[3:9] + "\u2060" + ghp[9:], KindGitHub},
		{"the prefix in upper case", strings.ToUpper(ghp[:4]) + ghp[4:], KindGitHub},
		{"percent-encoded", url.QueryEscape(ghp[:3]) + "%5F" + ghp[4:], KindGitHub},
		{"percent-encoded whole", pctAll(stripe), KindStripe},
		{"\\x-encoded", `\x67\x68\x70\x5f` + ghp[4:], KindGitHub},
		{"\\u-encoded as text", `\u0067hp_` + ghp[4:], KindGitHub},
		{"fullwidth letters", fullwidth, KindGitHub},
		{"an AWS key id in lower case", strings.ToLower(aws), KindAWS},
		{"an AWS key id glued to a word", "id" + aws, KindAWS},
		{"a Slack token in upper case", strings.ToUpper(slack[:5]) + slack[5:], KindSlack},
		{"an Anthropic key after a word", "key" + ant, KindAnthropic},
		{"a project key after a word", "openai" + oai, KindOpenAI},
		{"an RSA key's body (PKCS#1)", pemBody(x509.MarshalPKCS1PrivateKey(rsaKey)), KindPrivateKey},
		{"an RSA key's body (PKCS#8)", pemBody(pkcs8), KindPrivateKey},
		{"an EC key's body (SEC1)", "key:\n" + pemBody(sec1), KindPrivateKey},
		{"an Ed25519 key's body (PKCS#8)", pemBody(ed8), KindPrivateKey},
		{"an OpenSSH key's body", pemBody(openssh), KindPrivateKey},
		{"a PEM header in lower case", strings.ToLower("-----BEGIN RSA PRIVATE KEY-----") + "\n" + pemBody(x509.MarshalPKCS1PrivateKey(rsaKey)), KindPrivateKey},
	}
	for _, c := range cases {
		fs := Arguments([]byte(`{"v":`+q(c.value)+`}`), nil)
		if len(fs) == 0 || fs[0].Kind != c.kind {
			t.Errorf("%s: %+v, want a %s", c.name, fs, c.kind)
		}
	}

	// Look-alikes that stay unreported: public keys and certificates in
	// base64, words that end in sk-, a hash, prose.
	pub, _ := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	cert, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &ecKey.PublicKey, ecKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, benign := range []string{
		pemBody(pub), pemBody(x509.MarshalPKCS1PublicKey(&rsaKey.PublicKey)), pemBody(cert),
		"the task-3f9a81b36c4d4e5f9a0b1c2d3e4f5a6b finished", "the disk-AbCdEfGhIjKlMnOpQrStUv is full",
		hexSecret, "Wikiadventures and akiaosfodnnexamplewords", "a ghost_story_about_nothing_much_at_all_really",
		"100%25 of %E2%9C%93 done", `C:\x64\users`, strings.Repeat("QUJD", 40),
	} {
		if fs := Arguments([]byte(`{"v":`+q(benign)+`}`), nil); len(fs) != 0 {
			t.Errorf("%.60q: %+v, want nothing", benign, fs)
		}
	}
}

func pctAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteString("%" + strings.ToUpper(hexByte(s[i])))
	}
	return b.String()
}

func hexByte(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&15]})
}

// TestArgumentsAnyDepth: a secret nested deeper than any honest argument
// (10,000 levels, as deep as the proxy lets a message nest) is found with
// its escapes read, and the walk uses no stack for it.
func TestArgumentsAnyDepth(t *testing.T) {
	for _, secret := range []string{q(pemBody(mustRSA(t))), `"\u0067hp_` + ghp[4:] + `"`, q(ghp)} {
		for _, depth := range []int{65, 1000, 9999} {
			args := strings.Repeat(`{"a":[`, depth/2) + secret + strings.Repeat(`]}`, depth/2)
			fs := Arguments([]byte(args), nil)
			if len(fs) == 0 {
				t.Errorf("depth %d: nothing found in %.40s", depth, secret)
			}
		}
	}
}

func mustRSA(t *testing.T) []byte {
	k, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	return x509.MarshalPKCS1PrivateKey(k)
}

// TestArgumentsCapBoundsTheReport: 40 GitHub tokens before a private key
// fill the report, and the key is still found.
func TestArgumentsCapBoundsTheReport(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{`)
	for i := 0; i < 40; i++ {
		b.WriteString(`"t` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `":` + q(ghp) + `,`)
	}
	b.WriteString(`"z":` + q(pem) + `}`)
	fs := Arguments([]byte(b.String()), nil)
	var key bool
	for _, f := range fs {
		key = key || f.Kind == KindPrivateKey
	}
	if !key {
		t.Fatalf("the private key after 40 tokens was not reported (%d findings)", len(fs))
	}
	if len(fs) > maxArgFindings+len(Kinds) {
		t.Errorf("%d findings: the report is not bounded", len(fs))
	}
}

// TestArgumentsSplit: a token split between two strings of one message,
// or between two messages of a session (Window), is found in the second
// piece, marked Split; pieces of nothing are not.
func TestArgumentsSplit(t *testing.T) {
	fs := Arguments([]byte(`{"a":`+q("token "+ghp[:12])+`,"b":`+q(ghp[12:]+" end")+`}`), nil)
	if len(fs) != 1 || fs[0].Kind != KindGitHub || fs[0].Path != "b" || !fs[0].Split {
		t.Errorf("split in one message: %+v", fs)
	}
	if d := fs[0].Describe(); !strings.Contains(d, "split between argument b and what came before it") {
		t.Errorf("Describe: %s", d)
	}
	var win Window
	if fs := Params([]byte(`{"text":`+q("here: "+stripe[:10])+`}`), nil, &win); len(fs) != 0 {
		t.Fatalf("first piece alone: %+v", fs)
	}
	if fs := Params([]byte(`{"text":`+q(stripe[10:])+`}`), nil, &win); len(fs) != 1 || fs[0].Kind != KindStripe || !fs[0].Split {
		t.Errorf("split over two messages: %+v", fs)
	}
	// A key named by the second piece of a token is not shown in the path.
	fs = Arguments([]byte(`{"a":`+q(ghp[:12])+`,`+q(ghp[12:])+`:1}`), nil)
	if len(fs) != 1 || strings.Contains(fs[0].Path, ghp[12:]) {
		t.Errorf("split into a key: %+v", fs)
	}
	var calm Window
	for _, m := range []string{`{"a":"ghp_"}`, `{"b":"the rest of the story is long and plain"}`, `{"c":"sk_live_"}`, `{"d":"tests"}`} {
		if fs := Params([]byte(m), nil, &calm); len(fs) != 0 {
			t.Errorf("%s: %+v", m, fs)
		}
	}
}
