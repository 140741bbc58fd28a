package cage

import (
	"context"
	"testing"

	"github.com/mcpcage/mcpcage/internal/harden/hardentest"
)

// TestEveryContainerHardened: the server's cage (under runc and gVisor) and
// the egress gateway each hold the whole baseline (the gateway lacked the
// seccomp profile, the init, the small /dev/shm and the masked paths), on
// Docker and on Podman.
func TestEveryContainerHardened(t *testing.T) {
	t.Setenv("MCPCAGE_HOME", t.TempDir())
	ctx := context.Background()
	engines, err := hardentest.Engines(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, eng := range engines {
		for _, spec := range []Spec{{Name: "s", Image: "img"}, {Name: "s", Image: "img", Runtime: "runsc", GVisor: true}} {
			_, hc, err := configs(ctx, eng, spec)
			if err != nil {
				t.Fatal(err)
			}
			if err := hardentest.Check(hc); err != nil {
				t.Errorf("%s: cage (runtime %q): %v", name, spec.Runtime, err)
			}
			if hc.Runtime != spec.Runtime {
				t.Errorf("%s: cage runtime %q, want %q", name, hc.Runtime, spec.Runtime)
			}
		}
		_, hc, err := gatewayConfig(ctx, eng, nil, "img", "net", nil, t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := hardentest.Check(hc); err != nil {
			t.Errorf("%s: gateway: %v", name, err)
		}
		if hc.Runtime != "" || hc.NetworkMode != "net" {
			t.Errorf("%s: gateway runtime %q network %q: want the default runtime on its upstream network", name, hc.Runtime, hc.NetworkMode)
		}
	}
}
