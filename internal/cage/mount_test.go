package cage

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

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
