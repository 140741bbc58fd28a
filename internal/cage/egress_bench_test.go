package cage

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpcage/mcpcage/internal/cage/cagetest"
	"github.com/mcpcage/mcpcage/internal/egress"
)

// benchEnv builds what the egress benchmarks need: the probe, a static
// mcpcage for the gateway, the fake host and its CA.
func benchEnv(b *testing.B) (*cagetest.Internet, string, string) {
	b.Helper()
	ctx := context.Background()
	cli, err := Connect(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cli.Close() })
	// A tag of its own: a test run in another checkout replaces the
	// shared one with its probe and removes the old one.
	tag := "mcpcage-test/bench-probe:" + strconv.Itoa(os.Getpid())
	img, err := cagetest.BuildProbeImageAs(ctx, cli, tag)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = cli.ImageRemove(context.Background(), tag, image.RemoveOptions{}) })
	dir := b.TempDir()
	bin := filepath.Join(dir, "mcpcage")
	if err := cagetest.BuildStatic(ctx, "github.com/mcpcage/mcpcage/cmd/mcpcage", bin); err != nil {
		b.Fatal(err)
	}
	b.Setenv(EnvGatewayBinary, bin)
	in, err := cagetest.NewInternet(ctx, cli, map[string][]string{"a": {"api.allowed.test"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(in.Close)
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, in.CA, 0o644); err != nil {
		b.Fatal(err)
	}
	return in, img, ca
}

// benchSession starts the probe (behind a gateway when pol is not nil, else
// with spec as given), lists its tools, and returns the session and a stop.
// With spare, the gateway is a spare of its home, claimed, or (none left)
// one made for it, as a session's start does; claimed says which.
func benchSession(spec Spec, pol *egress.Policy, upstream string, spare *SpareSpec) (cs *mcp.ClientSession, stop func(), claimed bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := Connect(ctx)
	if err != nil {
		return nil, nil, false, err
	}
	var gw *Gateway
	var c *Cage
	stop = func() {
		if cs != nil {
			cs.Close()
		}
		if c != nil {
			c.Stop(context.Background())
		}
		if gw != nil {
			gw.Stop(context.Background())
		}
		cli.Close()
	}
	fail := func(err error) (*mcp.ClientSession, func(), bool, error) {
		stop()
		return nil, nil, false, err
	}
	if pol != nil {
		spec.Session = NewSession()
		es := EgressSpec{Policy: *pol, Upstream: upstream, Session: spec.Session, Name: spec.Name}
		if spare != nil {
			gw, err = ClaimSpare(ctx, cli, *spare, es)
			claimed = gw != nil
		}
		if err == nil && gw == nil {
			gw, err = StartGateway(ctx, cli, es)
		}
		if err != nil {
			return fail(err)
		}
		spec.Network, spec.DNS, spec.Env = gw.Network(), []string{gw.Addr().String()}, append(spec.Env, gw.Env()...)
	}
	if c, err = Start(ctx, cli, spec); err != nil {
		return fail(err)
	}
	go io.Copy(io.Discard, c.Stderr())
	if cs, err = mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: io.NopCloser(c.Stdout()), Writer: c.Stdin()}, nil); err != nil {
		return fail(err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		return fail(err)
	}
	return cs, stop, claimed, nil
}

// benchSpares leaves n spares ready in the home, as n live sessions leave
// them (each counted as live while the spares are made), and gives the
// engine 2 s to settle, as spares made during earlier sessions would have.
func benchSpares(b *testing.B, cli *client.Client, s SpareSpec, n int) {
	for range n {
		release, err := registerSession(s.Home)
		if err != nil {
			b.Fatal(err)
		}
		defer release()
	}
	for range n {
		if err := PrepareSpare(context.Background(), cli, s); err != nil {
			b.Fatal(err)
		}
	}
	sp, err := readSpares(context.Background(), cli, s.Home, false)
	if err != nil {
		b.Fatal(err)
	}
	ready := 0
	for i := range sp {
		if !sp[i].empty() {
			ready++
		}
	}
	if ready != n {
		b.Fatalf("%d spares ready, want %d", ready, n)
	}
	time.Sleep(2 * time.Second)
}

