package cage

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
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
