package cage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/mcpcage/mcpcage/internal/egress"
)

// A spare is the egress half of a cage made ahead of its session: a cage
// network, a gateway on it that listens on nothing yet, and a holder
// container on it alone, whose network namespace a cage joins
// (--network container:HOLDER). A session with --allow-host claims the
// spare of its MCPCAGE_HOME, if there is one, instead of making its own,
// and once its cage runs makes the next one in the background. Starting a
// gateway and a container on a network is what took the seconds.
//
// What keeps it safe:
//   - one per MCPCAGE_HOME: the gateway's and holder's names are the home's
//     (the engine refuses a second container of a name);
//   - used once: a session claims it by renaming both to its own names,
//     under a lock file in MCPCAGE_HOME that every claim takes, so two
//     sessions never both find it; a spare that does not match the session
//     (another upstream network, another mcpcage build, other CA files)
//     is not claimed;
//   - the policy comes at the claim: the gateway reads it (an egress.Claim
//     line) from its stdin and only then listens, so an unclaimed gateway
//     decides nothing and reports nothing;
//   - limited: both exit after SpareAge unclaimed and the engine removes
//     them (AutoRemove); a session does not claim one about to expire;
//   - gone with its session: both are StdinOnce and the session holds their
//     stdin, so when the session's mcpcage ends, even by SIGKILL, the engine
//     closes their stdin and they exit and are removed; the session's own
//     stop removes them and the network as for any gateway. What a killed
//     process leaves (the network, a half-made spare) the next start reaps.
//
// A spare's network and containers do not carry the owner labels: the
// maker is usually gone by the time its spare is used, and any mcpcage's
// Reap (an older build's too) removes what carries the labels of a process
// that is gone. Who made it is LabelSpareMaker, for reapSpares.

// Labels of a spare's network and containers.
const (
	LabelSpare     = "io.mcpcage.spare"      // the spare's key: what a session must match to claim it
	LabelSpareHome = "io.mcpcage.spare.home" // its MCPCAGE_HOME, hashed
	LabelSpareNet  = "io.mcpcage.spare.net"  // the cage network's ID (gateway and holder)
	LabelSpareRole = "io.mcpcage.spare.role" // gateway or holder
	// LabelSpareMaker is the process that made the spare: its owner
	// labels' host, boot id, pid, start time and pid namespace, joined by
	// "|" (older spares have no pid namespace).
	LabelSpareMaker = "io.mcpcage.spare.maker"
)

func makerLabel() string {
	o := Self()
	return strings.Join([]string{o.Host, o.Boot, strconv.Itoa(o.PID), o.Start, o.PIDNS}, "|")
}

// spareMaker reads LabelSpareMaker (an Owner that is unknown when absent).
func spareMaker(labels map[string]string) Owner {
	f := strings.Split(labels[LabelSpareMaker], "|")
	if len(f) != 4 && len(f) != 5 {
		return Owner{}
	}
	pid, _ := strconv.Atoi(f[2])
	o := Owner{Host: f[0], Boot: f[1], PID: pid, Start: f[3]}
	if len(f) == 5 {
		o.PIDNS = f[4]
	}
	return o
}

// SpareAge is how long a spare waits for a session: then its gateway and
// holder exit, and the engine removes them.
const SpareAge = 10 * time.Minute

// SpareSpec says whose spare: the state directory (one spare each, its
// lock file there) and the upstream network.
type SpareSpec struct {
	Home     string
	Upstream string // "": Docker's default bridge
	// MaxAge is how long the spare waits for a session (0: SpareAge).
	MaxAge time.Duration
}

func (s SpareSpec) maxAge() time.Duration {
	if s.MaxAge > 0 {
		return s.MaxAge
	}
	return SpareAge
}

// claimable is the oldest spare a session claims: one that would expire
// during its claim is left to expire.
func (s SpareSpec) claimable() time.Duration { return s.maxAge() - s.maxAge()/10 }

func (s SpareSpec) upstream() string {
	if s.Upstream == "" {
		return "bridge"
	}
	return s.Upstream
}

