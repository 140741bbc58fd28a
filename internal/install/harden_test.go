package install

import (
	"context"
	"testing"

	"github.com/mcpcage/mcpcage/internal/harden/hardentest"
)

// TestInstallContainerHardened: the install container holds the whole
// baseline a cage has (it lacked the seccomp profile, the swap cap, the
// masked paths and the core limit), on Docker and on Podman; only its
// network differs.
func TestInstallContainerHardened(t *testing.T) {
	t.Setenv("MCPCAGE_HOME", t.TempDir())
	ctx := context.Background()
	engines, err := hardentest.Engines(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, eng := range engines {
		_, hc, err := job{image: "img", cmd: []string{"npm", "install"}, user: "1000:1000"}.configs(ctx, eng)
		if err != nil {
			t.Fatal(err)
		}
		if err := hardentest.Check(hc); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if hc.Runtime != "" {
			t.Errorf("%s: runtime %q: the install needs the engine's default runtime (it reaches the registry)", name, hc.Runtime)
		}
	}
}
