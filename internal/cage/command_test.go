package cage

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestParseCommand(t *testing.T) {
	good := []struct {
		argv []string
		want Command
		name string
	}{
		{[]string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp/a", "/tmp/b"},
			Command{Kind: "npx", Spec: "@modelcontextprotocol/server-filesystem", Package: "@modelcontextprotocol/server-filesystem", Args: []string{"/tmp/a", "/tmp/b"}},
			"modelcontextprotocol-server-filesystem"},
		{[]string{"/usr/local/bin/npx", "--yes", "@stripe/mcp@0.3.3", "--tools=all"},
			Command{Kind: "npx", Spec: "@stripe/mcp@0.3.3", Package: "@stripe/mcp", Version: "0.3.3", Args: []string{"--tools=all"}},
			"stripe-mcp"},
		{[]string{`C:\Program Files\nodejs\npx.cmd`, "-y", "tavily-mcp@latest"},
			Command{Kind: "npx", Spec: "tavily-mcp@latest", Package: "tavily-mcp", Version: "latest", Args: []string{}},
			"tavily-mcp"},
		{[]string{"npx", "-y", "--", "nx-mcp", "-y"},
			Command{Kind: "npx", Spec: "nx-mcp", Package: "nx-mcp", Args: []string{"-y"}},
			"nx-mcp"},
		{[]string{"uvx", "mcp-server-time", "--local-timezone=UTC"},
			Command{Kind: "uvx", Spec: "mcp-server-time", Package: "mcp-server-time", Args: []string{"--local-timezone=UTC"}},
			"mcp-server-time"},
		{[]string{"uvx", "Mcp_Server.Fetch==2025.4.7"},
			Command{Kind: "uvx", Spec: "Mcp_Server.Fetch==2025.4.7", Package: "Mcp_Server.Fetch", Version: "2025.4.7", Args: []string{}},
			"mcp-server-fetch"},
		{[]string{"uvx", "mcp-server-git[cli]@1.0"},
			Command{Kind: "uvx", Spec: "mcp-server-git[cli]@1.0", Package: "mcp-server-git", Version: "1.0", Args: []string{}},
			"mcp-server-git"},
	}
	for _, g := range good {
		got, err := ParseCommand(g.argv)
		if err != nil {
			t.Errorf("%q: %v", g.argv, err)
			continue
		}
		if got.Args == nil {
			got.Args = []string{}
		}
		if !reflect.DeepEqual(got, g.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", g.argv, got, g.want)
		}
		if n := got.Name(); n != g.name {
			t.Errorf("%q: name %q, want %q", g.argv, n, g.name)
		}
	}
	bad := []struct {
		argv []string
		msg  string
	}{
		{nil, "no server command"},
		{[]string{"python", "server.py"}, `"python" cannot be caged`},
		{[]string{"node", "dist/index.js"}, `"node" cannot be caged`},
		{[]string{"docker", "run", "-i", "x"}, `"docker" cannot be caged`},
		{[]string{"npm", "exec", "x"}, "only npx and uvx"},
		{[]string{"uv", "run", "x"}, "only npx and uvx"},
		{[]string{"npx"}, "no package given"},
		{[]string{"npx", "-y"}, "no package given"},
		{[]string{"npx", "github:org/repo"}, "not a registry package"},
		{[]string{"npx", "https://example.invalid/x.tgz"}, "not a registry package"},
		{[]string{"npx", "./local"}, "not a registry package"},
		{[]string{"npx", "/abs/dir"}, "not a registry package"},
		{[]string{"npx", "bad name"}, "not an npm registry package name"},
		{[]string{"npx", "pkg@"}, "empty version"},
		{[]string{"npx", "-p", "a", "b"}, "npx -p is not supported"},
		{[]string{"npx", "--package=a", "b"}, "--package is not supported"},
		{[]string{"npx", "--registry", "x", "y"}, `npx option "--registry"`},
		{[]string{"uvx", "--from", "x", "y"}, "uvx --from is not supported"},
		{[]string{"uvx", "git+https://example.invalid/x"}, "not a registry package"},
		{[]string{"uvx", "pkg>=1"}, "only an exact version"},
		{[]string{"uvx", "pkg[bad extra]"}, "only an exact version"},
		{[]string{"uvx"}, "no package given"},
	}
	for _, b := range bad {
		_, err := ParseCommand(b.argv)
		var ue *UsageError
		if !errors.As(err, &ue) {
			t.Errorf("%q: got %v, want a UsageError", b.argv, err)
			continue
		}
		if !strings.Contains(ue.Msg, b.msg) || ue.Hint == "" {
			t.Errorf("%q: %q (hint %q), want %q and a hint", b.argv, ue.Msg, ue.Hint, b.msg)
		}
	}
}

