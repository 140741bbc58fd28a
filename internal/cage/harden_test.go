package cage

import (
	"testing"

	"github.com/mcpcage/mcpcage/internal/harden/hardentest"
)

// TestEveryContainerHardened: the server's cage (under runc and gVisor) and
// the egress gateway each hold the whole baseline (the gateway lacked the
// seccomp profile, the init, the small /dev/shm and the masked paths).
func TestEveryContainerHardened(t *testing.T) {
	for _, spec := range []Spec{{Name: "s", Image: "img"}, {Name: "s", Image: "img", Runtime: "runsc", GVisor: true}} {
		_, hc, err := configs(spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := hardentest.Check(hc); err != nil {
			t.Errorf("cage (runtime %q): %v", spec.Runtime, err)
		}
		if hc.Runtime != spec.Runtime {
			t.Errorf("cage runtime %q, want %q", hc.Runtime, spec.Runtime)
		}
	}
	_, hc, err := gatewayConfig("img", "net", nil, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := hardentest.Check(hc); err != nil {
		t.Errorf("gateway: %v", err)
	}
	if hc.Runtime != "" || hc.NetworkMode != "net" {
		t.Errorf("gateway runtime %q network %q: want the default runtime on its upstream network", hc.Runtime, hc.NetworkMode)
	}
}
