package cage

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/mcpcage/mcpcage/internal/egress"
)

// prepared makes a spare for a fresh home on the test's internet and
// returns its spec; the test's end removes whatever is left of it.
func prepared(t *testing.T, cli *client.Client, upstream string) SpareSpec {
	t.Helper()
	staticGateway(t)
	s := SpareSpec{Home: t.TempDir(), Upstream: upstream}
	t.Cleanup(func() { removeSpareOf(t, cli, s.Home) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := PrepareSpare(ctx, cli, s); err != nil {
		t.Fatal(err)
	}
	return s
}

func removeSpareOf(t *testing.T, cli *client.Client, home string) {
	if err := RemoveSpare(context.Background(), cli, home); err != nil {
		t.Errorf("removing the test's spare: %v", err)
	}
}

func claimFor(t *testing.T, cli *client.Client, s SpareSpec, pol egress.Policy, ev *eventLog) (*Gateway, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return ClaimSpare(ctx, cli, s, EgressSpec{Policy: pol, Upstream: s.Upstream, Session: NewSession(), Name: "egress-probe", Events: ev.add, Log: os.Stderr})
}

// claimsTogether makes n claims of the home's spares at once.
func claimsTogether(t *testing.T, cli *client.Client, s SpareSpec, pol egress.Policy, n int) ([]*Gateway, []error) {
	gws := make([]*Gateway, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range gws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			gws[i], errs[i] = claimFor(t, cli, s, pol, &eventLog{})
		}()
	}
	close(start)
	wg.Wait()
	return gws, errs
}

// A claimed spare is a session's gateway like one made for it: the probe
// in the holder's namespace reaches what the policy handed over at the
// claim allows and nothing else, each attempt is an event, and the stop
// leaves nothing. The spare's names are free once it is claimed.
func TestEgressSpareClaimed(t *testing.T) {
	cli, _ := dockerAndProbe(t)
	in := testInternet(t, cli)
	s := prepared(t, cli, in.Network)
	pol, err := egress.ParsePolicy(byNamePolicy, true)
	if err != nil {
		t.Fatal(err)
	}
	ev := &eventLog{}
	gw, err := claimFor(t, cli, s, pol, ev)
	if err != nil || gw == nil {
		t.Fatalf("claim: %v %v", gw, err)
	}
	if gw.holder == "" || gw.Network() != "container:"+gw.holder {
		t.Fatalf("the claimed gateway's cage network is %q", gw.Network())
	}
	if g, h, err := SpareOf(context.Background(), cli, s.Home); err != nil || g != "" || h != "" {
		t.Fatalf("the spare's names are still taken after the claim: %s %s %v", g, h, err)
	}
	p := probeBehind(t, cli, in, gw, NewSession())
	checkByName(t, cli, in, p, gw, ev)
}

// The first start of a home has no spare: the claim finds none and takes
// nothing; a spare made then is what the next claim takes.
func TestEgressSpareFirstStart(t *testing.T) {
	cli, _ := dockerAndProbe(t)
	in := testInternet(t, cli)
	staticGateway(t)
	s := SpareSpec{Home: t.TempDir(), Upstream: in.Network}
	pol, _ := egress.ParsePolicy([]string{"api.allowed.test"}, true)
	if gw, err := claimFor(t, cli, s, pol, &eventLog{}); gw != nil || err != nil {
		t.Fatalf("a home with no spare gave a gateway: %v %v", gw, err)
	}
	t.Cleanup(func() { removeSpareOf(t, cli, s.Home) })
	if err := PrepareSpare(context.Background(), cli, s); err != nil {
		t.Fatal(err)
	}
	gw, err := claimFor(t, cli, s, pol, &eventLog{})
	if err != nil || gw == nil {
		t.Fatalf("no claim of the spare made: %v %v", gw, err)
	}
	if err := gw.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A claimer killed (SIGKILL) in the middle of its claim leaves no renamed
// spare behind: the spare's gateway and holder exit with its attachments
// and the engine removes them, at every step after the first attachment
// (after the first only, the half left is removed by the next start).
// Before, the renames came first: killed between them and the attaching,
// the renamed gateway and holder waited out their 10 minutes.
func TestEgressSpareClaimerKilled(t *testing.T) {
	if spec := os.Getenv("MCPCAGE_TEST_CLAIM_CHILD"); spec != "" {
		claimChild(t, spec)
		return
	}
	cli, _ := dockerAndProbe(t)
	in := testInternet(t, cli)
	ctx := context.Background()
	for _, step := range []string{"attached holder", "attached gateway", "renamed gateway", "renamed holder"} {
		s := prepared(t, cli, in.Network)
		gwID, holdID, netID := spareIDs(t, cli, s.Home)
		cmd := exec.Command(os.Args[0], "-test.run=^TestEgressSpareClaimerKilled$")
		cmd.Env = append(os.Environ(), "MCPCAGE_TEST_CLAIM_CHILD="+s.Home+"\n"+s.Upstream+"\n"+step)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if line != step+"\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the claiming child said %q (%v), want %q", line, err, step)
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		if step == "attached holder" {
			// Killed with only the holder attached: the holder goes with
			// it; the gateway, still under the spare's name, is half a
			// spare, which the next start's look at the spares removes.
			goneWithin(cli, 30*time.Second, holdID)
			if err := PrepareSpare(ctx, cli, s); err != nil {
				t.Fatal(err)
			}
		}
		if !goneWithin(cli, 30*time.Second, gwID, holdID) {
			t.Fatalf("killed at %q, the claimer left the spare's gateway (gone: %v) and holder (gone: %v) 30 s later", step, gone(cli, gwID), gone(cli, holdID))
		}
		if ni, err := cli.NetworkInspect(ctx, netID, network.InspectOptions{}); err == nil && len(ni.Containers) > 0 || err != nil && !cerrdefs.IsNotFound(err) {
			t.Errorf("killed at %q, the spare's network still has a container on it (%v)", step, err)
		}
	}
}

// spareIDs are the home's spare's gateway, holder and network.
func spareIDs(t *testing.T, cli *client.Client, home string) (gw, hold, net string) {
	t.Helper()
	gw, hold, err := SpareOf(context.Background(), cli, home)
	if err != nil || gw == "" || hold == "" {
		t.Fatalf("no spare made: %s %s %v", gw, hold, err)
	}
	info, err := cli.ContainerInspect(context.Background(), gw)
	if err != nil {
		t.Fatal(err)
	}
	return gw, hold, info.Config.Labels[LabelSpareNet]
}

// claimChild is the claimer TestEgressSpareClaimerKilled kills: it claims
// the home's spare and stops for good at the step it was given, once it has
// said so on stdout.
func claimChild(t *testing.T, spec string) {
	f := strings.Split(spec, "\n")
	cli, err := Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pol, _ := egress.ParsePolicy([]string{"api.allowed.test"}, true)
	s := SpareSpec{Home: f[0], Upstream: f[1], onStep: func(step string) {
		if step == f[2] {
			fmt.Println(step)
			time.Sleep(time.Hour) // killed here
		}
	}}
	gw, err := ClaimSpare(context.Background(), cli, s, EgressSpec{Policy: pol, Upstream: s.Upstream, Session: NewSession(), Name: "egress-probe", Log: os.Stderr})
	fmt.Printf("the claim ended before %q: %v %v\n", f[2], gw != nil, err)
}

// Two sessions racing for one spare: one gets it, the others find none.
func TestEgressSpareRace(t *testing.T) {
	cli, _ := dockerAndProbe(t)
	in := testInternet(t, cli)
	s := prepared(t, cli, in.Network)
	pol, _ := egress.ParsePolicy([]string{"api.allowed.test"}, true)
	gws, errs := claimsTogether(t, cli, s, pol, 4)
	got := 0
	for i, gw := range gws {
		if errs[i] != nil {
			t.Errorf("claim %d: %v", i, errs[i])
		}
		if gw != nil {
			got++
			defer gw.Stop(context.Background())
		}
	}
	if got != 1 {
		t.Fatalf("%d sessions claimed the one spare, want 1", got)
	}
}

// A spare not claimed within its age exits, and the engine removes it; a
// spare made for another upstream network is not claimed, and the next
// preparation replaces it.
func TestEgressSpareStale(t *testing.T) {
	cli, _ := dockerAndProbe(t)
	in := testInternet(t, cli)
	staticGateway(t)
	ctx := context.Background()
	s := SpareSpec{Home: t.TempDir(), Upstream: in.Network, MaxAge: 3 * time.Second}
	t.Cleanup(func() { removeSpareOf(t, cli, s.Home) })
	if err := PrepareSpare(ctx, cli, s); err != nil {
		t.Fatal(err)
	}
	gwID, holdID, netID := spareIDs(t, cli, s.Home)
	if !goneWithin(cli, time.Minute, gwID, holdID) {
		t.Fatalf("an expired spare is still there")
	}
	// Its network (removed once it is a minute old, or its maker gone)
	// does not stop the next.
	s.MaxAge = 0
	if err := PrepareSpare(ctx, cli, s); err != nil {
		t.Fatal(err)
	}
	old, _, _ := SpareOf(ctx, cli, s.Home)
	if old == "" {
		t.Fatal("no new spare after an expired one")
	}
	if info, err := cli.ContainerInspect(ctx, old); err != nil || info.Config.Labels[LabelSpareNet] == netID {
		t.Fatalf("no new spare after an expired one: %v", err)
	}
	info, _ := cli.ContainerInspect(ctx, old)
	oldNet := info.Config.Labels[LabelSpareNet]

	other := s
	other.Upstream = "bridge"
	pol, _ := egress.ParsePolicy([]string{"api.allowed.test"}, true)
	if gw, err := claimFor(t, cli, other, pol, &eventLog{}); gw != nil || err != nil {
		gw.Stop(ctx)
		t.Fatalf("a spare for another upstream network was claimed: %v", err)
	}
	if err := PrepareSpare(ctx, cli, other); err != nil {
		t.Fatal(err)
	}
	if !gone(cli, old) {
		t.Errorf("the spare of another upstream network was not replaced")
	}
	if _, err := cli.NetworkInspect(ctx, oldNet, network.InspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("the replaced spare's network is left: %v", err)
	}
	if g, _, _ := SpareOf(ctx, cli, s.Home); g == "" || g == old {
		t.Errorf("no new spare")
	}
}

// goneWithin waits up to d for every container of ids to be gone, and
// says whether they are.
func goneWithin(cli *client.Client, d time.Duration, ids ...string) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(250 * time.Millisecond) {
		all := true
		for _, id := range ids {
			all = all && gone(cli, id)
		}
		if all || !time.Now().Before(deadline) {
			return all
		}
	}
}