// BenchmarkEgressStart: the time from nothing to the first tools/list
// answer, for the same cage with no network, behind a spare gateway
// claimed (what a start with --allow-host is when an earlier session of
// the same MCPCAGE_HOME made one: every start but the first), behind a
// gateway made for it (the first start), and two sessions started
// together (an AI client starting its servers): the later of the two to
// answer, with the one spare a home had before spares in slots (the
// other makes its gateway) and with the two spares two live sessions now
// leave. The variants start in turns (which goes first rotates) so that
// the machine's noise falls on all alike. Spares are made untimed before
// their start. It reports the median of each and what the gateway adds
// over no network.
//
// One more variant is no gateway at all: the cage on an internal network
// made for it at its start, as createCageNetwork makes one. That is the
// least any first start that makes its session's network pays, however its
// gateway is started (ms-added-floor): the engine's network create and a
// container's interface on a bridge.
func BenchmarkEgressStart(b *testing.B) {
	in, img, _ := benchEnv(b)
	pol, _ := egress.ParsePolicy([]string{"api.allowed.test"}, true)
	spare := SpareSpec{Home: b.TempDir(), Upstream: in.Network}
	cli, err := Connect(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	defer RemoveSpare(context.Background(), cli, spare.Home)
	const bare, claimed, first, pairOne, pairTwo, floor, variants = 0, 1, 2, 3, 4, 5, 6
	times := make([][]time.Duration, variants)
	pairClaims := [variants]int{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := 0; k < variants; k++ {
			v := (i + k) % variants
			var p *egress.Policy
			var sp *SpareSpec
			starts := 1
			b.StopTimer()
			switch v {
			case claimed:
				benchSpares(b, cli, spare, 1)
				p, sp = &pol, &spare
			case first:
				p = &pol
			case pairOne, pairTwo:
				benchSpares(b, cli, spare, v-pairOne+1)
				p, sp, starts = &pol, &spare, 2
			}
			b.StartTimer()
			t0 := time.Now()
			if v == floor {
				took, err := floorStart(cli, Spec{Name: "bench-start", Image: img})
				if err != nil {
					b.Fatal(err)
				}
				times[v] = append(times[v], took)
				continue
			}
			var wg sync.WaitGroup
			stops := make([]func(), starts)
			took := make([]time.Duration, starts)
			claims := make([]bool, starts)
			errs := make([]error, starts)
			for j := range starts {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, stops[j], claims[j], errs[j] = benchSession(Spec{Name: "bench-start", Image: img}, p, in.Network, sp)
					took[j] = time.Since(t0)
				}()
			}
			wg.Wait()
			b.StopTimer()
			for j := range starts {
				if errs[j] != nil {
					b.Fatal(errs[j])
				}
				stops[j]()
				if claims[j] {
					pairClaims[v]++
				}
			}
			if v == claimed && !claims[0] {
				b.Fatal("the spare made for it was not claimed")
			}
			if err := RemoveSpare(context.Background(), cli, spare.Home); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			times[v] = append(times[v], slices.Max(took))
		}
	}
	mb, mc, mf := median(times[bare]), median(times[claimed]), median(times[first])
	b.ReportMetric(float64(mb.Milliseconds()), "ms-no-network")
	b.ReportMetric(float64(mc.Milliseconds()), "ms-allow-host")
	b.ReportMetric(float64((mc - mb).Milliseconds()), "ms-added")
	b.ReportMetric(float64(mf.Milliseconds()), "ms-allow-host-first")
	b.ReportMetric(float64((mf - mb).Milliseconds()), "ms-added-first")
	m1, m2 := median(times[pairOne]), median(times[pairTwo])
	b.ReportMetric(float64(m1.Milliseconds()), "ms-pair-second-1spare")
	b.ReportMetric(float64(m2.Milliseconds()), "ms-pair-second-2spares")
	b.ReportMetric(float64((m2 - mb).Milliseconds()), "ms-added-pair")
	mn := median(times[floor])
	b.ReportMetric(float64(mn.Milliseconds()), "ms-own-network-no-gateway")
	b.ReportMetric(float64((mn - mb).Milliseconds()), "ms-added-floor")
	// How many of the pairs' starts found a spare (of 2 a pair).
	b.ReportMetric(float64(pairClaims[pairOne])/float64(b.N), "claims/pair-1spare")
	b.ReportMetric(float64(pairClaims[pairTwo])/float64(b.N), "claims/pair-2spares")
}

// floorStart times a start of spec on an internal network made for it
// then, with no gateway: from nothing to the first tools/list answer.
// The network is removed after, untimed.
func floorStart(cli *client.Client, spec Spec) (time.Duration, error) {
	ctx := context.Background()
	t0 := time.Now()
	labels := Self().Labels() // reaped as any session's network if this process dies
	labels[LabelEgress] = "1"
	name := "mcpcage-bench-floor-" + randomHex(3) + "-net"
	id, _, err := createCageNetwork(ctx, cli, name, labels)
	if err != nil {
		return 0, err
	}
	defer cli.NetworkRemove(ctx, id)
	spec.Network = name
	_, stop, _, err := benchSession(spec, nil, "", nil)
	took := time.Since(t0)
	if err != nil {
		return 0, err
	}
	stop()
	return took, nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchmarkEgressDownload: a 64 MiB download by the caged probe from the
// test's fake host, through the gateway and directly (the cage on the
// host's own network: container to container). Compare MB/s of the two in
// one run; the machine is shared and noisy.
func BenchmarkEgressDownload(b *testing.B) {
	in, img, ca := benchEnv(b)
	pol, _ := egress.ParsePolicy([]string{"api.allowed.test"}, true)
	const size = 64 << 20
	base := Spec{Name: "bench-download", Image: img, Env: []string{"SSL_CERT_FILE=/etc/mcpcage/ca/test.pem"},
		Mounts: []Mount{{Source: ca, Target: "/etc/mcpcage/ca/test.pem"}}}
	for _, bc := range []struct {
		name string
		pol  *egress.Policy
	}{{"direct", nil}, {"gateway", &pol}} {
		b.Run(bc.name, func(b *testing.B) {
			spec := base
			if bc.pol == nil {
				spec.Network = in.Network
			}
			cs, stop, _, err := benchSession(spec, bc.pol, in.Network, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer stop()
			b.SetBytes(size)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "probe", Arguments: map[string]any{"check": "download", "target": "https://api.allowed.test/bytes/" + strconv.Itoa(size)}})
				if err != nil || len(res.Content) != 1 {
					b.Fatalf("download: %v", err)
				}
				if tc, _ := res.Content[0].(*mcp.TextContent); tc == nil || !strings.Contains(tc.Text, `"detail":"`+strconv.Itoa(size)+`"`) {
					b.Fatalf("download: %v", res.Content[0])
				}
			}
		})
	}
}
