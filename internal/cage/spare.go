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
	"slices"
	"strconv"
	"strings"
	"sync"
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
// (--network container:HOLDER). A session with --allow-host claims a
// spare of its MCPCAGE_HOME, if there is one, instead of making its own.
// Starting a gateway and a container on a network is what took the seconds.
//
// A home has SpareSlots slots. Each live session with --allow-host keeps a
// spare ready for the next start (spareKeeper): once its cage runs it makes
// one if fewer are ready than there are live sessions (at most
// SpareSlots), and it replaces the one it made before that one is too old
// to claim (SpareSpec.Renew), so N servers started together each find one
// on the next start, and while any session of the home runs there is a
// fresh one. With no session left, the spares wait out their age and go.
//
// What keeps it safe:
//   - at most SpareSlots a home: a spare's gateway and holder are named
//     after the home and the slot (the engine refuses a second container of
//     a name); a spare is made only under its slot's lock file, so two
//     makers never build in one slot;
//   - used once: a session claims one by attaching to both (so its end
//     ends them) and then renaming both to its own names,
//     under a lock file in MCPCAGE_HOME that every claim and every check
//     takes (held from the choice to the renames), so no two claims take
//     the same spare; a spare that does not match the session (another
//     upstream network, another mcpcage build, other CA files), or whose
//     slot's maker is still at work, is not claimed;
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

// SpareSlots is how many spares a home keeps at most. Each takes an
// internal network from the engine's address pools (about 30 with
// Docker's defaults, shared with every other network of the machine) and
// two idle containers; an AI client starts a handful of servers at once.
const SpareSlots = 4

// SpareSpec says whose spares: the state directory (its lock files there)
// and the upstream network.
type SpareSpec struct {
	Home     string
	Upstream string // "": Docker's default bridge
	// MaxAge is how long a spare waits for a session (0: SpareAge).
	MaxAge time.Duration
	// Renew is the age at which a live session replaces the spare it made
	// (0: four fifths of MaxAge, 8 minutes), before it is too old to claim.
	Renew time.Duration
	// Want is how many spares to have ready at least, live sessions or
	// not (PrepareSpares); 0: one for each live session.
	Want int
	// onStep, for tests, hears each step of a claim as it is done.
	onStep func(step string)
}

