package cage

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
)

// An mcpcage in another pid namespace (a container sharing the engine, the
// same host name and kernel) labels its cages with a pid of its own
// namespace. Seen from here that pid is another process or none, so without
// the namespace in the labels its live cages looked like orphans and any
// start here reaped them.
func TestOwnerOtherPIDNamespace(t *testing.T) {
	if os.Getenv("MCPCAGE_TEST_OWNER_CHILD") == "1" {
		// The child, in its own pid namespace: say who it is, then live
		// until stdin closes.
		if err := json.NewEncoder(os.Stdout).Encode(Self().Labels()); err != nil {
			t.Fatal(err)
		}
		_, _ = bufio.NewReader(os.Stdin).ReadByte()
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("a new pid namespace needs root here (CI runs as root)")
	}
	cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", os.Args[0], "-test.run=^TestOwnerOtherPIDNamespace$")
	cmd.Env = append(os.Environ(), "MCPCAGE_TEST_OWNER_CHILD=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("unshare: %v", err)
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	var labels map[string]string
	if err := json.NewDecoder(out).Decode(&labels); err != nil {
		t.Fatalf("the child in its own pid namespace said nothing: %v", err)
	}
	child := ownerFromLabels(labels)
	me := Self()
	if child.PIDNS == "" || child.PIDNS == me.PIDNS {
		t.Fatalf("the child's pid namespace %q, ours %q: want two different ones", child.PIDNS, me.PIDNS)
	}
	if child.Host != me.Host || child.Boot != me.Boot {
		t.Fatalf("the child is on another host or boot: %+v, we are %+v", child, me)
	}
	// The child runs: whatever it is here, it is not an orphan.
	if s := child.State(); s != OwnerUnknown {
		t.Errorf("a live owner in another pid namespace (pid %d there) is %v here, want unknown", child.PID, s)
	}
	// Older labels without the namespace keep today's rule.
	old := child
	old.PIDNS = ""
	old.PID = 1 << 22
	if s := old.State(); s != OwnerGone {
		t.Errorf("an owner without a pid namespace label whose pid does not run is %v, want gone", s)
	}
}