// spareNames are the unclaimed spare's container names, and its network's.
func spareNames(home string) (gw, hold, net string) {
	base := "mcpcage-spare-" + homeHash(home)
	return base + "-egress", base + "-hold", base + "-net"
}

func homeHash(home string) string {
	abs, err := filepath.Abs(home)
	if err != nil {
		abs = home
	}
	sum := sha256.Sum256([]byte(abs))
	return hex.EncodeToString(sum[:])[:12]
}

// spareKey is what a spare was made for: the home, the host, the upstream
// network, the gateway binary and the CA files it mounts (by path, size and
// time). A session claims only a spare of its own key.
func spareKey(s SpareSpec, bin string) (string, error) {
	h := sha256.New()
	host, _ := os.Hostname()
	fmt.Fprintf(h, "home %s\nhost %s\nupstream %s\n", homeHash(s.Home), host, s.upstream())
	files := []string{bin}
	for _, m := range gatewayRoots() {
		files = append(files, m.Source+" "+m.Target)
	}
	for _, f := range files {
		path, _, _ := strings.Cut(f, " ")
		st, err := os.Stat(path)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "file %s %d %d\n", f, st.Size(), st.ModTime().UnixNano())
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// spareState is what the engine has under a home's spare names.
type spareState struct {
	gw, hold *container.InspectResponse // nil: none
}

func inspectSpare(ctx context.Context, cli *client.Client, home string) (spareState, error) {
	gwName, holdName, _ := spareNames(home)
	var st spareState
	for _, x := range []struct {
		name string
		dst  **container.InspectResponse
	}{{gwName, &st.gw}, {holdName, &st.hold}} {
		info, err := cli.ContainerInspect(ctx, x.name)
		if cerrdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return st, fmt.Errorf("cannot inspect the spare %s: %s", x.name, oneLine(err))
		}
		*x.dst = &info
	}
	return st, nil
}

// claimable says whether st is a whole spare of key, running, young
// enough to claim.
func (st spareState) claimable(key string, maxAge time.Duration) bool {
	if st.gw == nil || st.hold == nil {
		return false
	}
	for _, c := range []*container.InspectResponse{st.gw, st.hold} {
		if c.Config == nil || c.Config.Labels[LabelSpare] != key || c.State == nil || !c.State.Running {
			return false
		}
		started, err := time.Parse(time.RFC3339Nano, c.State.StartedAt)
		if err != nil || time.Since(started) > maxAge {
			return false
		}
	}
	return st.gw.Config.Labels[LabelSpareNet] != "" && st.gw.Config.Labels[LabelSpareNet] == st.hold.Config.Labels[LabelSpareNet]
}