func (s SpareSpec) step(name string) {
	if s.onStep != nil {
		s.onStep(name)
	}
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

func (s SpareSpec) renew() time.Duration {
	if s.Renew > 0 {
		return s.Renew
	}
	return s.maxAge() * 4 / 5
}

// every is how often a live session looks at the home's spares: often
// enough that its own is replaced soon after it is due (20 s of 8 min).
func (s SpareSpec) every() time.Duration { return max(s.renew()/24, time.Second) }

func (s SpareSpec) upstream() string {
	if s.Upstream == "" {
		return "bridge"
	}
	return s.Upstream
}

// spareNames are a slot's unclaimed spare's container names, and its
// network's (which gets a suffix).
func spareNames(home string, slot int) (gw, hold, net string) {
	base := spareBase(home) + strconv.Itoa(slot)
	return base + "-egress", base + "-hold", base + "-net"
}

func spareBase(home string) string { return "mcpcage-spare-" + homeHash(home) + "-" }

// spareSlotOf is the slot of an unclaimed spare's container name, or -1
// (claimed: renamed; or not a spare of this build's names).
func spareSlotOf(home, name string) int {
	rest, ok := strings.CutPrefix(strings.TrimPrefix(name, "/"), spareBase(home))
	if !ok {
		return -1
	}
	n, role, ok := strings.Cut(rest, "-")
	slot, err := strconv.Atoi(n)
	if !ok || err != nil || slot < 0 || slot >= SpareSlots || strconv.Itoa(slot) != n || role != "egress" && role != "hold" {
		return -1
	}
	return slot
}

// spareLocks is the folder of a home's slot and session lock files.
func spareLocks(home string) (string, error) {
	dir := filepath.Join(home, "egress-spares")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("cannot make %s: %v", dir, err)
	}
	return dir, nil
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

// slot is what the engine has under a slot's names; making says that its
// slot lock is held by another (a maker at work on it).
type slot struct {
	gw, hold *container.Summary // nil: none
	making   bool
	unlock   func() // the slot lock, when this check holds it
}

func (sl *slot) empty() bool { return sl.gw == nil && sl.hold == nil }

// age is the older half's.
func (sl *slot) age() time.Duration {
	var d time.Duration
	for _, c := range []*container.Summary{sl.gw, sl.hold} {
		if c != nil {
			d = max(d, time.Since(time.Unix(c.Created, 0)))
		}
	}
	return d
}

// claimable says whether sl is a whole spare of key, running, young
// enough to claim, and not being made.
func (sl *slot) claimable(key string, maxAge time.Duration) bool {
	if sl.making || sl.gw == nil || sl.hold == nil {
		return false
	}
	for _, c := range []*container.Summary{sl.gw, sl.hold} {
		if c.Labels[LabelSpare] != key || c.State != "running" {
			return false
		}
	}
	return sl.age() <= maxAge && sl.gw.Labels[LabelSpareNet] != "" && sl.gw.Labels[LabelSpareNet] == sl.hold.Labels[LabelSpareNet]
}

// spares are a home's slots.
type spares []slot

// readSpares reads the home's slots; hold lockSpare. With lock, each
// slot's lock is tried too: a slot whose lock another holds is being
// made; the others' locks are held until release.
func readSpares(ctx context.Context, cli *client.Client, home string, lock bool) (spares, error) {
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelSpareHome+"="+homeHash(home)))})
	if err != nil {
		return nil, fmt.Errorf("cannot list the spares: %s", oneLine(err))
	}
	sp := make(spares, SpareSlots)
	for i := range cs {
		c := &cs[i]
		if len(c.Names) == 0 {
			continue
		}
		n := spareSlotOf(home, c.Names[0])
		if n < 0 {
			continue
		}
		if c.Labels[LabelSpareRole] == "holder" {
			sp[n].hold = c
		} else {
			sp[n].gw = c
		}
	}
	if !lock {
		return sp, nil
	}
	dir, err := spareLocks(home)
	if err != nil {
		return nil, err
	}
	for i := range sp {
		unlock, ok, err := tryLock(filepath.Join(dir, "slot-"+strconv.Itoa(i)+".lock"))
		if err != nil {
			sp.release()
			return nil, err
		}
		sp[i].making, sp[i].unlock = !ok, unlock
	}
	return sp, nil
}

// release drops the slot locks held.
func (sp spares) release() {
	for i := range sp {
		if sp[i].unlock != nil {
			sp[i].unlock()
			sp[i].unlock = nil
		}
	}
}

