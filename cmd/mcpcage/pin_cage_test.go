package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/docker/docker/api/types/image"

	"github.com/mcpcage/mcpcage/internal/cage"
)

// fixtureRepo is the repository of the fixture server's image. Its tag is
// the hash of the image's contents, so that checkouts with other fixture
// code on the same machine do not replace each other's image mid-run.
const fixtureRepo = "mcpcage-test/fixture-server"

func scriptPinCage() {
	// mkfixtureimage builds internal/fixture/fixtureserver as a static binary
	// and imports it as an image made from scratch, so that pin scripts can
	// run the same fixture caged by `mcpcage run --image`.
	// The scripts name the image $FIXTURE_IMAGE (TestScripts sets it).
	scriptCommands["mkfixtureimage"] = func() {
		tag, err := buildFixtureImage(context.Background())
		if err == nil && tag != os.Getenv("FIXTURE_IMAGE") {
			err = fmt.Errorf("the fixture server is now %s, not $FIXTURE_IMAGE %s: its code changed during the run", tag, os.Getenv("FIXTURE_IMAGE"))
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "mkfixtureimage:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// buildFixtureImage imports the fixture server's image unless the engine
// has it already, and returns its tag. It never removes an image: another
// checkout's run may hold the one of another tag.
func buildFixtureImage(ctx context.Context) (string, error) {
	tag, tarball, err := fixtureImage(ctx)
	if err != nil {
		return "", err
	}
	cli, err := cage.Connect(ctx)
	if err != nil {
		return "", err
	}
	defer cli.Close()
	if _, err := cli.ImageInspect(ctx, tag); err == nil {
		return tag, nil
	}
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: bytes.NewReader(tarball), SourceName: "-"}, tag, image.ImportOptions{
		Changes: []string{`ENTRYPOINT ["/fixture-server"]`},
	})
	if err != nil {
		return "", fmt.Errorf("importing the fixture image: %w", err)
	}
	_, err = io.Copy(io.Discard, rc)
	rc.Close()
	return tag, err
}

// fixtureImage builds the fixture server and returns its image's contents
// (a tar from scratch) and the tag they are known by.
func fixtureImage(ctx context.Context) (tag string, tarball []byte, err error) {
	dir, err := os.MkdirTemp("", "fixtureserver")
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "fixture-server")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-o", bin, "github.com/mcpcage/mcpcage/internal/fixture/fixtureserver")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if _, file, _, ok := runtime.Caller(0); ok {
		cmd.Dir = filepath.Dir(file) // inside the module, wherever the script runs
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("building the fixture server: %v\n%s", err, out)
	}
	code, err := os.ReadFile(bin)
	if err != nil {
		return "", nil, err
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
			return "", nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return "", nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return "", nil, err
	}
	sum := sha256.Sum256(buf.Bytes())
	return fixtureRepo + ":" + hex.EncodeToString(sum[:6]), buf.Bytes(), nil
}