// ClaimSpare takes the home's spare for a session, hands its gateway the
// session's policy and returns it once it listens: the cage joins
// Gateway.Network. It returns nil and no error when there is no spare to
// take (the session makes its own gateway then). On error nothing of the
// claimed spare is left.
func ClaimSpare(ctx context.Context, cli *client.Client, s SpareSpec, spec EgressSpec) (*Gateway, error) {
	bin, err := GatewayBinary()
	if err != nil {
		return nil, nil
	}
	key, err := spareKey(s, bin)
	if err != nil {
		return nil, nil
	}
	unlock, err := lockSpare(s.Home)
	if err != nil {
		return nil, nil
	}
	st, err := inspectSpare(ctx, cli, s.Home)
	if err != nil || !st.claimable(key, s.claimable()) {
		unlock()
		return nil, nil
	}
	base := "mcpcage-" + strings.ToLower(spec.Name) + "-" + randomHex(3)
	g := &Gateway{cli: cli, id: st.gw.ID, holder: st.hold.ID, netID: st.gw.Config.Labels[LabelSpareNet], events: make(chan struct{})}
	if err := cli.ContainerRename(ctx, st.gw.ID, base+"-egress"); err != nil {
		unlock()
		return nil, nil // still the spare, or gone: not ours either way
	}
	// From here on it is this session's: no other claim can find it.
	renameErr := cli.ContainerRename(ctx, st.hold.ID, base+"-hold")
	unlock()
	fail := func(err error) (*Gateway, error) {
		if g.hijack != nil {
			g.hijack.Close()
		}
		if g.holdConn != nil {
			g.holdConn.Close()
		}
		close(g.events)
		_ = g.remove(ctx)
		return nil, err
	}
	if renameErr != nil {
		return fail(fmt.Errorf("cannot claim the spare's holder: %s", oneLine(renameErr)))
	}
	if ni, err := cli.NetworkInspect(ctx, g.netID, network.InspectOptions{}); err == nil {
		g.netName = ni.Name
	} else {
		return fail(fmt.Errorf("cannot inspect the spare's network: %s", oneLine(err)))
	}
	hj, err := cli.ContainerAttach(ctx, g.holder, container.AttachOptions{Stream: true, Stdin: true})
	if err != nil {
		return fail(fmt.Errorf("cannot attach to the spare's holder: %s", oneLine(err)))
	}
	g.holdConn = hj.Conn
	if _, err := hj.Conn.Write([]byte("claimed\n")); err != nil {
		return fail(fmt.Errorf("cannot claim the spare's holder: %v", err))
	}
	out, err := g.attach(ctx, spec.Log, true)
	if err != nil {
		return fail(err)
	}
	claim, _ := json.Marshal(egress.Claim{Args: spec.Policy.Args()})
	if _, err := g.stdin.Write(append(claim, '\n')); err != nil {
		return fail(fmt.Errorf("cannot hand the spare's gateway its policy: %v", err))
	}
	if err := g.awaitReady(ctx, out, spec.Events); err != nil {
		if g.holdConn != nil {
			g.holdConn.Close()
		}
		return nil, err
	}
	return g, nil
}

// PrepareSpare makes the home's spare unless a usable one is there (or
// being made by a live process). A stale one (expired, of another key,
// half made by a process that is gone) is removed first. On error or
// cancellation what it made is removed.
func PrepareSpare(ctx context.Context, cli *client.Client, s SpareSpec) error {
	bin, err := GatewayBinary()
	if err != nil {
		return err
	}
	if err := staticELF(bin); err != nil {
		return err
	}
	key, err := spareKey(s, bin)
	if err != nil {
		return err
	}
	unlock, err := lockSpare(s.Home)
	if err != nil {
		return err
	}
	st, err := inspectSpare(ctx, cli, s.Home)
	if err != nil {
		unlock()
		return err
	}
	if st.claimable(key, s.claimable()) || st.beingMade() {
		unlock()
		return nil
	}
	err = st.remove(ctx, cli)
	if err == nil {
		err = removeSpareNetworks(ctx, cli, s.Home, time.Minute)
	}
	unlock()
	if err != nil {
		return err
	}
	img, err := GatewayImage(ctx, cli, bin)
	if err != nil {
		return err
	}
	gwName, holdName, netName := spareNames(s.Home)
	labels := map[string]string{LabelSpareMaker: makerLabel()}
	labels[LabelEgress] = "1"
	labels[LabelSpare] = key
	labels[LabelSpareHome] = homeHash(s.Home)
	var made []string // containers, then the network last
	netID, subnet, err := createCageNetwork(ctx, cli, netName+"-"+randomHex(3), labels)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
		defer cancel()
		for i := len(made) - 1; i >= 0; i-- {
			_ = cli.ContainerRemove(rctx, made[i], container.RemoveOptions{Force: true})
		}
		_ = cli.NetworkRemove(rctx, netID)
		return err
	}
	labels[LabelSpareNet] = netID
	labels[LabelSpareRole] = "gateway"
	cfg, hc := gatewayConfig(img, s.upstream(), labels, []string{"--subnet", subnet, "--wait-claim", s.maxAge().String()})
	spareStdin(cfg, hc)
	c, err := cli.ContainerCreate(ctx, cfg, hc, nil, nil, gwName)
	if err != nil {
		return fail(fmt.Errorf("cannot create the spare's gateway: %s", oneLine(err)))
	}
	made = append(made, c.ID)
	if err := cli.NetworkConnect(ctx, netID, c.ID, nil); err != nil {
		return fail(fmt.Errorf("cannot connect the spare's gateway: %s", oneLine(err)))
	}
	if err := cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		return fail(fmt.Errorf("cannot start the spare's gateway: %s", oneLine(err)))
	}
	info, err := cli.ContainerInspect(ctx, c.ID)
	if err != nil {
		return fail(fmt.Errorf("cannot inspect the spare's gateway: %s", oneLine(err)))
	}
	var addr string
	if info.NetworkSettings != nil {
		for _, es := range info.NetworkSettings.Networks {
			if es != nil && es.NetworkID == netID {
				addr = es.IPAddress
			}
		}
	}
	if addr == "" {
		return fail(errors.New("the spare's gateway has no address on its network"))
	}
	hlabels := make(map[string]string, len(labels))
	for k, v := range labels {
		hlabels[k] = v
	}
	hlabels[LabelSpareRole] = "holder"
	pids := int64(8)
	hcfg := &container.Config{
		Image:      img,
		Entrypoint: []string{"/mcpcage", egress.HoldCommand},
		Cmd:        []string{"--wait-claim", s.maxAge().String()},
		User:       "65534:65534",
		Labels:     hlabels,
	}
	hhc := &container.HostConfig{
		NetworkMode:    container.NetworkMode(netID),
		DNS:            []string{addr},
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges:true"},
		IpcMode:        "private",
		LogConfig:      container.LogConfig{Type: "none"},
		Resources: container.Resources{
			Memory: 16 << 20, MemorySwap: 16 << 20, NanoCPUs: 1e8, PidsLimit: &pids,
			Ulimits: []*container.Ulimit{{Name: "core", Soft: 0, Hard: 0}},
		},
	}
	spareStdin(hcfg, hhc)
	h, err := cli.ContainerCreate(ctx, hcfg, hhc, nil, nil, holdName)
	if err != nil {
		return fail(fmt.Errorf("cannot create the spare's holder: %s", oneLine(err)))
	}
	made = append(made, h.ID)
	if err := cli.ContainerStart(ctx, h.ID, container.StartOptions{}); err != nil {
		return fail(fmt.Errorf("cannot start the spare's holder: %s", oneLine(err)))
	}
	if ctx.Err() != nil {
		return fail(ctx.Err())
	}
	return nil
}