// ClaimSpare takes a spare of the home for a session (the oldest it may
// claim), hands its gateway the session's policy and returns it once it
// listens: the cage joins Gateway.Network. It returns nil and no error when
// there is no spare to take (the session makes its own gateway then). On
// error nothing of the claimed spare is left.
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
	sp, err := readSpares(ctx, cli, s.Home, true)
	if err != nil {
		unlock()
		return nil, nil
	}
	sp.release() // no maker takes a slot lock without the home's lock
	var take *slot
	for i := range sp {
		if sp[i].claimable(key, s.claimable()) && (take == nil || sp[i].age() > take.age()) {
			take = &sp[i]
		}
	}
	if take == nil {
		unlock()
		return nil, nil
	}
	base := "mcpcage-" + strings.ToLower(spec.Name) + "-" + randomHex(3)
	g := &Gateway{cli: cli, id: take.gw.ID, holder: take.hold.ID, netID: take.gw.Labels[LabelSpareNet], events: make(chan struct{})}
	drop := func() {
		if g.hijack != nil {
			g.hijack.Close()
		}
		if g.holdConn != nil {
			g.holdConn.Close()
		}
		close(g.events)
		_ = g.remove(ctx)
	}
	fail := func(err error) (*Gateway, error) {
		drop()
		return nil, err
	}
	// giveUp breaks a spare not yet renamed: the session makes its own.
	giveUp := func() (*Gateway, error) {
		drop()
		unlock()
		return nil, nil
	}
	// Both stdins are attached before either is renamed: from the first
	// attachment on, the end of this process (SIGKILL too) closes them and
	// both exit, so a claimer that dies mid-claim leaves no renamed spare
	// waiting out its age. Until the renames it is still the spare: a
	// failure here breaks it (it is removed) and the session makes its own.
	hj, err := cli.ContainerAttach(ctx, g.holder, container.AttachOptions{Stream: true, Stdin: true})
	if err != nil {
		close(g.events)
		unlock()
		return nil, nil
	}
	g.holdConn = hj.Conn
	hold := hj.Conn
	s.step("attached holder")
	out, err := g.attach(ctx, spec.Log, true)
	if err != nil {
		return giveUp()
	}
	s.step("attached gateway")
	if err := cli.ContainerRename(ctx, take.gw.ID, base+"-egress"); err != nil {
		return giveUp()
	}
	// From here on it is this session's: no other claim can find it.
	s.step("renamed gateway")
	renameErr := cli.ContainerRename(ctx, take.hold.ID, base+"-hold")
	unlock()
	if renameErr != nil {
		return fail(fmt.Errorf("cannot claim the spare's holder: %s", oneLine(renameErr)))
	}
	s.step("renamed holder")
	if ni, err := cli.NetworkInspect(ctx, g.netID, network.InspectOptions{}); err == nil {
		g.netName = ni.Name
	} else {
		return fail(fmt.Errorf("cannot inspect the spare's network: %s", oneLine(err)))
	}
	if _, err := hold.Write([]byte("claimed\n")); err != nil {
		return fail(fmt.Errorf("cannot claim the spare's holder: %v", err))
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

// PrepareSpare makes a spare for the home unless enough are ready or being
// made: one for each live session (spareKeeper), at least one, at most
// SpareSlots. What is stale (expired, of another key, half made by a
// maker no longer at it) is removed first. On error or cancellation what
// it made is removed.
func PrepareSpare(ctx context.Context, cli *client.Client, s SpareSpec) error {
	return (&spareKeeper{cli: cli, s: s}).keep(ctx)
}

// PrepareSpares makes spares for the home until n of them (at most
// SpareSlots) are ready or being made, all at once, and returns how many it
// made: protect --fix makes one for each server it cages with --allow-host,
// so that each finds one when its client restarts. They wait as any spare
// does (SpareAge) and are made by this process, which need not outlive them.
func PrepareSpares(ctx context.Context, cli *client.Client, s SpareSpec, n int) (int, error) {
	s.Want = min(n, SpareSlots)
	made := make([]bool, s.Want)
	errs := make([]error, s.Want)
	var wg sync.WaitGroup
	for i := range s.Want {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := &spareKeeper{cli: cli, s: s}
			errs[i] = k.keep(ctx)
			made[i] = k.mine != ""
		}()
	}
	wg.Wait()
	count := 0
	for _, m := range made {
		if m {
			count++
		}
	}
	return count, errors.Join(errs...)
}

// ReadySpares counts the home's spares that are whole, running and
// unclaimed.
func ReadySpares(ctx context.Context, cli *client.Client, home string) (int, error) {
	sp, err := readSpares(ctx, cli, home, false)
	n := 0
	for _, sl := range sp {
		if sl.gw != nil && sl.hold != nil && string(sl.gw.State) == "running" && string(sl.hold.State) == "running" {
			n++
		}
	}
	return n, err
}

// spareKeeper is a live session's care of the home's spares: one of them
// its own, made by it, replaced when it is due.
type spareKeeper struct {
	cli *client.Client
	s   SpareSpec
	// mine is the gateway ID of the spare it made last (it may have been
	// claimed since).
	mine string
}

