// Package harden is the baseline every container mcpcage creates shares: the
// server's cage, the session's egress gateway and the install container.
// Each starts from Baseline.HostConfig and adds only what its job needs (its
// network, its mounts, its /tmp); none takes anything away.
//
// The baseline: a read-only root, every capability dropped,
// no-new-privileges, the cage's seccomp profile (SeccompProfile; under gVisor
// GVisorSeccompProfile), the engine's init as pid 1, a private IPC namespace,
// no log kept by the engine, a small /dev/shm, the engine's masked /proc and
// /sys paths plus the host's kernel command line, memory with no swap, CPU,
// process and open-file limits, no core dumps.
package harden

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/mcpcage/mcpcage/internal/atomicfile"
	"github.com/mcpcage/mcpcage/internal/home"
)

// ShmSize is a container's /dev/shm (the engine's default is 64 MiB): small,
// and charged to the memory limit.
const ShmSize = 4 << 20

// NoFile is the most open files a container may have: fewer when this
// process may have fewer (a rootless engine runs with the user's limits, and
// cannot raise a container's above its own).
const NoFile = 8192

// maxNproc bounds the process limit named to Podman (see HostConfig).
const maxNproc = 32768

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
	// Engine is the engine's kind (KindOf): how it takes the profile and
	// the limits.
	Engine Kind
	Memory int64 // bytes; swap is capped to the same (none)
	Pids   int64
	CPUs   float64
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
	podman := b.Engine == Podman
	if podman {
		if profile, err = profileFile(profile); err != nil {
			return nil, err
		}
	}
	// The engine masks each CPU's thermal_throttle too (GHSA-6fw5-f8r9-fgfm).
	throttle, _ := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/thermal_throttle")
	init := true
	pids := b.Pids
	nofile := noFile()
	hc := &container.HostConfig{
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
			// behind. Open files bounded (noFile).
			Ulimits: []*container.Ulimit{{Name: "core", Soft: 0, Hard: 0}, {Name: "nofile", Soft: nofile, Hard: nofile}},
		},
	}
	if podman {
		// Podman as root sets the process limit to its own default
		// (4,194,304) when none is named, and no container starts where
		// its host's limit is lower and it may not raise it. Named: this
		// process's own, at most maxNproc (a Podman service may run with
		// less than the process that asks it; here 32,768 against
		// 96,367). The cage's processes are bounded by PidsLimit; this
		// per-user count only must not stop it from starting.
		if n := min(processLimit(), maxNproc); n > 0 {
			hc.Ulimits = append(hc.Ulimits, &container.Ulimit{Name: "nproc", Soft: n, Hard: n})
		}
	}
	return hc, nil
}

// Kind is what the engine behind the Docker API is.
type Kind int

const (
	Docker Kind = iota // the Docker engine (and Desktop, Colima, OrbStack, Rancher: dockerd)
	Podman             // Podman's Docker-compatible API
)

// KindOf asks the engine what it is (its version answer's components).
func KindOf(ctx context.Context, eng client.APIClient) (Kind, error) {
	v, err := eng.ServerVersion(ctx)
	if err != nil {
		return Docker, fmt.Errorf("cannot ask the engine what it is: %v", err)
	}
	for _, c := range v.Components {
		if strings.HasPrefix(c.Name, "Podman") {
			return Podman, nil
		}
	}
	return Docker, nil
}

// KindLater asks the engine what it is in the background and returns a
// function that waits for the answer: a session asks once, while it does
// the rest of its start (on Docker the version answer takes 20-30 ms, the
// engine asking its runtimes theirs).
func KindLater(ctx context.Context, eng client.APIClient) func() (Kind, error) {
	var k Kind
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		k, err = KindOf(ctx, eng)
	}()
	return func() (Kind, error) {
		<-done
		return k, err
	}
}

// profileFile writes the profile where Podman reads it and returns the path.
// Podman's Docker-compatible API reads "seccomp=" as a path on its own host,
// not as the profile: a file of mcpcage's state folder, named by the
// profile's hash and written whole before use (Podman runs as root, or
// rootless as this user: it reads the folder). A Podman whose host is not
// this one (a Podman machine's VM) finds no such file and refuses to create
// the container: the cage fails closed.
func profileFile(profile string) (string, error) {
	dir, err := home.Sub("seccomp")
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(profile))
	p := filepath.Join(dir, hex.EncodeToString(sum[:12])+".json")
	if b, err := os.ReadFile(p); err == nil && string(b) == profile {
		return p, nil
	}
	if err := atomicfile.Write(p, []byte(profile), 0o600); err != nil {
		return "", fmt.Errorf("cannot write the seccomp profile for Podman: %v", err)
	}
	return p, nil
}
