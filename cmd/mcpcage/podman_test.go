package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
)

// TestRunPodman: with DOCKER_HOST naming Podman's Docker-compatible socket,
// `mcpcage run -- npx -y PKG` installs a real npm server in Podman's
// install container, serves it caged, its tools list and answer, every
// call is on record, and no container of mcpcage's is left in Podman after
// the session. Podman's socket is MCPCAGE_TEST_PODMAN (`make test` starts
// the service, .ci/setup installs it and builds the images in it).
func TestRunPodman(t *testing.T) {
	host := os.Getenv("MCPCAGE_TEST_PODMAN")
	if host == "" {
		t.Skip("MCPCAGE_TEST_PODMAN is not set: make test sets it")
	}
	ctx := context.Background()
	pm, err := client.NewClientWithOpts(client.WithHost(host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer pm.Close()
	dir := stateDir(t)
	cs, stderr := caged(t, dir, []string{"DOCKER_HOST=" + host}, "--", "npx", "-y", memory)
	names := toolNames(t, cs, stderr)
	if !strings.Contains(strings.Join(names, " "), "read_graph") {
		t.Fatalf("tools through Podman: %v\nstderr:\n%s", names, stderr.String())
	}
	out, isErr := call(t, cs, "create_entities", map[string]any{"entities": []any{map[string]any{"name": "podman", "entityType": "engine", "observations": []any{"ran here"}}}})
	if isErr || !strings.Contains(out, "podman") {
		t.Errorf("create_entities through Podman: %s", out)
	}
	// While the session runs, its cage is Podman's.
	running, err := pm.ContainerList(ctx, container.ListOptions{Filters: filters.NewArgs(filters.Arg("label", "io.mcpcage.cage=1"))})
	if err != nil || len(running) != 1 {
		t.Errorf("Podman runs %d cages during the session (%v), want 1", len(running), err)
	}
	cs.Close()
	waitNoContainers(t, pm, "io.mcpcage.cage=1")
	waitNoContainers(t, pm, "io.mcpcage.install=1")
	logs, _ := filepath.Glob(filepath.Join(dir, "mcpcage", "audit", "log-*.jsonl"))
	var records strings.Builder
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		records.Write(b)
	}
	if !strings.Contains(records.String(), `"create_entities"`) {
		t.Errorf("the call through Podman is not on record (%d logs)", len(logs))
	}
}

// waitNoContainers waits (a minute at most) until the engine has no
// container with the label, and fails the test naming those left.
func waitNoContainers(t *testing.T, cli *client.Client, label string) {
	t.Helper()
	var left []container.Summary
	for range 60 {
		cs, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label))})
		if err != nil {
			t.Fatal(err)
		}
		if left = cs; len(left) == 0 {
			return
		}
		time.Sleep(time.Second)
	}
	for _, c := range left {
		t.Errorf("left after the session: %s %v (%s)", c.ID[:12], c.Names, c.State)
	}
}
