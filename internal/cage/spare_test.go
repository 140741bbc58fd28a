package cage

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
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
	if st, err := inspectSpare(context.Background(), cli, s.Home); err != nil || st.gw != nil || st.hold != nil {
		t.Fatalf("the spare's names are still taken after the claim: %+v %v", st, err)
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

// Two sessions racing for one spare: one gets it, the others find none.
func TestEgressSpareRace(t *testing.T) {
	cli, _ := dockerAndProbe(t)
	in := testInternet(t, cli)
	s := prepared(t, cli, in.Network)
	pol, _ := egress.ParsePolicy([]string{"api.allowed.test"}, true)
	const n = 4
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
	st, err := inspectSpare(ctx, cli, s.Home)
	if err != nil || st.gw == nil || st.hold == nil {
		t.Fatalf("no spare made: %+v %v", st, err)
	}
	gwID, holdID, netID := st.gw.ID, st.hold.ID, st.gw.Config.Labels[LabelSpareNet]
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if gone(cli, gwID) && gone(cli, holdID) {
			break
		}
	}
	if !gone(cli, gwID) || !gone(cli, holdID) {
		t.Fatalf("an expired spare is still there")
	}
	// Its network (removed once it is a minute old, or its maker gone)
	// does not stop the next.
	s.MaxAge = 0
	if err := PrepareSpare(ctx, cli, s); err != nil {
		t.Fatal(err)
	}
	if st, _ := inspectSpare(ctx, cli, s.Home); st.gw == nil || st.gw.Config.Labels[LabelSpareNet] == netID {
		t.Fatalf("no new spare after an expired one")
	}

	other := s
	other.Upstream = "bridge"
	pol, _ := egress.ParsePolicy([]string{"api.allowed.test"}, true)
	if gw, err := claimFor(t, cli, other, pol, &eventLog{}); gw != nil || err != nil {
		gw.Stop(ctx)
		t.Fatalf("a spare for another upstream network was claimed: %v", err)
	}
	st, _ = inspectSpare(ctx, cli, s.Home)
	if st.gw == nil {
		t.Fatal("no spare")
	}
	old := st.gw.ID
	oldNet := st.gw.Config.Labels[LabelSpareNet]
	if err := PrepareSpare(ctx, cli, other); err != nil {
		t.Fatal(err)
	}
	if !gone(cli, old) {
		t.Errorf("the spare of another upstream network was not replaced")
	}
	if _, err := cli.NetworkInspect(ctx, oldNet, network.InspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("the replaced spare's network is left: %v", err)
	}
	st, _ = inspectSpare(ctx, cli, s.Home)
	if st.gw == nil || st.gw.ID == old {
		t.Errorf("no new spare")
	}
}

func gone(cli *client.Client, id string) bool {
	_, err := cli.ContainerInspect(context.Background(), id)
	return cerrdefs.IsNotFound(err)
}
