package cage

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/mcpcage/mcpcage/internal/cage/cagetest"
)

// TestStdioWay: named pipes where the engine is on this kernel, the attach
// stream (said why) where it cannot share a pipe: a remote engine, an
// engine of the table that runs in a VM, gVisor, a binary that cannot be
// the launcher; --stdio attach always, --stdio pipes refused where pipes
// cannot work.
func TestStdioWay(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	desktop := filepath.Join(home, ".docker", "run", "docker.sock")
	if err := os.MkdirAll(filepath.Dir(desktop), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", desktop)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	notStatic := errors.New("mcpcage is not a static binary")
	for _, c := range []struct {
		asked, host string
		gvisor      bool
		binErr      error
		want, why   string // want "" with why: an error naming why
	}{
		{"", "unix:///var/run/docker.sock", false, nil, StdioPipes, ""},
		{StdioAuto, "unix:///run/podman/podman.sock", false, nil, StdioPipes, ""},
		{StdioPipes, "unix:///run/user/1000/podman/podman.sock", false, nil, StdioPipes, ""},
		{StdioAttach, "unix:///var/run/docker.sock", false, nil, StdioAttach, "as asked"},
		{"", "tcp://192.0.2.1:2376", false, nil, StdioAttach, "not on this machine"},
		{"", "unix://" + desktop, false, nil, StdioAttach, "Docker Desktop runs its containers in a VM"},
		{"", "unix:///var/run/docker.sock", true, nil, StdioAttach, "gVisor"},
		{"", "unix:///var/run/docker.sock", false, notStatic, StdioAttach, "not a static binary"},
		{StdioPipes, "unix://" + desktop, false, nil, "", "--stdio pipes: Docker Desktop"},
		{StdioPipes, "tcp://192.0.2.1:2376", false, nil, "", "--stdio pipes: the engine is not on this machine"},
		{"sometimes", "unix:///var/run/docker.sock", false, nil, "", "give auto, pipes or attach"},
	} {
		way, why, err := stdioWay(c.asked, c.host, c.gvisor, c.binErr)
		switch {
		case c.want == "" && (err == nil || !strings.Contains(err.Error(), c.why)):
			t.Errorf("%q at %s: %v, want an error naming %q", c.asked, c.host, err, c.why)
		case c.want != "" && (err != nil || way != c.want || !strings.Contains(why, c.why)):
			t.Errorf("%q at %s (gvisor %v, %v): %s %q %v, want %s %q", c.asked, c.host, c.gvisor, c.binErr, way, why, err, c.want, c.why)
		}
	}
}

// TestStdioLifecycle: on pipes, a server that never opens them (its
// entrypoint is not the launcher: it sleeps) neither hangs a write to its
// stdin nor a read of its stdout once the cage ends; one that exits at
// once ends the reading with EOF and its status; and Stop leaves no pipe
// folder behind.
func TestStdioLifecycle(t *testing.T) {
	cli, img := dockerAndProbe(t)
	bin, err := cagetest.StaticMcpcage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	ctx := context.Background()

	// Never opens its pipes.
	c, err := start(ctx, cli, Spec{Name: "never-opens", Image: img, Stdio: &CageStdio{Binary: bin, Dir: base}}, func(cfg *container.Config, _ *container.HostConfig) {
		cfg.Entrypoint, cfg.Cmd = []string{"/probe", "sleep"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	go func() { _, err := c.Stdin().Write([]byte("{}\n")); wrote <- err }()
	read := make(chan error, 1)
	go func() { _, err := c.Stdout().Read(make([]byte, 10)); read <- err }()
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for what, ch := range map[string]chan error{"write": wrote, "read": read} {
		select {
		case err := <-ch:
			if err == nil {
				t.Errorf("the %s succeeded on pipes nobody opened", what)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("the %s still waits after Stop", what)
		}
	}

	// Exits at once: EOF, then its status.
	c, err = start(ctx, cli, Spec{Name: "exits", Image: img, Cmd: []string{"exit", "3"}, Stdio: &CageStdio{Binary: bin, Dir: base}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(c.Stdout()); err != nil || len(b) != 0 {
		t.Errorf("stdout of a server that exits: %q %v", b, err)
	}
	if code, err := c.Wait(); code != 3 || err != nil {
		t.Errorf("exit status %d (%v), want 3", code, err)
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(base, "pipes-*")); len(left) != 0 {
		t.Errorf("left after Stop: %v", left)
	}
}

// TestStdioPipesNeverOpened: pipes whose cage never started close at once
// (a failed start), and pipes opened while no cage is on the other side are
// let go by unblock however soon it comes after open (the opens may not
// have begun): the read sees EOF, the write an error, nothing waits.
func TestStdioPipesNeverOpened(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		p, err := newStdioPipes(t.TempDir())
		if err != nil {
			t.Error(err)
			return
		}
		p.close() // never opened
		p.remove()
		for range 50 {
			p, err := newStdioPipes(t.TempDir())
			if err != nil {
				t.Error(err)
				return
			}
			p.open()
			p.unblock()
			if _, err := p.out.Read(make([]byte, 1)); err != io.EOF {
				t.Errorf("read after unblock: %v, want EOF", err)
			}
			if _, err := p.in.Write([]byte("x")); err == nil {
				t.Error("a write with no reader succeeded")
			}
			p.close()
			p.remove()
		}
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the pipes still wait")
	}
}
