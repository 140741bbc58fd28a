package cage

import (
	"context"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/client"
)

// infoEngine answers Info with a set of runtimes: an engine configured in
// a way this machine's is not (a runsc without its flags).
type infoEngine struct {
	client.APIClient
	runtimes map[string]system.RuntimeWithStatus
}

func (e infoEngine) Info(context.Context) (system.Info, error) {
	return system.Info{Runtimes: e.runtimes}, nil
}

// TestCheckRuntime: a runsc registered without --oci-seccomp (the cage's
// seccomp profile would not apply) or without --network=none is refused;
// with both it is taken; another runtime is taken as the engine has it.
func TestCheckRuntime(t *testing.T) {
	rt := func(path string, args ...string) system.RuntimeWithStatus {
		return system.RuntimeWithStatus{Runtime: system.Runtime{Path: path, Args: args}}
	}
	for _, c := range []struct {
		runtimes map[string]system.RuntimeWithStatus
		name     string
		want     string
	}{
		{map[string]system.RuntimeWithStatus{"runc": rt("runc")}, "runsc", `no runtime "runsc" (it has runc)`},
		{map[string]system.RuntimeWithStatus{"runsc": rt("/usr/bin/runsc", "--network=none")}, "runsc", "without --oci-seccomp"},
		{map[string]system.RuntimeWithStatus{"gvisor": rt("/usr/local/bin/runsc", "--oci-seccomp")}, "gvisor", "without --network=none"},
		{map[string]system.RuntimeWithStatus{"runsc": rt("/usr/bin/runsc", "--network=none", "--oci-seccomp")}, "runsc", ""},
		{map[string]system.RuntimeWithStatus{"crun": rt("/usr/bin/crun")}, "crun", ""},
	} {
		_, err := CheckRuntime(context.Background(), infoEngine{runtimes: c.runtimes}, c.name)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s in %v: %v, want %q", c.name, c.runtimes, err, c.want)
		}
	}
}
