package secrets

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestArgumentsFindsEveryKind(t *testing.T) {
	rsa := "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAvX3tq0kYb9L2\n-----END RSA PRIVATE KEY-----"
	creds := []Credential{{Env: "GITLAB_TOKEN", Server: "gitlab", Value: "glpat-" + "Zq81xLmW2vTr9cYp4bNa"}}
	for _, c := range []struct {
		args, kind, path string
	}{
		{`{"context":` + q(pem) + `}`, KindPrivateKey, "context"},
		{`{"files":[{"name":"a"},{"content":` + q("key:\n"+rsa) + `}]}`, KindPrivateKey, "files[1].content"},
		{`{"note":` + q("use "+ghp+" for it") + `}`, KindGitHub, "note"},
		{`{"x":{"y":` + q(ghPat) + `}}`, KindGitHub, "x.y"},
		{`{"aws":` + q("export AWS_ACCESS_KEY_ID="+aws) + `}`, KindAWS, "aws"},
		{`{"k":` + q(ant) + `}`, KindAnthropic, "k"},
		{`{"k":` + q(oai) + `}`, KindOpenAI, "k"},
		{`{"k":` + q(slack) + `}`, KindSlack, "k"},
		{`{"k":` + q(stripe) + `}`, KindStripe, "k"},
		{`{"debug":` + q("token was "+creds[0].Value) + `}`, KindCagedCredential, "debug"},
		{`{` + q(ghp) + `:1}`, KindGitHub, `["…"]`},
		{`{"a":{` + q(ghp) + `:{"b":1}}}`, KindGitHub, `a["…"]`},
		{`{"weird key":` + q(stripe) + `}`, KindStripe, `["weird key"]`},
		{`[` + q(slack) + `]`, KindSlack, "[0]"},
		{`not json ` + ghp, KindGitHub, "arguments"},
	} {
		fs := Arguments([]byte(c.args), creds)
		if len(fs) != 1 || fs[0].Kind != c.kind || fs[0].Path != c.path {
			t.Errorf("%.60s: got %+v, want one %s at %s", c.args, fs, c.kind, c.path)
		}
		for _, f := range fs {
			b, _ := json.Marshal(f)
			for _, secret := range []string{ghp[4:], ant[7:], oai[8:], stripe[8:], slack[5:], aws[4:], "b3BlbnNzaC1", creds[0].Value} {
				if strings.Contains(string(b), secret) || strings.Contains(f.Describe(), secret) {
					t.Errorf("finding %s shows the secret", b)
				}
			}
		}
	}
	fs := Arguments([]byte(`{"debug":`+q(creds[0].Value)+`}`), creds)
	if len(fs) != 1 || fs[0].Env != "GITLAB_TOKEN" || fs[0].Server != "gitlab" {
		t.Fatalf("caged credential: %+v", fs)
	}
	if d := fs[0].Describe(); !strings.Contains(d, "GITLAB_TOKEN") || !strings.Contains(d, `"gitlab"`) {
		t.Errorf("Describe: %s", d)
	}
}

