package cage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestContextHost(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DOCKER_CONTEXT", "")
	if h := contextHost(dir); h != "" {
		t.Errorf("no config: %q", h)
	}
	write := func(p, s string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "config.json"), `{"auths":{},"currentContext":"colima"}`)
	sum := sha256.Sum256([]byte("colima"))
	write(filepath.Join(dir, "contexts", "meta", hex.EncodeToString(sum[:]), "meta.json"),
		`{"Name":"colima","Metadata":{},"Endpoints":{"docker":{"Host":"unix:///Users/me/.colima/default/docker.sock","SkipTLSVerify":false}}}`)
	if h := contextHost(dir); h != "unix:///Users/me/.colima/default/docker.sock" {
		t.Errorf("current context: %q", h)
	}
	t.Setenv("DOCKER_CONTEXT", "default")
	if h := contextHost(dir); h != "" {
		t.Errorf("DOCKER_CONTEXT=default: %q", h)
	}
	t.Setenv("DOCKER_CONTEXT", "remote")
	sum = sha256.Sum256([]byte("remote"))
	write(filepath.Join(dir, "contexts", "meta", hex.EncodeToString(sum[:]), "meta.json"),
		`{"Name":"remote","Endpoints":{"docker":{"Host":"ssh://me@elsewhere"}}}`)
	if h := contextHost(dir); h != "" {
		t.Errorf("an ssh context is left to DOCKER_HOST, got %q", h)
	}
}

// TestEngineTable: discovery (the default socket absent) finds each engine of the table at its socket
// when DOCKER_HOST, the context and the default socket say nothing, and
// masking names the folder of every engine's socket that is there, whatever
// engine is in use. (Docker Desktop, Colima, OrbStack, Rancher Desktop and a
// Podman machine cannot run here: their paths are tested, not the engines.)
func TestEngineTable(t *testing.T) {
	home, xdg := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	t.Setenv("DOCKER_HOST", "")
	t.Setenv("DOCKER_CONTEXT", "")
	t.Setenv("DOCKER_CONFIG", filepath.Join(home, "nothing"))
	var users []engine // the engines of a user's own folders
	for _, e := range engines {
		if !e.System {
			users = append(users, e)
		}
	}
	for _, e := range users {
		for _, s := range e.Sockets {
			p := expand(s)
			if !strings.HasPrefix(p, home) && !strings.HasPrefix(p, xdg) {
				t.Fatalf("%s: %s expands to %s, outside the home and the runtime folder", e.Name, s, p)
			}
			// A short socket path: the real one may exceed sun_path here.
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("unix", p)
			if err != nil {
				t.Fatalf("%s: %v", e.Name, err)
			}
			if h := discover(filepath.Join(xdg, "no-default.sock"), users); h != "unix://"+p {
				t.Errorf("%s: discover() = %q, want unix://%s", e.Name, h, p)
			}
			if n := engineName("unix://" + p); n != e.Name {
				t.Errorf("engineName(%s) = %q, want %q", p, n, e.Name)
			}
			if !slices.Contains(DockerSocketDirs(), filepath.Dir(p)) {
				t.Errorf("%s: DockerSocketDirs() = %q lacks %s", e.Name, DockerSocketDirs(), filepath.Dir(p))
			}
			if _, err := ResolveMount(filepath.Dir(p), false, ""); err == nil {
				t.Errorf("%s: mounting %s (its socket's folder) was allowed", e.Name, filepath.Dir(p))
			}
			if m, err := ResolveMount(home, false, ""); err == nil && strings.HasPrefix(p, home) {
				if !slices.Contains(MasksFor([]Mount{m}, DockerSocketDirs()...), filepath.Dir(p)) {
					t.Errorf("%s: mounting the home does not mask %s", e.Name, filepath.Dir(p))
				}
			}
			ln.Close()
			os.Remove(p)
		}
	}
	// DOCKER_HOST wins over the table.
	p := expand("$XDG_RUNTIME_DIR/podman/podman.sock")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	t.Setenv("DOCKER_HOST", "unix:///elsewhere/docker.sock")
	if c, err := Connect(context.Background()); err == nil {
		c.Close()
		t.Error("DOCKER_HOST names nothing: Connect should fail, not fall back to the table")
	} else if !strings.Contains(err.Error(), "/elsewhere/docker.sock") {
		t.Errorf("Connect with DOCKER_HOST: %v", err)
	}
	// The system engines' folders are refused under any mount.
	for _, s := range systemEnginePaths() {
		if _, err := os.Stat(s); err == nil {
			if _, err := ResolveMount(filepath.Dir(s), false, ""); err == nil {
				t.Errorf("mounting %s (holds %s) was allowed", filepath.Dir(s), s)
			}
		}
	}
}
