package install

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/mcpcage/mcpcage/internal/harden"
)

// LabelInstall marks install containers ("1"), so that leftovers of an
// interrupted install can be found and removed.
const LabelInstall = "io.mcpcage.install"

// job is one short-lived install container.
type job struct {
	image  string
	cmd    []string
	env    []string
	user   string
	mounts []mount.Mount
	labels map[string]string
}

// Output kept from an install container: the report is small, and of the
// installer's chatter only the end matters when it fails.
const (
	maxStdout = 1 << 20
	maxStderr = 64 << 10
)

// run starts the job, waits for it and removes it, whatever happens. The
// container reaches the network through the default bridge (the registry);
// otherwise it is hardened like a cage (harden.Baseline: no capabilities,
// no privileges to gain, the cage's seccomp profile, a read-only root, 2 GiB
// with no swap) and sees no host path except the mounts given.
func (j job) run(ctx context.Context, cli client.APIClient) (stdout, stderr []byte, code int, err error) {
	cfg, hc, err := j.configs(ctx, cli)
	if err != nil {
		return nil, nil, -1, err
	}
	created, err := cli.ContainerCreate(ctx, cfg, hc, nil, nil, "")
	if err != nil {
		return nil, nil, -1, fmt.Errorf("cannot create the install container: %v", err)
	}
	defer func() {
		// The caller's context may be the reason we are leaving.
		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = cli.ContainerRemove(rctx, created.ID, container.RemoveOptions{Force: true})
	}()

	att, err := cli.ContainerAttach(ctx, created.ID, container.AttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		return nil, nil, -1, fmt.Errorf("cannot attach to the install container: %v", err)
	}
	defer att.Close()
	var out limitedBuffer
	var errOut tailBuffer
	out.max, errOut.max = maxStdout, maxStderr
	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(&out, &errOut, att.Reader)
		copied <- err
	}()

	waitC, waitErr := cli.ContainerWait(ctx, created.ID, container.WaitConditionNextExit)
	if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return nil, nil, -1, fmt.Errorf("cannot start the install container: %v", err)
	}
	select {
	case w := <-waitC:
		code = int(w.StatusCode)
		if w.Error != nil {
			return nil, nil, -1, fmt.Errorf("install container: %s", w.Error.Message)
		}
	case err := <-waitErr:
		return nil, nil, -1, fmt.Errorf("install container: %v", err)
	case <-ctx.Done():
		return nil, nil, -1, ctx.Err()
	}
	select {
	case <-copied:
	case <-time.After(5 * time.Second):
	}
	return out.Bytes(), errOut.Bytes(), code, nil
}

// configs is the install container.
func (j job) configs(ctx context.Context, cli client.APIClient) (*container.Config, *container.HostConfig, error) {
	labels := map[string]string{LabelInstall: "1"}
	for k, v := range j.labels {
		labels[k] = v
	}
	cfg := &container.Config{
		Image: j.image,
		// Our own entrypoint: an image's (the official node image has one)
		// must not stand between us and the install.
		Entrypoint:   j.cmd[:1],
		Cmd:          j.cmd[1:],
		Env:          j.env,
		User:         j.user,
		WorkingDir:   MountPoint,
		Labels:       labels,
		AttachStdout: true,
		AttachStderr: true,
	}
	// The engine's default runtime: the install reaches the registry, and
	// a runtime registered for cages (gVisor with --network=none) has no
	// network. No CPU quota: the install's time is bounded by its timeout.
	kind, err := harden.KindOf(ctx, cli)
	if err != nil {
		return nil, nil, err
	}
	hc, err := harden.Baseline{Engine: kind, Memory: 2 << 30, Pids: 1024}.HostConfig("bridge")
	if err != nil {
		return nil, nil, err
	}
	hc.Mounts = j.mounts
	// exec: npm and pip unpack and run helper binaries under /tmp.
	hc.Tmpfs = map[string]string{"/tmp": "rw,nosuid,nodev,exec,size=2g,mode=1777"}
	return cfg, hc, nil
}

// limitedBuffer keeps the first max bytes and drops the rest.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		if len(p) > room {
			b.Buffer.Write(p[:room])
		} else {
			b.Buffer.Write(p)
		}
	}
	return len(p), nil
}

// tailBuffer keeps the last max bytes.
type tailBuffer struct {
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*b.max {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) Bytes() []byte {
	if len(b.buf) > b.max {
		return b.buf[len(b.buf)-b.max:]
	}
	return b.buf
}

var _ io.Writer = (*tailBuffer)(nil)
