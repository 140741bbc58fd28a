package clients

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// Codex's config.toml as people write it by hand: the caged file is
// compared byte for byte, so the layout of each args array (one line, one
// element a line, a comment between elements) is what a user finds after
// --fix, and unwrap gives back the very bytes they wrote.

func fixTOML(t *testing.T, in string) string {
	t.Helper()
	out, ch, err := Edit(TOML, []byte(in), nil, OpFix, exe, nil)
	if err != nil {
		t.Fatalf("fix: %v\n%s", err, in)
	}
	if len(ch) == 0 {
		t.Fatalf("fix changed nothing:\n%s", in)
	}
	back, _, err := Edit(TOML, out, nil, OpUnwrap, "", nil)
	if err != nil || !bytes.Equal(back, []byte(in)) {
		t.Errorf("unwrap(fix(x)) != x (%v):\n%s", err, back)
	}
	return string(out)
}

const codexTop = "model = \"gpt-5-codex\"\n\n[mcp_servers.x]\n"

func TestTOMLFixKeepsTheArrayLayout(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"one line",
			`command = "npx"` + "\n" + `args = ["-y", "pkg"]` + "\n",
			`command = "` + exe + `"` + "\n" + `args = ["run", "--name=x", "--", "npx", "-y", "pkg"]` + "\n"},
		// No space between the elements: the inserted ones still get one.
		{"compact",
			`command = "npx"` + "\n" + `args = ["-y","pkg"]` + "\n",
			`command = "` + exe + `"` + "\n" + `args = ["run", "--name=x", "--", "npx", "-y","pkg"]` + "\n"},
		// The first element on the opening line, the rest one a line: the
		// inserted ones go one a line too, at the same indent.
		{"first on the opening line",
			"command = \"npx\"\nargs = [\"-y\",\n        \"pkg\"]\n",
			"command = \"" + exe + "\"\nargs = [\"run\",\n        \"--name=x\",\n        \"--\",\n        \"npx\",\n        \"-y\",\n        \"pkg\"]\n"},
		// A comment between the elements is not copied between the new ones.
		{"comment between elements",
			"command = \"npx\"\nargs = [\"-y\", # fetch it\n  \"pkg\"]\n",
			"command = \"" + exe + "\"\nargs = [\"run\", \"--name=x\", \"--\", \"npx\", \"-y\", # fetch it\n  \"pkg\"]\n"},
		{"one element",
			"command = \"uvx\"\nargs = [\"mcp-server-time\"]\n",
			"command = \"" + exe + "\"\nargs = [\"run\", \"--name=x\", \"--\", \"uvx\", \"mcp-server-time\"]\n"},
		{"one element on its own line",
			"command = \"uvx\"\nargs = [\n  \"mcp-server-time\",\n]\n",
			"command = \"" + exe + "\"\nargs = [\n  \"run\",\n  \"--name=x\",\n  \"--\",\n  \"uvx\",\n  \"mcp-server-time\",\n]\n"},
		{"one element after a comment",
			"command = \"uvx\"\nargs = [ # the server\n  \"mcp-server-time\"]\n",
			"command = \"" + exe + "\"\nargs = [ # the server\n  \"run\", \"--name=x\", \"--\", \"uvx\", \"mcp-server-time\"]\n"},
		// The --env flags follow the order the file gives, not the alphabet.
		{"env in the file's order",
			"command = \"npx\"\nargs = [\"-y\", \"pkg\"]\nenv = { ZED_TOKEN = \"1\", ALPHA = \"2\" }\n",
			"command = \"" + exe + "\"\nargs = [\"run\", \"--name=x\", \"--env=ZED_TOKEN\", \"--env=ALPHA\", \"--\", \"npx\", \"-y\", \"pkg\"]\nenv = { ZED_TOKEN = \"1\", ALPHA = \"2\" }\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := fixTOML(t, codexTop+c.in); got != codexTop+c.want {
				t.Errorf("got\n%s\nwant\n%s", got, codexTop+c.want)
			}
		})
	}
}

