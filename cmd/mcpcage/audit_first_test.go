package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"

	"github.com/mcpcage/mcpcage/internal/cage"
	"github.com/mcpcage/mcpcage/internal/cage/cagetest"
)

// TestRunAuditFirst: a session whose audit log cannot be opened never
// starts its server: mcpcage run fails with one line and what to do, and
// the engine created no container for it (its events say so). With the
// log open the same command creates its cage.
func TestRunAuditFirst(t *testing.T) {
	cli := probeEngine(t)
	dir := stateDir(t)
	// The audit folder is a file: the log cannot be opened, whoever runs.
	if err := os.WriteFile(filepath.Join(dir, "mcpcage", "audit"), []byte("not a folder"), 0o600); err != nil {
		t.Fatal(err)
	}
	created := func(run func() int) int {
		start := time.Now()
		pid := run()
		time.Sleep(500 * time.Millisecond) // the engine's events are stamped as they happen
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		f := filters.NewArgs(filters.Arg("type", "container"), filters.Arg("event", "create"),
			filters.Arg("label", cage.LabelOwnerPID+"="+strconv.Itoa(pid)))
		msgs, errs := cli.Events(ctx, events.ListOptions{Since: start.Format(time.RFC3339Nano), Until: time.Now().Format(time.RFC3339Nano), Filters: f})
		n := 0
		for {
			select {
			case <-msgs:
				n++
			case err := <-errs:
				if err != nil && !strings.Contains(err.Error(), "EOF") && ctx.Err() == nil {
					t.Fatalf("engine events: %v", err)
				}
				return n
			case <-ctx.Done():
				return n
			}
		}
	}
	var out []byte
	n := created(func() int {
		cmd := exec.Command("mcpcage", "run", "--image", cagetest.ProbeImage)
		cmd.Env = testEnv(dir)
		cmd.Stdin = strings.NewReader("")
		out, _ = cmd.CombinedOutput()
		return cmd.Process.Pid
	})
	if n != 0 {
		t.Errorf("the engine created %d container(s) for a session whose log could not be opened", n)
	}
	if !strings.Contains(string(out), "mcpcage: error: cannot open the audit log") || !strings.Contains(string(out), "mcpcage: hint: ") {
		t.Errorf("output:\n%s", out)
	}
	// Control: with the log open the same command creates its cage.
	if err := os.Remove(filepath.Join(dir, "mcpcage", "audit")); err != nil {
		t.Fatal(err)
	}
	n = created(func() int {
		cmd := exec.Command("mcpcage", "run", "--image", cagetest.ProbeImage)
		cmd.Env = testEnv(dir)
		cmd.Stdin = strings.NewReader("")
		out, _ = cmd.CombinedOutput()
		return cmd.Process.Pid
	})
	if n != 1 {
		t.Errorf("control: %d container(s) created, want 1:\n%s", n, out)
	}
}
