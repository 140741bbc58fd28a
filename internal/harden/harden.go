// Package harden is the baseline every container mcpcage creates shares: the
// server's cage, the session's egress gateway and the install container.
// Each starts from Baseline.HostConfig and adds only what its job needs (its
// network, its mounts, its /tmp); none takes anything away.
//
// The baseline: a read-only root, every capability dropped,
// no-new-privileges, the cage's seccomp profile (SeccompProfile; under gVisor
// GVisorSeccompProfile), the engine's init as pid 1, a private IPC namespace,
// no log kept by the engine, a small /dev/shm, the engine's masked /proc and
// /sys paths plus the host's kernel command line, memory with no swap, CPU
// and process limits, no core dumps.
package harden

import (
	"path/filepath"

	"github.com/docker/docker/api/types/container"
)

// ShmSize is a container's /dev/shm (the engine's default is 64 MiB): small,
// and charged to the memory limit.
const ShmSize = 4 << 20

// maskedPaths are the /proc and /sys paths a container hides: the engine's
// default list (github.com/docker/docker/oci, defaultLinuxMaskedPaths; it is
// repeated because MaskedPaths replaces it, and that package would pull the
// engine's runtime dependencies into mcpcage), and /proc/cmdline, which
// shows the host kernel's boot parameters.
var maskedPaths = []string{
	"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
	"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware",
	"/sys/devices/virtual/powercap", "/proc/cmdline",
}

// Baseline is what varies between mcpcage's containers within the baseline:
// the runtime and the limits. Memory and Pids must be set; there are no zero
// defaults here (the callers own theirs). CPUs 0 sets no CPU quota (the
// install container, bounded by its timeout instead: a quota would slow
// every first run, and the engine refuses one above the CPUs it has).
type Baseline struct {
	// Runtime is the engine's OCI runtime ("runsc" for gVisor); "" is the
	// engine's default (runc). GVisor says the runtime is gVisor: the
	// seccomp profile is then GVisorSeccompProfile.
	Runtime string
	GVisor  bool
	Memory  int64 // bytes; swap is capped to the same (none)
	Pids    int64
	CPUs    float64
}

// HostConfig is the baseline as the engine takes it, on the network named
// ("none", "bridge", or a network's name).
func (b Baseline) HostConfig(network string) (*container.HostConfig, error) {
	profile, err := SeccompProfile()
	if b.GVisor {
		profile, err = GVisorSeccompProfile()
	}
	if err != nil {
		return nil, err
	}
	// The engine masks each CPU's thermal_throttle too (GHSA-6fw5-f8r9-fgfm).
	throttle, _ := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/thermal_throttle")
	init := true
	pids := b.Pids
	return &container.HostConfig{
		Runtime:        b.Runtime,
		NetworkMode:    container.NetworkMode(network),
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges:true", "seccomp=" + profile},
		Init:           &init,
		IpcMode:        "private",
		LogConfig:      container.LogConfig{Type: "none"},
		ShmSize:        ShmSize,
		MaskedPaths:    append(append([]string(nil), maskedPaths...), throttle...),
		Resources: container.Resources{
			Memory:     b.Memory,
			MemorySwap: b.Memory,
			NanoCPUs:   int64(b.CPUs * 1e9), // 0: no quota
			PidsLimit:  &pids,
			// No core dumps: a crashing process would leave its memory
			// behind.
			Ulimits: []*container.Ulimit{{Name: "core", Soft: 0, Hard: 0}},
		},
	}, nil
}