// The values the scanner must step over before the servers: a date-time
// with a space (and an hour starting with 0), arrays and inline tables of
// bare values, and a comment right after a number that hides a ']'.
func TestTOMLFixAfterBareValues(t *testing.T) {
	for _, top := range []string{
		"started = 1979-05-27 07:32:00Z\n",
		"started = 1979-05-27 00:32:00Z\n",
		"limits = [1, 2]\n",
		"limits = [1]\n",
		"retry = {max = 3}\n",
		"odd = [1#]\n, 2]\n",
		"notes = \"\"\"two\nlines\"\"\"\n",
		"[[hooks]]\nrun = \"x\"\n",
		"[profiles.Zed90z]\nmodel = \"o3\"\n",
		"notes = \"\"\"a \"b\" c\"\"\"\n",
		"notes = \"\"\"a\"\"b\"\"\"\n",
		"notes = \"\"\"a\"\"\"\"\"\n",
		"notes = \"\"\"a\\\"\"\"b\"\"\"\n",
		"path = '''C:\\'''\n",
	} {
		in := top + "[mcp_servers.x]\ncommand = \"npx\"\nargs = [\"-y\", \"pkg\"]\n"
		want := top + "[mcp_servers.x]\ncommand = \"" + exe + "\"\nargs = [\"run\", \"--name=x\", \"--\", \"npx\", \"-y\", \"pkg\"]\n"
		if got := fixTOML(t, in); got != want {
			t.Errorf("after %q: got\n%s", top, got)
		}
	}
}

// The last line of a file need not end with a newline.
func TestTOMLFixWithoutFinalNewline(t *testing.T) {
	in := "[mcp_servers.x]\ncommand = \"npx\"\nargs = [\"-y\", \"pkg\"]"
	want := "[mcp_servers.x]\ncommand = \"" + exe + "\"\nargs = [\"run\", \"--name=x\", \"--\", \"npx\", \"-y\", \"pkg\"]"
	if got := fixTOML(t, in); got != want {
		t.Errorf("got\n%s", got)
	}
	// Nor need a multi-line string at the end.
	in = "[mcp_servers.x]\nargs = [\"-y\", \"pkg\"]\ncommand = '''npx'''"
	want = "[mcp_servers.x]\nargs = [\"run\", \"--name=x\", \"--\", '''npx''', \"-y\", \"pkg\"]\ncommand = \"" + exe + "\""
	if got := fixTOML(t, in); got != want {
		t.Errorf("got\n%s", got)
	}
}

