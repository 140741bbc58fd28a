// Package proxytest runs a server as a plain child process, for tests of
// the proxy and of what is built on it: production servers run in a cage
// (internal/cage).
package proxytest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// StartProcess starts argv as a child process and returns it as a Server.
// env is the child's whole environment (nil inherits ours). The child runs in
// its own process group so that Stop also ends anything it started.
func StartProcess(ctx context.Context, argv []string, env []string) (*Process, error) {
	if len(argv) == 0 {
		return nil, errors.New("no server command given")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	ownGroup(cmd)

	// Our own pipes rather than cmd.StdoutPipe: exec's Wait closes those as
	// soon as the child exits, which would lose a last response still in the
	// pipe. These read ends stay open until Stop.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return nil, fmt.Errorf("cannot start %s: %w", argv[0], err)
	}
	closeAll(inR, outW, errW)
	p := &Process{cmd: cmd, stdin: inW, stdout: outR, stderr: errR, done: make(chan struct{})}
	go p.wait()
	return p, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// Process is a child process seen as the proxy sees a server (proxy.Server).
type Process struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	stderr *os.File

	done     chan struct{}
	code     int
	err      error
	stopOnce sync.Once
}

func (p *Process) wait() {
	err := p.cmd.Wait()
	p.code = exitCode(p.cmd.ProcessState)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		p.err = err
	}
	close(p.done)
}

// exitCode follows the shell's convention: 128+n for a child killed by signal n.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return 1
	}
	if sig, ok := signaled(ps); ok {
		return 128 + sig
	}
	return ps.ExitCode()
}

func (p *Process) Stdin() io.WriteCloser { return p.stdin }
func (p *Process) Stdout() io.Reader     { return p.stdout }
func (p *Process) Stderr() io.Reader     { return p.stderr }

func (p *Process) Wait() (int, error) {
	<-p.done
	return p.code, p.err
}

func (p *Process) Stop(ctx context.Context) error {
	p.stopOnce.Do(func() {
		killGroup(p.cmd)
		select {
		case <-p.done:
		case <-ctx.Done():
		}
		p.stdin.Close()
		// The group is dead, so its output ends by itself once read to the
		// end; close our ends a little later all the same, for a process
		// that left the group and still holds them.
		time.AfterFunc(time.Second, func() { closeAll(p.stdout, p.stderr) })
	})
	return nil
}

// ExitReason names the signal that ended the child, if one did.
func (p *Process) ExitReason() string {
	select {
	case <-p.done:
	default:
		return ""
	}
	if sig, ok := signaled(p.cmd.ProcessState); ok {
		return fmt.Sprintf("killed by signal %d", sig)
	}
	return ""
}
