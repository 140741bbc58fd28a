package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/mcpcage/mcpcage/internal/cage/cagetest"
)

// TestRunStdioWays: by default here (Docker on this kernel, a static
// mcpcage) the server's stdio is named pipes, said nowhere; --stdio attach
// takes the engine's attach stream and says so once under --progress plain;
// both serve; a way that is none is refused as a command line.
func TestRunStdioWays(t *testing.T) {
	probeEngine(t)
	dir := stateDir(t)
	for _, c := range []struct {
		args []string
		said bool
	}{
		{[]string{"--image", cagetest.ProbeImage}, false},
		{[]string{"--stdio", "attach", "--image", cagetest.ProbeImage}, true},
	} {
		cs, stderr := caged(t, dir, []string{"MCPCAGE_PROGRESS=plain"}, c.args...)
		if out, _ := call(t, cs, "probe", map[string]any{"check": "euid"}); !strings.Contains(out, `"check":"euid"`) {
			t.Errorf("%v: the probe did not answer: %s", c.args, out)
		}
		cs.Close()
		said := strings.Count(stderr.String(), "stdio goes through the engine's attach stream")
		if c.said && said != 1 || !c.said && said != 0 {
			t.Errorf("%v: said %d times that the stdio takes the attach stream\n%s", c.args, said, stderr.String())
		}
	}
	cmd := exec.Command("mcpcage", "run", "--stdio", "sometimes", "--image", cagetest.ProbeImage)
	cmd.Env = testEnv(dir)
	b, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(b), `--stdio "sometimes" is not a way`) {
		t.Errorf("--stdio sometimes: %v\n%s", err, b)
	}
}