func TestDeriveName(t *testing.T) {
	for _, c := range []struct{ kind, pkg, img, want string }{
		{"image", "", "ghcr.io/github/github-mcp-server:v1.2", "github-mcp-server"},
		{"image", "", "mcp/fetch@sha256:0123", "fetch"},
		{"image", "", "localhost:5000/srv", "srv"},
		{"image", "", "sha256:0123456789abcdef0123", "image-0123456789ab"},
		{"npx", "@a/b", "", "a-b"},
		{"uvx", "a__b..c", "", "a-b-c"},
		{"npx", "._-x", "", "x"},
		{"npx", "", "", "server"},
		{"npx", strings.Repeat("a", 100), "", strings.Repeat("a", 63)},
	} {
		got := DeriveName(c.kind, c.pkg, c.img)
		if got != c.want {
			t.Errorf("DeriveName(%q, %q, %q) = %q, want %q", c.kind, c.pkg, c.img, got, c.want)
		}
		if err := ValidName(got); err != nil {
			t.Errorf("DeriveName(%q, %q, %q) = %q: %v", c.kind, c.pkg, c.img, got, err)
		}
	}
	for _, bad := range []string{"", "-x", ".", "..", "a/b", "a b", strings.Repeat("x", 64), "é"} {
		if ValidName(bad) == nil {
			t.Errorf("ValidName(%q) accepted", bad)
		}
	}
}

func TestMounts(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(filepath.Join(state, "servers"), 0o700); err != nil {
		t.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	for _, c := range []struct {
		spec, target string
		rw           bool
	}{
		{link + ":rw", link, true},
		{link + ":ro", link, false},
		{link + "/", link, false},
		{"~/x", filepath.Join(home, "x"), false},
	} {
		target, rw, err := ParseMountSpec(c.spec)
		if err != nil || target != c.target || rw != c.rw {
			t.Errorf("ParseMountSpec(%q) = %q, %v, %v; want %q, %v", c.spec, target, rw, err, c.target, c.rw)
		}
	}
	if _, _, err := ParseMountSpec(":rw"); err == nil {
		t.Error("ParseMountSpec(:rw) accepted")
	}
	m, err := ResolveMount(link, true, state)
	if err != nil || m.Source != real || m.Target != link || !m.Writable {
		t.Errorf("ResolveMount(link) = %+v, %v", m, err)
	}
	for _, bad := range []string{filepath.Join(dir, "missing"), filepath.Join(state, "servers"), "/var/run", "/"} {
		if _, err := ResolveMount(bad, false, state); err == nil {
			t.Errorf("ResolveMount(%q) accepted", bad)
		}
	}
	// A link into mcpcage's state is refused too.
	if err := os.Symlink(filepath.Join(state, "servers"), filepath.Join(dir, "sneaky")); err != nil {
		t.Fatal(err)
	}
	if _, err := ResolveMount(filepath.Join(dir, "sneaky"), false, state); err == nil {
		t.Error("a symlink into mcpcage's state was accepted")
	}

	args := []string{"--root=" + real, real, "relative", "/no/such/path", "-x", real + "/"}
	if got := ArgPaths(args); !reflect.DeepEqual(got, []string{real}) {
		t.Errorf("ArgPaths = %q", got)
	}
	ms := []Mount{{Source: real, Target: real}}
	if !Covered(ms, filepath.Join(real, "sub")) || Covered(ms, real+"-other") || Covered(ms, dir) {
		t.Error("Covered is wrong")
	}
}

func TestReadOnlyPath(t *testing.T) {
	for line, want := range map[string]string{
		`Error: ENOENT: no such file or directory, mkdir '/home/mcp/.cache/x'`: "/home/mcp/.cache/x",
		`[Error: EROFS: read-only file system, open '/srv/pkg/memory.json']`:   "/srv/pkg/memory.json",
		`OSError: [Errno 30] Read-only file system: '/usr/lib/python3/x'`:      "/usr/lib/python3/x",
		`Error: ENOENT: no such file or directory, open '/tmp/missing'`:        "",
		`Error: ENOENT: no such file or directory, mkdir 'relative/dir'`:       "",
		`EROFS: read-only file system, mkdir "/a b"`:                           "/a b",
		`nothing to see`: "",
		`EROFS '`:        "",
	} {
		if got := ReadOnlyPath(line); got != want {
			t.Errorf("ReadOnlyPath(%q) = %q, want %q", line, got, want)
		}
	}
}

func TestOwnerState(t *testing.T) {
	me := Self()
	if me.PID != os.Getpid() || me.Host == "" {
		t.Fatalf("Self() = %+v", me)
	}
	if s := me.State(); s != OwnerAlive {
		t.Errorf("own state %v", s)
	}
	if me.Start == "" || me.Boot == "" {
		t.Fatalf("no start time or boot id on Linux: %+v", me)
	}
	reused := me
	n, _ := strconv.Atoi(me.Start)
	reused.Start = strconv.Itoa(n + 1)
	if s := reused.State(); s != OwnerGone {
		t.Errorf("a reused pid (other start time) is %v, want gone", s)
	}
	rebooted := me
	rebooted.Boot = "00000000-0000-0000-0000-000000000000"
	if s := rebooted.State(); s != OwnerGone {
		t.Errorf("an owner from before a reboot is %v, want gone", s)
	}
	other := me
	other.Host = me.Host + "-elsewhere"
	if s := other.State(); s != OwnerUnknown {
		t.Errorf("another machine's owner is %v, want unknown", s)
	}
	// A process that has exited.
	dead := me
	dead.PID = 1 << 22
	dead.Start = ""
	if s := dead.State(); s != OwnerGone {
		t.Errorf("a pid that does not run is %v, want gone", s)
	}
	back := ownerFromLabels(me.Labels())
	if back != me {
		t.Errorf("labels round trip: %+v != %+v", back, me)
	}
}
