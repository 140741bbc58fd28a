// Package hardentest checks that a container's host config holds the whole
// harden.Baseline, for the tests of each package that creates containers.
package hardentest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
)

// Missing lists what of the baseline hc lacks or weakens; nil when it holds
// it all.
func Missing(hc *container.HostConfig) []string {
	var miss []string
	need := func(ok bool, what string) {
		if !ok {
			miss = append(miss, what)
		}
	}
	need(hc.ReadonlyRootfs, "read-only root")
	need(slices.Equal(hc.CapDrop, []string{"ALL"}) && len(hc.CapAdd) == 0, "every capability dropped")
	need(slices.Contains(hc.SecurityOpt, "no-new-privileges:true"), "no-new-privileges")
	seccomp := false
	for _, o := range hc.SecurityOpt {
		p, ok := strings.CutPrefix(o, "seccomp=")
		if ok && strings.HasPrefix(p, "/") {
			// Podman takes a path on its host: the profile is the file.
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			p = string(b)
		}
		if ok && strings.Contains(p, `"defaultAction"`) && strings.Contains(p, `"SCMP_ACT_ERRNO"`) && !strings.Contains(p, "unconfined") {
			seccomp = true
		}
	}
	need(seccomp, "the seccomp profile")
	need(hc.Init != nil && *hc.Init, "the engine's init")
	need(hc.IpcMode == "private", "a private IPC namespace")
	need(hc.LogConfig.Type == "none", "no engine log")
	need(hc.ShmSize > 0 && hc.ShmSize <= 4<<20, "a small /dev/shm")
	need(slices.Contains(hc.MaskedPaths, "/proc/kcore") && slices.Contains(hc.MaskedPaths, "/proc/cmdline"), "the masked /proc paths")
	need(hc.Memory > 0 && hc.MemorySwap == hc.Memory, "memory with no swap")
	need(hc.PidsLimit != nil && *hc.PidsLimit > 0, "a process limit")
	core, nofile := false, false
	for _, u := range hc.Ulimits {
		core = core || u.Name == "core" && u.Soft == 0 && u.Hard == 0
		nofile = nofile || u.Name == "nofile" && u.Hard > 0 && u.Hard <= 1<<16
	}
	need(core, "no core dumps")
	need(nofile, "an open-file limit")
	need(!hc.Privileged && hc.PidMode == "" && hc.UsernsMode == "" && !hc.NetworkMode.IsHost(), "no host namespace or privilege")
	return miss
}

// Check is Missing as one error.
func Check(hc *container.HostConfig) error {
	if m := Missing(hc); len(m) > 0 {
		return fmt.Errorf("the container lacks: %s", strings.Join(m, ", "))
	}
	return nil
}

// Engines are the engines the tests of container configs run against: the
// Docker engine of the environment, and Podman's Docker-compatible API when
// MCPCAGE_TEST_PODMAN names its socket (make test starts it, .ci/setup
// installs it).
func Engines(ctx context.Context) (map[string]client.APIClient, error) {
	out := map[string]client.APIClient{}
	d, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, err
	}
	out["docker"] = d
	if h := os.Getenv("MCPCAGE_TEST_PODMAN"); h != "" {
		p, err := client.NewClientWithOpts(client.WithHost(h), client.WithAPIVersionNegotiation())
		if err != nil {
			return nil, err
		}
		if _, err := p.Ping(ctx); err != nil {
			return nil, fmt.Errorf("MCPCAGE_TEST_PODMAN=%s: %v", h, err)
		}
		out["podman"] = p
	}
	return out, nil
}