// keep is one look at the home's spares: a stale one removed; the
// keeper's own replaced when due; a new one made when fewer than the live
// sessions (at most SpareSlots) are ready or being made and the keeper's
// own is not among them.
func (k *spareKeeper) keep(ctx context.Context) error {
	s, cli := k.s, k.cli
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
	sp, err := readSpares(ctx, cli, s.Home, true)
	if err != nil {
		unlock()
		return err
	}
	defer sp.release()
	// What is removed is first taken off the slots' names under the lock
	// (retire), then removed once it is dropped: a claim never waits on a
	// removal.
	var retired []slot
	done := func(err error) error {
		unlock()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
		defer cancel()
		for i := range retired {
			if rerr := retired[i].remove(rctx, cli); err == nil {
				err = rerr
			}
		}
		retired = nil
		return err
	}
	retire := func(sl *slot) error {
		r, err := sl.retire(ctx, cli, s.Home)
		retired = append(retired, r)
		return err
	}
	live, err := liveSessions(s.Home)
	if err != nil {
		return done(err)
	}
	mine, have := -1, 0
	for i := range sp {
		sl := &sp[i]
		switch {
		case sl.making:
			have++
		case sl.claimable(key, s.claimable()):
			if sl.gw.ID == k.mine {
				mine = i
			}
			if sl.age() < s.renew() {
				have++
			}
		case !sl.empty():
			if err := retire(sl); err != nil {
				return done(err)
			}
		}
	}
	if mine >= 0 && sp[mine].age() < s.renew() {
		return done(nil) // its own is ready
	}
	if have >= min(max(live, s.Want, 1), SpareSlots) {
		// Enough without its own: that one (due) goes.
		if mine >= 0 {
			err = retire(&sp[mine])
		}
		return done(err)
	}
	// A slot: an empty one, else one whose spare is due and has no live
	// maker to replace it, else its own.
	at := -1
	for i := range sp {
		if !sp[i].making && sp[i].empty() {
			at = i
			break
		}
	}
	for i := range sp {
		if at < 0 && i != mine && !sp[i].making && sp[i].gw != nil && sp[i].age() >= s.renew() && spareMaker(sp[i].gw.Labels).State() != OwnerAlive {
			at = i
		}
	}
	if at < 0 {
		at = mine
	}
	if at < 0 {
		return done(nil) // every slot holds a spare its live maker keeps
	}
	if !sp[at].empty() {
		if err := retire(&sp[at]); err != nil {
			return done(err)
		}
		if at == mine {
			mine = -1
		}
	}
	// Only the chosen slot's lock is kept while the spare is made.
	slotUnlock := sp[at].unlock
	sp[at].unlock = nil
	sp.release()
	err = done(nil)
	if err == nil {
		err = removeSpareNetworks(ctx, cli, s.Home, time.Minute)
	}
	if err != nil {
		slotUnlock()
		return err
	}
	id, err := makeSpare(ctx, cli, s, key, bin, at)
	slotUnlock()
	if err != nil {
		return err
	}
	old := k.mine
	k.mine = id
	if mine < 0 {
		return nil
	}
	// The one it replaces goes, unless claimed meanwhile.
	if unlock, err = lockSpare(s.Home); err != nil {
		return err
	}
	now, err := readSpares(ctx, cli, s.Home, false)
	if err == nil && now[mine].gw != nil && now[mine].gw.ID == old {
		err = retire(&now[mine])
	}
	return done(err)
}

// retire takes the slot's spare off the slot's names, under the home's
// lock: no claim finds it any more, and the slot is free. It returns what
// it took, to remove after the lock. A retired spare that is not removed
// (its remover killed) exits at its age, as an unclaimed one does.
func (sl *slot) retire(ctx context.Context, cli *client.Client, home string) (slot, error) {
	var took slot
	base := spareBase(home) + "retired-" + randomHex(4)
	for _, c := range []**container.Summary{&sl.gw, &sl.hold} {
		if *c == nil {
			continue
		}
		name := base + "-egress"
		if (*c).Labels[LabelSpareRole] == "holder" {
			name = base + "-hold"
			took.hold = *c
		} else {
			took.gw = *c
		}
		if err := cli.ContainerRename(ctx, (*c).ID, name); err != nil && !cerrdefs.IsNotFound(err) {
			// What is still under the slot's names is not taken: a
			// claim may find it.
			if took.hold == *c {
				took.hold = nil
			} else {
				took.gw = nil
			}
			return took, fmt.Errorf("cannot retire the spare %s: %s", (*c).ID[:12], oneLine(err))
		}
		*c = nil
	}
	return took, nil
}