// spareStdin makes a spare's container wait on a stdin only its claimer
// attaches to, and closes when that attachment ends; the engine removes it
// when it exits.
func spareStdin(cfg *container.Config, hc *container.HostConfig) {
	cfg.OpenStdin = true
	cfg.StdinOnce = true
	cfg.AttachStdin = true
	hc.AutoRemove = true
}

// beingMade says whether the spare is incomplete and its maker still runs.
func (st spareState) beingMade() bool {
	for _, c := range []*container.InspectResponse{st.gw, st.hold} {
		if c != nil && c.Config != nil && spareMaker(c.Config.Labels).State() == OwnerAlive {
			return st.gw == nil || st.hold == nil || !st.gw.State.Running || !st.hold.State.Running
		}
	}
	return false
}

// remove removes what is under the spare's names, and its network.
func (st spareState) remove(ctx context.Context, cli *client.Client) error {
	var nets []string
	for _, c := range []*container.InspectResponse{st.hold, st.gw} {
		if c == nil {
			continue
		}
		if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("cannot remove the stale spare %s: %s", strings.TrimPrefix(c.Name, "/"), oneLine(err))
		}
		if c.Config != nil && c.Config.Labels[LabelSpareNet] != "" {
			nets = append(nets, c.Config.Labels[LabelSpareNet])
		}
	}
	for _, n := range nets {
		if err := cli.NetworkRemove(ctx, n); err != nil && !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("cannot remove the stale spare's network: %s", oneLine(err))
		}
	}
	return nil
}

