package cage

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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
// with spec as given), lists its tools, and returns the session and a stop.
func benchSession(b *testing.B, spec Spec, pol *egress.Policy, upstream string) (*mcp.ClientSession, func()) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := Connect(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var gw *Gateway
	if pol != nil {
		spec.Session = NewSession()
		gw, err = StartGateway(ctx, cli, EgressSpec{Policy: *pol, Upstream: upstream, Session: spec.Session, Name: spec.Name})
		if err != nil {
			b.Fatal(err)
		}
		spec.Network, spec.DNS, spec.Env = gw.Network(), []string{gw.Addr().String()}, append(spec.Env, gw.Env()...)
	}
	c, err := Start(ctx, cli, spec)
	if err != nil {
		b.Fatal(err)
	}
	go io.Copy(io.Discard, c.Stderr())
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: io.NopCloser(c.Stdout()), Writer: c.Stdin()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		b.Fatal(err)
	}
	return cs, func() {
		cs.Close()
		c.Stop(context.Background())
		if gw != nil {
			gw.Stop(context.Background())
		}
		cli.Close()
	}
}

// BenchmarkEgressStart: the time from nothing to the first tools/list
// answer, for the same cage with no network and behind a gateway with
// --allow-host, started in turns (which goes first alternates) so that the
// machine's noise falls on both alike. It reports the median of each and
// their difference: what the gateway adds to a start (its network, its
// container, its ready line, the cage's own attachment to a network).
func BenchmarkEgressStart(b *testing.B) {
	in, img, _ := benchEnv(b)
	pol, _ := egress.ParsePolicy([]string{"api.allowed.test"}, true)
	var bare, gated []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		order := []*egress.Policy{nil, &pol}
		if i%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, p := range order {
			t0 := time.Now()
			_, stop := benchSession(b, Spec{Name: "bench-start", Image: img}, p, in.Network)
			d := time.Since(t0)
			b.StopTimer()
			stop()
			b.StartTimer()
			if p == nil {
				bare = append(bare, d)
			} else {
				gated = append(gated, d)
			}
		}
	}
	mb, mg := median(bare), median(gated)
	b.ReportMetric(float64(mb.Milliseconds()), "ms-no-network")
	b.ReportMetric(float64(mg.Milliseconds()), "ms-allow-host")
	b.ReportMetric(float64((mg - mb).Milliseconds()), "ms-added")
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
			cs, stop := benchSession(b, spec, bc.pol, in.Network)
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
