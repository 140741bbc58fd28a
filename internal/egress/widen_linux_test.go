package egress

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// The session's pipes are 1 MiB, not the default 64 KiB: the gateway's
// downloads move in larger writes (BenchmarkEgressDownload).
func TestPipesWidened(t *testing.T) {
	dir := t.TempDir()
	if err := MakePipes(dir); err != nil {
		t.Fatal(err)
	}
	got := make(chan pipePair, 1)
	go func() {
		c, err := OpenGatewayPipes(dir)
		if err != nil {
			t.Error(err)
			close(got)
			return
		}
		got <- c.(pipePair)
	}()
	shim, err := OpenShimPipes(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer shim.Close()
	gw, ok := <-got
	if !ok {
		return
	}
	defer gw.Close()
	for _, f := range []*os.File{gw.r.(*os.File), gw.w.(*os.File)} {
		n, err := unix.FcntlInt(f.Fd(), unix.F_GETPIPE_SZ, 0)
		if err != nil || n != 1<<20 {
			t.Errorf("%s: pipe size %d (%v), want 1 MiB", f.Name(), n, err)
		}
	}
}