func gone(cli *client.Client, id string) bool {
	_, err := cli.ContainerInspect(context.Background(), id)
	return cerrdefs.IsNotFound(err)
}

// readySpares are the home's spares waiting for a claim: gateway ID to
// holder ID, both running under a spare's names on one network.
func readySpares(t *testing.T, cli *client.Client, home string) map[string]string {
	t.Helper()
	cs, err := cli.ContainerList(context.Background(), container.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelSpareHome+"="+homeHash(home)))})
	if err != nil {
		t.Fatal(err)
	}
	gws, holds := map[string]string{}, map[string]string{} // network: container
	for _, c := range cs {
		if len(c.Names) == 0 || !strings.HasPrefix(strings.TrimPrefix(c.Names[0], "/"), "mcpcage-spare-") || c.State != "running" {
			continue
		}
		if c.Labels[LabelSpareRole] == "holder" {
			holds[c.Labels[LabelSpareNet]] = c.ID
		} else {
			gws[c.Labels[LabelSpareNet]] = c.ID
		}
	}
	ready := map[string]string{}
	for n, g := range gws {
		if h := holds[n]; h != "" {
			ready[g] = h
		}
	}
	return ready
}

// waitSpares polls until cond holds of the home's ready spares, for up to
// ninety seconds (the engine is shared and slow).
func waitSpares(t *testing.T, cli *client.Client, home, what string, cond func(map[string]string) bool) map[string]string {
	t.Helper()
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if r := readySpares(t, cli, home); cond(r) {
			return r
		}
	}
	t.Fatalf("waited ninety seconds for %s; ready: %v", what, readySpares(t, cli, home))
	return nil
}

