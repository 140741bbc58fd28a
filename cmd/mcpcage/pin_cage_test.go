package main

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/docker/docker/api/types/image"

	"github.com/mcpcage/mcpcage/internal/cage"
)

// fixtureImage is the tag mkfixtureimage gives the fixture server's image.
const fixtureImage = "mcpcage-test/fixture-server:latest"

func scriptPinCage() {
	// mkfixtureimage builds internal/fixture/fixtureserver as a static binary
	// and imports it as an image made from scratch, so that pin scripts can
	// run the same fixture caged by `mcpcage run --image`.
	scriptCommands["mkfixtureimage"] = func() {
		if err := buildFixtureImage(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "mkfixtureimage:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

func buildFixtureImage(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "fixtureserver")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "fixture-server")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "github.com/mcpcage/mcpcage/internal/fixture/fixtureserver")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if _, file, _, ok := runtime.Caller(0); ok {
		cmd.Dir = filepath.Dir(file) // inside the module, wherever the script runs
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the fixture server: %v\n%s", err, out)
	}
	code, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		h    tar.Header
		body []byte
	}{
		{tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777}, nil},
		{tar.Header{Name: "fixture-server", Typeflag: tar.TypeReg, Mode: 0o755}, code},
	} {
		h := f.h
		h.Size = int64(len(f.body))
		if err := tw.WriteHeader(&h); err != nil {
			return err
		}
		if _, err := tw.Write(f.body); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	cli, err := cage.Connect(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: &buf, SourceName: "-"}, fixtureImage, image.ImportOptions{
		Changes: []string{`ENTRYPOINT ["/fixture-server"]`},
	})
	if err != nil {
		return fmt.Errorf("importing the fixture image: %w", err)
	}
	_, err = io.Copy(io.Discard, rc)
	rc.Close()
	return err
}
