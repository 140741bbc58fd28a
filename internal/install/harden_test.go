package install

import (
	"testing"

	"github.com/mcpcage/mcpcage/internal/harden/hardentest"
)

// TestInstallContainerHardened: the install container holds the whole
// baseline a cage has (it lacked the seccomp profile, the swap cap, the
// masked paths and the core limit); only its network differs.
func TestInstallContainerHardened(t *testing.T) {
	_, hc, err := job{image: "img", cmd: []string{"npm", "install"}, user: "1000:1000"}.configs()
	if err != nil {
		t.Fatal(err)
	}
	if err := hardentest.Check(hc); err != nil {
		t.Error(err)
	}
	if hc.Runtime != "" {
		t.Errorf("runtime %q: the install needs the engine's default runtime (it reaches the registry)", hc.Runtime)
	}
}
