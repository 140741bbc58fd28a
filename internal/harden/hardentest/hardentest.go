// Package hardentest checks that a container's host config holds the whole
// harden.Baseline, for the tests of each package that creates containers.
package hardentest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/docker/docker/api/types/container"
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
		if p, ok := strings.CutPrefix(o, "seccomp="); ok && strings.Contains(p, `"defaultAction"`) && !strings.Contains(p, "unconfined") {
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
	core := false
	for _, u := range hc.Ulimits {
		if u.Name == "core" && u.Soft == 0 && u.Hard == 0 {
			core = true
		}
	}
	need(core, "no core dumps")
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
