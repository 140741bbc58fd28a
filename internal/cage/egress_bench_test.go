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

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
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
// with spec as given, on network when that is not ""), lists its tools, and
// returns the session and a stop. Behind a gateway it starts as Up starts
// one: the pipes and the gateway's checks first, then the gateway's
// container once the cage has started (the shim waits for it).
func benchSession(spec Spec, pol *egress.Policy, upstream, network string) (cs *mcp.ClientSession, stop func(), err error) {
	cs, stop, _, _, err = benchSessionAt(spec, pol, upstream, network)
	return cs, stop, err
}

// benchSessionAt is benchSession that also says when the first tools/list
// was answered and when the gateway ran (zero without one).
func benchSessionAt(spec Spec, pol *egress.Policy, upstream, network string) (cs *mcp.ClientSession, stop func(), listed, gwReady time.Time, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := Connect(ctx)
	if err != nil {
		return nil, nil, time.Time{}, time.Time{}, err
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
	fail := func(err error) (*mcp.ClientSession, func(), time.Time, time.Time, error) {
		stop()
		return nil, nil, time.Time{}, time.Time{}, err
	}
	if pol != nil {
		spec.Session = NewSession()
		gw, err = NewGateway(EgressSpec{Policy: *pol, Upstream: upstream, Session: spec.Session, Name: spec.Name})
		if err != nil {
			return fail(err)
		}
		if err := gw.Start(ctx, cli); err != nil {
			return fail(err)
		}
		spec.Egress, spec.Env = gw.Cage(), append(spec.Env, gw.Env()...)
	}
	var tweak func(*container.Config, *container.HostConfig)
	if network != "" {
		tweak = func(_ *container.Config, hc *container.HostConfig) { hc.NetworkMode = container.NetworkMode(network) }
	}
	if c, err = start(ctx, cli, spec, tweak); err != nil {
		return fail(err)
	}
	if gw != nil {
		gw.Launch(ctx)
	}
	go io.Copy(io.Discard, c.Stderr())
	if cs, err = mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: io.NopCloser(c.Stdout()), Writer: c.Stdin()}, nil); err != nil {
		return fail(err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		return fail(err)
	}
	listed = time.Now()
	if gw != nil {
		if err := gw.Wait(); err != nil {
			return fail(err)
		}
		gwReady = time.Now()
	}
	return cs, stop, listed, gwReady, nil
}

// BenchmarkEgressStart: the time from nothing to the first tools/list
// answer, for the same cage with no network, behind a gateway made for it
// (every start with --allow-host), and two sessions with --allow-host
// started together (an AI client starting its servers): the later of the
// two to answer. The variants start in turns (which goes first rotates) so
// that the machine's noise falls on all alike. It reports the median of
// each and what the gateway adds over no network, and when the gateway ran
// (ms-gateway-ready): a connection the server makes before then waits in
// the shim, so that is when a server that calls its API at start gets its
// first answer at the earliest.
func BenchmarkEgressStart(b *testing.B) {
	in, img, _ := benchEnv(b)
	pol, _ := egress.ParsePolicy([]string{"api.allowed.test"}, true)
	const bare, allowHost, pair, variants = 0, 1, 2, 3
	times := make([][]time.Duration, variants)
	var ready []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := 0; k < variants; k++ {
			v := (i + k) % variants
			var p *egress.Policy
			starts := 1
			switch v {
			case allowHost:
				p = &pol
			case pair:
				p, starts = &pol, 2
			}
			t0 := time.Now()
			var wg sync.WaitGroup
			stops := make([]func(), starts)
			took := make([]time.Duration, starts)
			gwReady := make([]time.Duration, starts)
			errs := make([]error, starts)
			for j := range starts {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// took ends at the first tools/list answer; the
					// gateway may be waited for after it.
					_, stop, listed, ready, err := benchSessionAt(Spec{Name: "bench-start", Image: img}, p, in.Network, "")
					stops[j], errs[j], took[j] = stop, err, listed.Sub(t0)
					if !ready.IsZero() {
						gwReady[j] = ready.Sub(t0)
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			for j := range starts {
				if errs[j] != nil {
					b.Fatal(errs[j])
				}
				stops[j]()
			}
			b.StartTimer()
			times[v] = append(times[v], slices.Max(took))
			if v == allowHost {
				ready = append(ready, gwReady[0])
			}
		}
	}
	mb, ma, mp := median(times[bare]), median(times[allowHost]), median(times[pair])
	b.ReportMetric(float64(mb.Milliseconds()), "ms-no-network")
	b.ReportMetric(float64(ma.Milliseconds()), "ms-allow-host")
	b.ReportMetric(float64((ma - mb).Milliseconds()), "ms-added")
	b.ReportMetric(float64(mp.Milliseconds()), "ms-pair-second")
	b.ReportMetric(float64((mp - mb).Milliseconds()), "ms-added-pair")
	b.ReportMetric(float64(median(ready).Milliseconds()), "ms-gateway-ready")
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
			network := ""
			if bc.pol == nil {
				network = in.Network
			}
			cs, stop, err := benchSession(base, bc.pol, in.Network, network)
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