// liveSession starts a session's own gateway for the home and keeps its
// spares as Up does (at once here); the test's end stops it.
func liveSession(t *testing.T, cli *client.Client, s SpareSpec, pol egress.Policy) *Gateway {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gw, err := StartGateway(ctx, cli, EgressSpec{Policy: pol, Upstream: s.Upstream, Session: NewSession(), Name: "egress-probe", Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Stop(context.Background()) })
	gw.prepareNext(s, 0, os.Stderr)
	return gw
}

// Two live sessions of a home keep a spare each: two starts together then
// both claim one, each a different one (an AI client restarting its
// servers). With one spare a home, the second paid the full start.
func TestEgressSparesTwoSessions(t *testing.T) {
	cli, _ := dockerAndProbe(t)
	in := testInternet(t, cli)
	staticGateway(t)
	s := SpareSpec{Home: t.TempDir(), Upstream: in.Network}
	t.Cleanup(func() { removeSpareOf(t, cli, s.Home) })
	pol, _ := egress.ParsePolicy([]string{"api.allowed.test"}, true)
	liveSession(t, cli, s, pol)
	liveSession(t, cli, s, pol)
	ready := waitSpares(t, cli, s.Home, "a spare for each of two live sessions", func(r map[string]string) bool { return len(r) >= 2 })
	gws, errs := claimsTogether(t, cli, s, pol, 2)
	seen := map[string]bool{}
	for i, gw := range gws {
		if errs[i] != nil || gw == nil {
			t.Fatalf("claim %d of two found no spare (%v); there were %d", i, errs[i], len(ready))
		}
		defer gw.Stop(context.Background())
		if ready[gw.id] == "" || ready[gw.id] != gw.holder {
			t.Errorf("claim %d took %s/%s, not one of the ready spares %v", i, gw.id, gw.holder, ready)
		}
		if seen[gw.id] {
			t.Errorf("two claims took the spare %s", gw.id)
		}
		seen[gw.id] = true
	}
}

