// Package cagetest builds the images the cage's tests run: the escape probe
// (internal/cage/escapeprobe) as a static binary in an image made from
// scratch, so the tests need no registry and trust nothing they did not build.
package cagetest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
)

const probeLabel = "io.mcpcage.test.probe"

// ProbeImage is the tag BuildProbeImage gives the escape probe's image.
const ProbeImage = "mcpcage-test/escape-probe:latest"

// BuildProbeImage compiles the escape probe (CGO_ENABLED=0) and imports it
// as ProbeImage: /probe (the server, the entrypoint), /probe-suid (the same
// binary, setuid root), /data (a folder anyone may write, on the image's own
// disk) and /tmp. The image says USER 0, so the cage's own user is what keeps
// the server from being root. It returns the image ID.
func BuildProbeImage(ctx context.Context, cli *client.Client) (string, error) {
	return buildProbe(ctx, cli, ProbeImage, 0o1777)
}

// BuildProbeImageAs is BuildProbeImage under another tag: an image no
// other run's BuildProbeImage replaces (and removes) while it is in use
// (checkouts side by side build different probes).
func BuildProbeImageAs(ctx context.Context, cli *client.Client, tag string) (string, error) {
	return buildProbe(ctx, cli, tag, 0o1777)
}

// ScratchTmpImage is the tag BuildScratchTmpImage gives its image.
const ScratchTmpImage = "mcpcage-test/escape-probe-tmp755:latest"

// BuildScratchTmpImage is BuildProbeImage with /tmp 0755 and root's, as in
// images made from scratch by hand: Docker copies that mode onto the tmpfs
// it mounts there. It returns the image ID.
func BuildScratchTmpImage(ctx context.Context, cli *client.Client) (string, error) {
	return buildProbe(ctx, cli, ScratchTmpImage, 0o755)
}

func buildProbe(ctx context.Context, cli *client.Client, tag string, tmpMode int64) (string, error) {
	code, err := buildStatic(ctx, "github.com/mcpcage/mcpcage/internal/cage/escapeprobe")
	if err != nil {
		return "", err
	}
	return importImage(ctx, cli, tag, []string{`ENTRYPOINT ["/probe"]`, "USER 0"}, func(add func(*tar.Header, []byte)) {
		add(&tar.Header{Name: "data/", Typeflag: tar.TypeDir, Mode: 0o777, Uid: 1000, Gid: 1000}, nil)
		add(&tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: tmpMode}, nil)
		add(&tar.Header{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755}, nil)
		add(&tar.Header{Name: "etc/passwd", Typeflag: tar.TypeReg, Mode: 0o644}, []byte("root:x:0:0:root:/root:/probe\n"))
		add(&tar.Header{Name: "probe", Typeflag: tar.TypeReg, Mode: 0o755}, code)
		add(&tar.Header{Name: "probe-suid", Typeflag: tar.TypeReg, Mode: 0o4755}, code)
	})
}

// FakeHostImage is the tag BuildFakeHostImage gives the egress tests' host.
const FakeHostImage = "mcpcage-test/fake-host:latest"

// BuildFakeHostImage compiles cagetest/fakehost (CGO_ENABLED=0) and imports
// it as FakeHostImage, /fakehost its entrypoint. It returns the image ID.
func BuildFakeHostImage(ctx context.Context, cli *client.Client) (string, error) {
	code, err := buildStatic(ctx, "github.com/mcpcage/mcpcage/internal/cage/cagetest/fakehost")
	if err != nil {
		return "", err
	}
	return importImage(ctx, cli, FakeHostImage, []string{`ENTRYPOINT ["/fakehost"]`}, func(add func(*tar.Header, []byte)) {
		add(&tar.Header{Name: "fakehost", Typeflag: tar.TypeReg, Mode: 0o755}, code)
	})
}

