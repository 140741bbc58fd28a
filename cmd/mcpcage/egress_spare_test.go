package main

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/mcpcage/mcpcage/internal/cage"
	"github.com/mcpcage/mcpcage/internal/cage/cagetest"
)

// waitFor polls cond for up to two minutes (the engine is shared and slow).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("waited two minutes for %s", what)
}

func containerGone(cli *client.Client, id string) bool {
	_, err := cli.ContainerInspect(context.Background(), id)
	return cerrdefs.IsNotFound(err)
}

// spareSetup is the test's internet, the env of sessions that make and
// claim spares, a state directory and its home, whose spares go with the
// test.
func spareSetup(t *testing.T) (cli *client.Client, env []string, dir, home string) {
	cli = probeEngine(t)
	_, env = egressSetup(t, cli)
	env = append(env, EnvEgressSpare+"=on")
	dir = stateDir(t)
	home = filepath.Join(dir, "mcpcage")
	t.Cleanup(func() {
		if err := cage.RemoveSpare(context.Background(), cli, home); err != nil {
			t.Errorf("removing the test's spares: %v", err)
		}
	})
	return cli, env, dir, home
}

// TestRunAllowHostSpare: the first session with --allow-host of a home
// finds no spare, starts its own gateway and, once its cage runs, makes
// one that outlives it; the next session claims it (the probe reaches the
// allowed host through it, and is refused the other). SIGKILLed, that
// session's claimed gateway and holder end by themselves (the engine closes
// their stdin), and the next start removes its cage and the spare's
// network.
func TestRunAllowHostSpare(t *testing.T) {
	cli, env, dir, home := spareSetup(t)
	args := []string{"--allow-host", "api.allowed.test", "--allow-private-addresses", "--name", "egress-probe", "--image", cagetest.ProbeImage}
	spare := func() (string, string) {
		g, h, err := cage.SpareOf(context.Background(), cli, home)
		if err != nil {
			t.Fatal(err)
		}
		return g, h
	}
	if g, h := spare(); g != "" || h != "" {
		t.Fatalf("a fresh home has a spare: %s %s", g, h)
	}
	cs, stderr := caged(t, dir, env, args...)
	if out, _ := call(t, cs, "probe", map[string]any{"check": "https", "target": "https://api.allowed.test/"}); !strings.Contains(out, `"escaped":true`) {
		t.Fatalf("first session: the allowed host was not reached: %s\nstderr:\n%s", out, stderr.String())
	}
	waitFor(t, "the first session's spare", func() bool {
		g, h := spare()
		if g == "" || h == "" {
			return false
		}
		info, err := cli.ContainerInspect(context.Background(), h)
		return err == nil && info.State.Running
	})
	cs.Close()
	gw, holder := spare()
	if gw == "" || holder == "" {
		t.Fatalf("the spare did not outlive its session:\n%s", stderr.String())
	}
	info, err := cli.ContainerInspect(context.Background(), gw)
	if err != nil {
		t.Fatal(err)
	}
	spareNet := info.Config.Labels[cage.LabelSpareNet]

	cs, stderr = caged(t, dir, env, args...)
	if out, _ := call(t, cs, "probe", map[string]any{"check": "https", "target": "https://api.allowed.test/"}); !strings.Contains(out, `"escaped":true`) {
		t.Fatalf("second session: the allowed host was not reached: %s\nstderr:\n%s", out, stderr.String())
	}
	if out, _ := call(t, cs, "probe", map[string]any{"check": "https", "target": "https://api.denied.test/"}); !strings.Contains(out, `"escaped":false`) {
		t.Fatalf("second session: the denied host was reached: %s", out)
	}
	if g, h := spare(); g == gw || h == holder {
		t.Fatalf("the second session did not claim the spare (still under the spare's names)")
	}
	if containerGone(cli, gw) || containerGone(cli, holder) {
		t.Fatalf("the claimed spare is gone while its session runs")
	}
	// It makes the next one while it runs (a session ended sooner
	// removes what it made of it).
	waitFor(t, "the second session's spare", func() bool {
		g, h := spare()
		if g == "" || h == "" || g == gw {
			return false
		}
		info, err := cli.ContainerInspect(context.Background(), h)
		return err == nil && info.State.Running
	})
	nextGw, nextHolder := spare()
	info, err = cli.ContainerInspect(context.Background(), nextGw)
	if err != nil {
		t.Fatal(err)
	}
	nextNet := info.Config.Labels[cage.LabelSpareNet]
	cs.Close()
	waitFor(t, "the second session's gateway and holder removed", func() bool { return containerGone(cli, gw) && containerGone(cli, holder) })
	if _, err := cli.NetworkInspect(context.Background(), spareNet, network.InspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("the claimed spare's network is left after its session: %v\n%s", err, stderr.String())
	}

	// SIGKILL of a session that claimed a spare.
	gw, holder, spareNet = nextGw, nextHolder, nextNet
	victim := startInitialized(t, testEnv(dir, env...), append([]string{"run"}, args...)...)
	if g, _ := spare(); g == gw {
		t.Fatalf("the victim did not claim the spare")
	}
	pid := victim.Process.Pid
	victim.Process.Kill()
	victim.Wait()
	waitFor(t, "the killed session's gateway and holder removed", func() bool { return containerGone(cli, gw) && containerGone(cli, holder) })
	// Its cage is left (another mcpcage on this engine may reap it first).
	next := exec.Command("mcpcage", "run", "--image", cagetest.ProbeImage)
	next.Env = testEnv(dir)
	next.Stdin = strings.NewReader("")
	nextErr := &cageBuffer{}
	next.Stderr = nextErr
	if err := next.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("next run: %v\n%s", err, nextErr.String())
		}
	}
	if c, n := ownedBy(t, cli, pid); c != 0 || n != 0 { // a spare carries no owner label
		t.Errorf("after the next start: %d containers and %d networks of the killed mcpcage, want none\n%s", c, n, nextErr.String())
	}
	if _, err := cli.NetworkInspect(context.Background(), spareNet, network.InspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("the killed session's spare network is left after the next start: %v\n%s", err, nextErr.String())
	}
}