func q(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestArgumentsRealisticBenign: arguments written for the tools of the
// compatibility list's servers, many of them about keys and tokens, hold no
// secret.
func TestArgumentsRealisticBenign(t *testing.T) {
	f, err := os.Open("testdata/benign-arguments.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	creds := []Credential{{Env: "SLACK_BOT_TOKEN", Server: "slack", Value: "xoxb-" + "90210-Kq8ZrLmW2x"}}
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec struct {
			Server, Tool string
			Arguments    json.RawMessage
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		n++
		if fs := Arguments(rec.Arguments, creds); len(fs) > 0 {
			t.Errorf("%s %s: %+v", rec.Server, rec.Tool, fs)
		}
	}
	if n < 20 {
		t.Fatalf("only %d records", n)
	}
}

func TestAllow(t *testing.T) {
	a, err := ParseAllow([]string{"github-token", "private-key:write_file"})
	if err != nil {
		t.Fatal(err)
	}
	fs := []ArgFinding{{Kind: KindGitHub, Path: "a"}, {Kind: KindPrivateKey, Path: "b"}, {Kind: KindSlack, Path: "c"}}
	if got := a.Refused("write_file", fs); len(got) != 1 || got[0].Kind != KindSlack {
		t.Errorf("write_file: %+v", got)
	}
	if got := a.Refused("send", fs); len(got) != 2 {
		t.Errorf("send: %+v", got)
	}
	for _, bad := range []string{"tokens", "github-token:", ""} {
		if _, err := ParseAllow([]string{bad}); err == nil {
			t.Errorf("ParseAllow(%q) accepted", bad)
		}
	}
}

func TestWatched(t *testing.T) {
	for _, c := range []struct {
		name, value string
		want        bool
	}{
		{"GITHUB_TOKEN", "short", false},
		{"GITHUB_TOKEN", "abcdefgh12", true},
		{"LOG_LEVEL", "debug", false},
		{"REGION", "eu-central-1", false},
		{"DATABASE_URL", "postgresql://app:" + random32 + "@db/app", true},
		{"SOME_ID", random32, true},
	} {
		if got := Watched(c.name, c.value); got != c.want {
			t.Errorf("Watched(%s) = %v", c.name, got)
		}
	}
}

func TestCagedCredentials(t *testing.T) {
	dir := t.TempDir()
	if err := RecordEnv(dir, "github", []string{"GITHUB_TOKEN", "LOG_LEVEL", "bad name"}); err != nil {
		t.Fatal(err)
	}
	if err := RecordEnv(dir, "notes", []string{"NOTES_KEY"}); err != nil {
		t.Fatal(err)
	}
	if err := RecordEnv(dir, "../x", []string{"A"}); err == nil {
		t.Error("a server name with a slash was accepted")
	}
	b, _ := os.ReadFile(filepath.Join(dir, "github.json"))
	if strings.Contains(string(b), ghp) || !strings.Contains(string(b), "GITHUB_TOKEN") {
		t.Errorf("record: %s", b)
	}
	env := map[string]string{"GITHUB_TOKEN": ghp, "LOG_LEVEL": "debug", "NOTES_KEY": random32}
	got := CagedCredentials(dir, "notes", nil, func(k string) string { return env[k] })
	if len(got) != 1 || got[0].Env != "GITHUB_TOKEN" || got[0].Server != "github" || got[0].Value != ghp {
		t.Errorf("for notes: %+v", got)
	}
	// A value this server is given itself is its own, not another's.
	got = CagedCredentials(dir, "notes", []string{"GH"}, func(k string) string {
		if k == "GH" {
			return ghp
		}
		return env[k]
	})
	if len(got) != 0 {
		t.Errorf("own value reported: %+v", got)
	}
	if err := RecordEnv(dir, "github", nil); err != nil {
		t.Fatal(err)
	}
	if got := CagedCredentials(dir, "notes", nil, func(k string) string { return env[k] }); len(got) != 0 {
		t.Errorf("after the record was cleared: %+v", got)
	}
}

// TestArgumentsBuffersShareNothing: Arguments keeps its unquoting buffer
// between calls; calls at once, with a secret at a different place in a
// string of a different length each, find what each finds alone.
func TestArgumentsBuffersShareNothing(t *testing.T) {
	var args [][]byte
	for i := range 30 {
		pad := strings.Repeat("\\n word", i*300)
		args = append(args, []byte(`{"a":"`+pad+`","b":`+q("x "+ghp)+`}`))
		args = append(args, []byte(`{"a":"`+pad+` `+ghp[:10]+`","b":`+q(pad)+`}`))
	}
	want := make([][]ArgFinding, len(args))
	for i, a := range args {
		want[i] = Arguments(a, nil)
		if (len(want[i]) == 1) != (i%2 == 0) {
			t.Fatalf("arguments %d alone: %+v", i, want[i])
		}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for r := range 10 {
				for k := range args {
					i := (k + g*5 + r) % len(args)
					if got := Arguments(args[i], nil); !slices.Equal(got, want[i]) {
						t.Errorf("arguments %d: %+v, alone %+v", i, got, want[i])
						return
					}
				}
			}
		})
	}
	wg.Wait()
}