// removeSpareNetworks removes the home's spare networks that no container
// uses and that are older than a minute (one younger may be being made):
// what an expired spare leaves, its containers gone.
func removeSpareNetworks(ctx context.Context, cli *client.Client, home string, minAge time.Duration) error {
	nets, err := cli.NetworkList(ctx, network.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelSpareHome+"="+homeHash(home)))})
	if err != nil {
		return fmt.Errorf("cannot list networks: %s", oneLine(err))
	}
	for _, n := range nets {
		if time.Since(n.Created) < minAge || spareNetworkInUse(ctx, cli, n.ID) {
			continue
		}
		if err := cli.NetworkRemove(ctx, n.ID); err != nil && !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("cannot remove the stale spare's network %s: %s", n.Name, oneLine(err))
		}
	}
	return nil
}

// reapSpares removes spare containers that can serve nobody: not running
// (the engine removes them itself when they exit, so these never started)
// and made more than a minute ago or by a process that is gone; unclaimed
// and past SpareAge (their own limit should have ended them); unclaimed,
// made by a process that is gone, and missing their other half.
func reapSpares(ctx context.Context, cli *client.Client) ([]string, error) {
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelSpare))})
	if err != nil {
		return nil, fmt.Errorf("cannot list containers: %s", oneLine(err))
	}
	me, _ := os.Hostname()
	// The network and role of each running spare container, claimed or
	// not (a claim renames one, then the other).
	running := map[string]bool{}
	for _, c := range cs {
		if c.State == "running" {
			running[c.Labels[LabelSpareNet]+" "+c.Labels[LabelSpareRole]] = true
		}
	}
	var removed []string
	var firstErr error
	for _, c := range cs {
		o := spareMaker(c.Labels)
		if o.Host != me {
			continue
		}
		name := ""
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		unclaimed := strings.HasPrefix(name, "mcpcage-spare-")
		age := time.Since(time.Unix(c.Created, 0))
		gone := o.State() == OwnerGone
		other := "holder"
		if c.Labels[LabelSpareRole] == "holder" {
			other = "gateway"
		}
		stale := c.State != "running" && (gone || age > time.Minute) ||
			unclaimed && age > SpareAge+time.Minute ||
			unclaimed && gone && !running[c.Labels[LabelSpareNet]+" "+other]
		if !stale {
			continue
		}
		if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			if firstErr == nil {
				firstErr = fmt.Errorf("cannot remove the stale spare %s: %s", name, oneLine(err))
			}
			continue
		}
		removed = append(removed, name)
	}
	return removed, firstErr
}

// spareNetworkInUse says whether a spare's network still has a container
// on it: a spare's network outlives its maker.
func spareNetworkInUse(ctx context.Context, cli *client.Client, id string) bool {
	ni, err := cli.NetworkInspect(ctx, id, network.InspectOptions{})
	return err != nil || len(ni.Containers) > 0
}

// prepareNext makes the home's next spare in the background once the
// session's cage has had delay to start; Stop cancels it (removing what it
// made) and waits for it.
func (g *Gateway) prepareNext(s SpareSpec, delay time.Duration, log io.Writer) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	g.spareCancel, g.spareDone = cancel, done
	go func() {
		defer close(done)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return
		}
		if err := PrepareSpare(ctx, g.cli, s); err != nil && ctx.Err() == nil && log != nil {
			fmt.Fprintf(log, "mcpcage: note: the next session's egress gateway could not be made ahead (%s); it will start its own\n", printable(err.Error(), 300))
		}
	}()
}

// SpareOf returns the IDs of the home's unclaimed spare gateway and holder
// ("" for one that is not there).
func SpareOf(ctx context.Context, cli *client.Client, home string) (gateway, holder string, err error) {
	st, err := inspectSpare(ctx, cli, home)
	if st.gw != nil {
		gateway = st.gw.ID
	}
	if st.hold != nil {
		holder = st.hold.ID
	}
	return gateway, holder, err
}

// RemoveSpare removes the home's unclaimed spare and every spare network
// of the home that no container uses.
func RemoveSpare(ctx context.Context, cli *client.Client, home string) error {
	unlock, err := lockSpare(home)
	if err != nil {
		return err
	}
	defer unlock()
	st, err := inspectSpare(ctx, cli, home)
	if err == nil {
		err = st.remove(ctx, cli)
	}
	if err != nil {
		return err
	}
	return removeSpareNetworks(ctx, cli, home, 0)
}