// An entry caged by hand as the --fix hint says (command mcpcage, args
// ["run", "--", PROGRAM]) is unwrapped to the program with empty args.
func TestTOMLUnwrapCommandAlone(t *testing.T) {
	in := "[mcp_servers.x]\ncommand = \"mcpcage\"\nargs = [\"run\", \"--\", \"/bin/true\"]\nstartup_timeout_sec = 20\n"
	out, ch, err := Edit(TOML, []byte(in), nil, OpUnwrap, "", nil)
	if err != nil || len(ch) != 1 {
		t.Fatalf("unwrap: %v, %d changes", err, len(ch))
	}
	if want := "[mcp_servers.x]\ncommand = \"/bin/true\"\nargs = []\nstartup_timeout_sec = 20\n"; string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

// What Read reports of entries it can list but not edit, and the fields it
// reads besides command and args.
func TestTOMLRead(t *testing.T) {
	in := `model = "gpt-5-codex"

[mcp_servers.a]
command = "npx"
args = ["-y", "a"]
http_headers = { "X-Zeta" = "1", "X-Alpha" = "2" }

[mcp_servers.placeholder]

[mcp_servers.off]
command = "npx"
args = ["-y", "off"]
enabled = false

[mcp_servers.on]
command = "npx"
args = ["-y", "on"]
enabled = true

[mcp_servers.flat]
command = "npx"
args = 5

# TOML 1.1 allows an inline table over several lines; the scanner does not
# read past it, so what follows cannot be edited in place.
[mcp_servers.late]
args = ["-y", "late"]
env = {
  A = "1",
}
command = "npx"
`
	srvs, err := Read(TOML, []byte(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		name     string
		disabled bool
		problem  string
	}
	var got []row
	for _, s := range srvs {
		got = append(got, row{s.Name, s.Disabled, s.Problem})
	}
	byHand := "it is not written as a [mcp_servers.NAME] table with command and args keys; edit it by hand"
	want := []row{{"a", false, ""}, {"placeholder", false, ""}, {"off", true, ""}, {"on", false, ""},
		{"flat", false, "its args are not a list"}, {"late", false, byHand}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if len(srvs) > 0 {
		var hdrs []string
		for _, h := range srvs[0].Headers {
			hdrs = append(hdrs, h.Name)
		}
		if want := []string{"X-Zeta", "X-Alpha"}; !reflect.DeepEqual(hdrs, want) {
			t.Errorf("headers in the order %q, want the file's %q", hdrs, want)
		}
	}

	// --fix cages a, off and on, and leaves flat and late as they are.
	out, ch, err := Edit(TOML, []byte(in), nil, OpFix, exe, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range ch {
		names = append(names, c.Before.Name)
	}
	if want := []string{"a", "off", "on"}; !reflect.DeepEqual(names, want) {
		t.Errorf("fix caged %q, want %q", names, want)
	}
	tail := in[strings.Index(in, "[mcp_servers.flat]"):]
	if !bytes.HasSuffix(out, []byte(tail)) {
		t.Errorf("fix changed the entries it cannot edit:\n%s", out)
	}

	// Nor does unwrap touch a caged entry in that layout.
	caged := "[mcp_servers.late]\nargs = [\"run\", \"--\", \"npx\", \"-y\", \"late\"]\nenv = {\n  A = \"1\",\n}\ncommand = \"mcpcage\"\n"
	if out, ch, err := Edit(TOML, []byte(caged), nil, OpUnwrap, "", nil); err != nil || len(ch) != 0 || string(out) != caged {
		t.Errorf("unwrap of an entry it cannot edit: %q, %d changes, %v", out, len(ch), err)
	}
}

// Servers written as inline tables under a [mcp_servers] header are listed,
// each with the hint to edit it by hand, and --fix leaves the file alone.
func TestTOMLInlineServers(t *testing.T) {
	in := "[mcp_servers]\nx = { command = \"npx\", args = [\"-y\", \"pkg\"] }\n"
	srvs, err := Read(TOML, []byte(in), nil)
	if err != nil || len(srvs) != 1 || srvs[0].Name != "x" || !strings.Contains(srvs[0].Problem, "edit it by hand") {
		t.Fatalf("read: %+v, %v", srvs, err)
	}
	out, ch, err := Edit(TOML, []byte(in), nil, OpFix, exe, nil)
	if err != nil || len(ch) != 0 || string(out) != in {
		t.Errorf("fix: %q, %d changes, %v", out, len(ch), err)
	}
}

// A flag with quotes, backslashes and control characters (a mount path
// from Wrap.Flags) is written as a TOML string that reads back as the same
// text.
func TestTOMLFixEscapesFlags(t *testing.T) {
	path := "/data/my A\"B\\C\tD\nE\x01F\x7fG"
	in := "[mcp_servers.x]\ncommand = \"npx\"\nargs = [\"-y\", \"pkg\"]\n"
	w := Wrap{Exe: exe, Flags: func(Server) []string { return []string{"--mount=" + path} }}
	out, ch, err := EditWith(TOML, []byte(in), nil, OpFix, w, nil)
	if err != nil || len(ch) != 1 {
		t.Fatalf("fix: %v, %d changes", err, len(ch))
	}
	srvs, err := Read(TOML, out, nil)
	if err != nil || len(srvs) != 1 {
		t.Fatalf("read back: %v", err)
	}
	want := []string{"run", "--name=x", "--mount=" + path, "--", "npx", "-y", "pkg"}
	if !reflect.DeepEqual(srvs[0].Args, want) {
		t.Errorf("args read back as %q, want %q", srvs[0].Args, want)
	}
	if !strings.Contains(string(out), `"--mount=/data/my A\"B\\C\tD\nE\u0001F\u007FG"`) {
		t.Errorf("the path is not written as an escaped basic string:\n%s", out)
	}
}
