package cage

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/docker/docker/client"
)

// EnvRuntime names the runtime `mcpcage run` uses when --runtime is not
// given.
const EnvRuntime = "MCPCAGE_RUNTIME"

// CheckRuntime says whether the engine has the OCI runtime name registered
// (docker info: Runtimes), in one line naming those it has when it does
// not, and whether it is gVisor (its program is runsc).
func CheckRuntime(ctx context.Context, cli client.APIClient, name string) (gvisor bool, err error) {
	info, err := cli.Info(ctx)
	if err != nil {
		return false, fmt.Errorf("cannot ask the engine for its runtimes: %s", oneLine(err))
	}
	if rt, ok := info.Runtimes[name]; ok {
		if filepath.Base(rt.Path) != "runsc" {
			return false, nil
		}
		// gVisor loads an OCI seccomp profile only when told to: without
		// --oci-seccomp the cage's profile (no Unix sockets) would not
		// apply, and without --network=none a cage of no network does not
		// start.
		for _, want := range []string{"--oci-seccomp", "--network=none"} {
			if !slices.Contains(rt.Args, want) {
				return true, fmt.Errorf("the engine's runtime %q (gVisor) runs without %s: the cage's seccomp profile would not apply, or the cage would not start", name, want)
			}
		}
		return true, nil
	}
	var have []string
	for r := range info.Runtimes {
		have = append(have, r)
	}
	sort.Strings(have)
	return false, fmt.Errorf("the engine has no runtime %q (it has %s)", name, strings.Join(have, ", "))
}

// RuntimeHint says how to register a runtime with the engine. gVisor's runsc
// is what mcpcage knows how to register: --network=none because the cage
// has no network (Debian's runsc, 2022-12-19, otherwise tries to build
// its own network from the container's namespace and fails: "cannot run
// with network enabled in root network namespace"), and --oci-seccomp
// because without it runsc ignores the container's seccomp profile.
func RuntimeHint(name string) string {
	if name == "runsc" {
		return `install gVisor (Debian: apt-get install runsc), register it in /etc/docker/daemon.json as {"runtimes":{"runsc":{"path":"/usr/bin/runsc","runtimeArgs":["--network=none","--oci-seccomp"]}}}, and reload the engine (kill -HUP $(pidof dockerd))`
	}
	return fmt.Sprintf("register %q under \"runtimes\" in /etc/docker/daemon.json and reload the engine (kill -HUP $(pidof dockerd)), or leave --runtime out", name)
}