// makeSpare makes a spare in the slot (whose lock the caller holds) and
// returns its gateway's ID. On error or cancellation what it made is
// removed.
func makeSpare(ctx context.Context, cli *client.Client, s SpareSpec, key, bin string, slot int) (string, error) {
	img, err := GatewayImage(ctx, cli, bin)
	if err != nil {
		return "", err
	}
	gwName, holdName, netName := spareNames(s.Home, slot)
	labels := map[string]string{LabelSpareMaker: makerLabel()}
	labels[LabelEgress] = "1"
	labels[LabelSpare] = key
	labels[LabelSpareHome] = homeHash(s.Home)
	var made []string // containers, then the network last
	netID, subnet, err := createCageNetwork(ctx, cli, netName+"-"+randomHex(3), labels)
	if err != nil {
		return "", err
	}
	fail := func(err error) (string, error) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
		defer cancel()
		for i := len(made) - 1; i >= 0; i-- {
			_ = cli.ContainerRemove(rctx, made[i], container.RemoveOptions{Force: true})
		}
		_ = cli.NetworkRemove(rctx, netID)
		return "", err
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
	return c.ID, nil
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

// remove removes what is under the slot's names, and its network.
func (sl *slot) remove(ctx context.Context, cli *client.Client) error {
	var nets []string
	for _, c := range []*container.Summary{sl.hold, sl.gw} {
		if c == nil {
			continue
		}
		if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			name := ""
			if len(c.Names) > 0 {
				name = strings.TrimPrefix(c.Names[0], "/")
			}
			return fmt.Errorf("cannot remove the stale spare %s: %s", name, oneLine(err))
		}
		if n := c.Labels[LabelSpareNet]; n != "" && !slices.Contains(nets, n) {
			nets = append(nets, n)
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

// registerSession counts the session among the home's live ones (its lock
// file, held until release; the kernel drops it with the process).
func registerSession(home string) (func(), error) {
	dir, err := spareLocks(home)
	if err != nil {
		return nil, err
	}
	// Under the home's lock: a count (which removes the files no one
	// holds) never sees this one before it is held.
	unlock, err := lockSpare(home)
	if err != nil {
		return nil, err
	}
	defer unlock()
	release, ok, err := tryLock(filepath.Join(dir, "session-"+randomHex(8)+".lock"))
	if err == nil && !ok {
		err = errors.New("a new session's lock file is held by another")
	}
	return release, err
}

// liveSessions counts the home's live sessions, removing the lock files
// of those that are gone. Hold lockSpare.
func liveSessions(home string) (int, error) {
	dir, err := spareLocks(home)
	if err != nil {
		return 0, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("cannot read %s: %v", dir, err)
	}
	n := 0
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "session-") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		unlock, ok, err := tryLock(path)
		if err != nil {
			return 0, err
		}
		if !ok {
			n++
			continue
		}
		os.Remove(path)
		unlock()
	}
	return n, nil
}

// prepareNext keeps the home's spares while the session runs (spareKeeper),
// beginning once its cage has had delay to start; Stop ends it (removing
// what it was making; what it made stays for the next start) and waits
// for it.
func (g *Gateway) prepareNext(s SpareSpec, delay time.Duration, log io.Writer) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	g.spareCancel, g.spareDone = cancel, done
	go func() {
		defer close(done)
		var said string
		note := func(err error) {
			if err != nil && ctx.Err() == nil && log != nil && err.Error() != said {
				said = err.Error()
				fmt.Fprintf(log, "mcpcage: note: the next session's egress gateway could not be made ahead (%s); it will start its own\n", printable(said, 300))
			}
		}
		release, err := registerSession(s.Home)
		if err != nil {
			note(err)
			return
		}
		defer release()
		k := &spareKeeper{cli: g.cli, s: s}
		for wait := delay; ; wait = s.every() {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return
			}
			note(k.keep(ctx))
		}
	}()
}

// SpareOf returns the IDs of the home's unclaimed spare gateway and holder
// in the lowest slot that has either ("" for one that is not there).
func SpareOf(ctx context.Context, cli *client.Client, home string) (gateway, holder string, err error) {
	sp, err := readSpares(ctx, cli, home, false)
	for _, sl := range sp {
		if sl.empty() {
			continue
		}
		if sl.gw != nil {
			gateway = sl.gw.ID
		}
		if sl.hold != nil {
			holder = sl.hold.ID
		}
		break
	}
	return gateway, holder, err
}

// RemoveSpare removes the home's unclaimed spares and every spare network
// of the home that no container uses.
func RemoveSpare(ctx context.Context, cli *client.Client, home string) error {
	unlock, err := lockSpare(home)
	if err != nil {
		return err
	}
	defer unlock()
	sp, err := readSpares(ctx, cli, home, false)
	for i := range sp {
		if err == nil {
			err = sp[i].remove(ctx, cli)
		}
	}
	if err != nil {
		return err
	}
	return removeSpareNetworks(ctx, cli, home, 0)
}
