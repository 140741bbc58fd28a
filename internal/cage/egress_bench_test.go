package cage

import (
	"context"
	"errors"
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
// With spare, the gateway is the spare's, claimed.
func benchSession(b *testing.B, spec Spec, pol *egress.Policy, upstream string, spare *SpareSpec) (*mcp.ClientSession, func()) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := Connect(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var gw *Gateway
	if pol != nil {
		spec.Session = NewSession()
		es := EgressSpec{Policy: *pol, Upstream: upstream, Session: spec.Session, Name: spec.Name}
		if spare != nil {
			gw, err = ClaimSpare(ctx, cli, *spare, es)
			if err == nil && gw == nil {
				err = errors.New("no spare to claim")
			}
		} else {
			gw, err = StartGateway(ctx, cli, es)
		}
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
// answer, for the same cage with no network, behind a spare gateway
// claimed (what a start with --allow-host is when an earlier session of
// the same MCPCAGE_HOME made one: every start but the first), and behind a
// gateway made for it (the first start), started in turns (which goes
// first rotates) so that the machine's noise falls on all alike. The spare
// is made untimed before its start, and the engine given 2 s to settle, as
// a spare made during the previous session would be. It reports the
// median of each and what the gateway adds over no network.
func BenchmarkEgressStart(b *testing.B) {
	in, img, _ := benchEnv(b)
	pol, _ := egress.ParsePolicy([]string{"api.allowed.test"}, true)
	spare := SpareSpec{Home: b.TempDir(), Upstream: in.Network}
	cli, err := Connect(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	const bare, claimed, first = 0, 1, 2
	times := make([][]time.Duration, 3)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := 0; k < 3; k++ {
			v := (i + k) % 3
			var p *egress.Policy
			var sp *SpareSpec
			switch v {
			case claimed:
				b.StopTimer()
				if err := PrepareSpare(context.Background(), cli, spare); err != nil {
					b.Fatal(err)
				}
				time.Sleep(2 * time.Second)
				b.StartTimer()
				p, sp = &pol, &spare
			case first:
				p = &pol
			}
			t0 := time.Now()
			_, stop := benchSession(b, Spec{Name: "bench-start", Image: img}, p, in.Network, sp)
			d := time.Since(t0)
			b.StopTimer()
			stop()
			b.StartTimer()
			times[v] = append(times[v], d)
		}
	}
	mb, mc, mf := median(times[bare]), median(times[claimed]), median(times[first])
	b.ReportMetric(float64(mb.Milliseconds()), "ms-no-network")
	b.ReportMetric(float64(mc.Milliseconds()), "ms-allow-host")
	b.ReportMetric(float64((mc - mb).Milliseconds()), "ms-added")
	b.ReportMetric(float64(mf.Milliseconds()), "ms-allow-host-first")
	b.ReportMetric(float64((mf - mb).Milliseconds()), "ms-added-first")
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
			cs, stop := benchSession(b, spec, bc.pol, in.Network, nil)
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
