package install

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
)

func dockerClient(t testing.TB) *client.Client {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatalf("docker client: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx); err != nil {
		t.Fatalf("the Docker engine is not reachable (start dockerd): %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// isolate gives the test its own MCPCAGE_HOME and no registry settings of
// the machine's own.
func isolate(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("MCPCAGE_HOME", dir+"/.mcpcage")
	t.Setenv("HOME", dir+"/home")
	for _, k := range []string{"NPM_CONFIG_REGISTRY", "npm_config_registry", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL",
		"PIP_FIND_LINKS", "PIP_TRUSTED_HOST", "UV_INDEX_URL", "UV_DEFAULT_INDEX", "UV_EXTRA_INDEX_URL", "UV_INDEX",
		"UV_FIND_LINKS", "UV_INSECURE_HOST", EnvNodeImage, EnvPythonImage} {
		t.Setenv(k, "")
	}
	// CA settings stay: they are how this machine reaches the registry, and
	// honouring them is part of what is tested. Where none is set, the
	// system bundle is what the host's own clients trust.
	if os.Getenv("NODE_EXTRA_CA_CERTS") == "" && os.Getenv("SSL_CERT_FILE") == "" {
		if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err == nil {
			t.Setenv("SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt")
		}
	}
	return dir
}

// bridgeAddr is this machine's own address on Docker's default bridge: a
// listener there is reachable from install containers and from nothing else.
func bridgeAddr(t testing.TB, cli *client.Client) string {
	t.Helper()
	ctx := context.Background()
	nw, err := cli.NetworkInspect(ctx, "bridge", network.InspectOptions{})
	if err != nil {
		t.Fatalf("inspect the bridge network: %v", err)
	}
	for _, c := range nw.IPAM.Config {
		if c.Gateway != "" {
			return c.Gateway
		}
	}
	name := nw.Options["com.docker.network.bridge.name"]
	if name == "" {
		name = "docker0"
	}
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		t.Fatalf("bridge interface %s: %v", name, err)
	}
	addrs, _ := ifc.Addrs()
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil {
			return ip.IP.String()
		}
	}
	t.Fatalf("bridge interface %s has no IPv4 address", name)
	return ""
}

// listTools starts the installed server the way a cage does (no network,
// read-only root, no capabilities, uid 1000, the cache entry mounted
// read-only) and returns the names from tools/list.
func listTools(t testing.TB, cli *client.Client, res *Result, args ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	pids := int64(256)
	env := append([]string{"HOME=/tmp"}, res.Env...)
	created, err := cli.ContainerCreate(ctx, &container.Config{
		Image: res.ImageID, Entrypoint: res.Command, Cmd: args, Env: env,
		User: "1000:1000", OpenStdin: true, StdinOnce: true, AttachStdin: true, AttachStdout: true, AttachStderr: true,
		Labels: map[string]string{"io.mcpcage.test": "install"},
	}, &container.HostConfig{
		NetworkMode: "none", ReadonlyRootfs: true, CapDrop: []string{"ALL"}, SecurityOpt: []string{"no-new-privileges"},
		Tmpfs:     map[string]string{"/tmp": "size=64m"},
		Mounts:    []mount.Mount{{Type: mount.TypeBind, Source: res.CacheDir, Target: res.MountPoint, ReadOnly: true}},
		Resources: container.Resources{Memory: 512 << 20, PidsLimit: &pids},
	}, nil, nil, "")
	if err != nil {
		t.Fatalf("create server container: %v", err)
	}
	defer cli.ContainerRemove(context.Background(), created.ID, container.RemoveOptions{Force: true})
	att, err := cli.ContainerAttach(ctx, created.ID, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	defer att.Close()
	if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatalf("start: %v", err)
	}
	pr, pw := io.Pipe()
	var errBuf strings.Builder
	go func() { _, err := stdcopy.StdCopy(pw, &errBuf, att.Reader); pw.CloseWithError(err) }()
	send := func(s string) {
		if _, err := att.Conn.Write([]byte(s + "\n")); err != nil {
			t.Fatalf("write to server: %v", err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"install-test","version":"0"}}}`)
	lines := bufio.NewScanner(pr)
	lines.Buffer(make([]byte, 1<<20), 16<<20)
	for lines.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			} `json:"result"`
			Error *struct{ Message string } `json:"error"`
		}
		if json.Unmarshal(lines.Bytes(), &m) != nil {
			continue
		}
		if m.Error != nil {
			t.Fatalf("server error: %s", m.Error.Message)
		}
		switch string(m.ID) {
		case "1":
			send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		case "2":
			var names []string
			for _, tl := range m.Result.Tools {
				names = append(names, tl.Name)
			}
			return names
		}
	}
	t.Fatalf("server ended without answering tools/list; stderr:\n%s", errBuf.String())
	return nil
}

func errorsAs[T error](err error, target *T) bool { return errors.As(err, target) }