// StaticMcpcage builds mcpcage itself once per test process as a static
// binary (a test binary is not static, and the egress gateway runs
// mcpcage in an empty image) and returns its path.
func StaticMcpcage(ctx context.Context) (string, error) {
	staticOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcpcage-gateway")
		if err != nil {
			staticErr = err
			return
		}
		staticPath = filepath.Join(dir, "mcpcage")
		staticErr = BuildStatic(ctx, "github.com/mcpcage/mcpcage/cmd/mcpcage", staticPath)
	})
	return staticPath, staticErr
}

var (
	staticOnce sync.Once
	staticPath string
	staticErr  error
)

// BuildStatic compiles the package pkg of this module (CGO_ENABLED=0) into
// dst.
func BuildStatic(ctx context.Context, pkg, dst string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dst, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	// Inside the module, wherever the test runs from (scripts run in $WORK).
	if _, file, _, ok := runtime.Caller(0); ok {
		cmd.Dir = filepath.Dir(file)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %v\n%s", pkg, err, out)
	}
	return nil
}

func buildStatic(ctx context.Context, pkg string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "cagetest")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "bin")
	if err := BuildStatic(ctx, pkg, bin); err != nil {
		return nil, err
	}
	return os.ReadFile(bin)
}

// importImage imports the files fill adds as tag, with the given image
// changes.
func importImage(ctx context.Context, cli *client.Client, tag string, changes []string, fill func(add func(*tar.Header, []byte))) (string, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	var err error
	fill(func(h *tar.Header, body []byte) {
		h.Size = int64(len(body))
		h.Format = tar.FormatPAX
		if err == nil {
			err = tw.WriteHeader(h)
		}
		if err == nil && len(body) > 0 {
			_, err = tw.Write(body)
		}
	})
	if err != nil {
		return "", err
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	// The same bytes make the same image: import only when they changed, so
	// repeated runs of the same code leave no dangling images behind.
	sum := sha256.Sum256(buf.Bytes())
	key := hex.EncodeToString(sum[:8])
	old, err := cli.ImageInspect(ctx, tag)
	if err == nil && old.Config != nil && old.Config.Labels[probeLabel] == key {
		return old.ID, nil
	}
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: &buf, SourceName: "-"}, tag, image.ImportOptions{
		Changes: append(changes, "LABEL "+probeLabel+"="+key),
	})
	if err != nil {
		return "", fmt.Errorf("importing %s: %w", tag, err)
	}
	io.Copy(io.Discard, rc)
	rc.Close()
	info, err := cli.ImageInspect(ctx, tag)
	if err != nil {
		return "", err
	}
	// The image the tag named before is left alone: another checkout's test
	// run on this machine may hold its ID between two containers, and
	// removing it there fails that run ("not on this machine"). It stays
	// as an untagged image until `docker image prune`.
	return info.ID, nil
}

// BridgeGateway returns the address of Docker's default bridge on this
// machine, after checking that it belongs to one of this machine's
// interfaces: tests listen there (for containers on the bridge to reach) and
// never send anything off the machine.
func BridgeGateway(ctx context.Context, cli *client.Client) (string, error) {
	nw, err := cli.NetworkInspect(ctx, "bridge", network.InspectOptions{})
	if err != nil {
		return "", fmt.Errorf("inspect the bridge network: %w", err)
	}
	if len(nw.IPAM.Config) == 0 {
		return "", fmt.Errorf("the bridge network has no address range")
	}
	gw := nw.IPAM.Config[0].Gateway
	_, subnet, err := net.ParseCIDR(nw.IPAM.Config[0].Subnet)
	if err != nil {
		return "", fmt.Errorf("bridge subnet: %w", err)
	}
	// Older engines leave Gateway out: it is then the bridge interface's own
	// address in the subnet.
	ifname := nw.Options["com.docker.network.bridge.name"]
	ifs, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, i := range ifs {
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			if ipn.IP.String() == gw || (gw == "" && i.Name == ifname && subnet.Contains(ipn.IP)) {
				return ipn.IP.String(), nil
			}
		}
	}
	return "", fmt.Errorf("the bridge gateway (%q on %s) is not an address of this machine", gw, ifname)
}