// A live session replaces the spare it made before that spare would be
// too old to claim: a new one is ready and the old one is removed (not
// left to expire), with its network.
func TestEgressSpareRenewed(t *testing.T) {
	cli, _ := dockerAndProbe(t)
	in := testInternet(t, cli)
	staticGateway(t)
	s := SpareSpec{Home: t.TempDir(), Upstream: in.Network, Renew: 5 * time.Second}
	t.Cleanup(func() { removeSpareOf(t, cli, s.Home) })
	pol, _ := egress.ParsePolicy([]string{"api.allowed.test"}, true)
	liveSession(t, cli, s, pol)
	var first string
	for g := range waitSpares(t, cli, s.Home, "the session's spare", func(r map[string]string) bool { return len(r) == 1 }) {
		first = g
	}
	info, err := cli.ContainerInspect(context.Background(), first)
	if err != nil {
		t.Fatal(err)
	}
	firstNet := info.Config.Labels[LabelSpareNet]
	waitSpares(t, cli, s.Home, "the spare renewed", func(r map[string]string) bool {
		return len(r) == 1 && r[first] == "" && gone(cli, first)
	})
	if _, err := cli.NetworkInspect(context.Background(), firstNet, network.InspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("the replaced spare's network is left: %v", err)
	}
	gw, err := claimFor(t, cli, s, pol, &eventLog{})
	if err != nil || gw == nil {
		t.Fatalf("the renewed spare was not claimed: %v %v", gw, err)
	}
	gw.Stop(context.Background())
}

// Only a slot's own names are the slot's: a claimed (renamed) or retired
// spare, another home's, an older build's single spare and a slot out of
// range are none.
func TestSpareSlotOf(t *testing.T) {
	home, other := t.TempDir(), t.TempDir()
	for slot := range SpareSlots {
		gw, hold, _ := spareNames(home, slot)
		if got := spareSlotOf(home, "/"+gw); got != slot {
			t.Errorf("%s: slot %d, want %d", gw, got, slot)
		}
		if got := spareSlotOf(home, hold); got != slot {
			t.Errorf("%s: slot %d, want %d", hold, got, slot)
		}
		if og, _, _ := spareNames(other, slot); spareSlotOf(home, og) != -1 {
			t.Errorf("another home's %s taken for a slot", og)
		}
	}
	base := spareBase(home)
	for _, name := range []string{
		base + "retired-0a1b2c3d-egress", base + "01-egress", base + "4-hold", base + "-1-hold",
		base + "0-net", base + "egress", "mcpcage-egress-probe-a1b2c3-egress", base + "0",
	} {
		if got := spareSlotOf(home, name); got != -1 {
			t.Errorf("%s: slot %d, want none", name, got)
		}
	}
}
