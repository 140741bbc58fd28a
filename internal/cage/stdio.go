package cage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mcpcage/mcpcage/internal/egress"
)

// The server's stdio without the engine's attach stream: two named pipes in
// a folder of the session's own, bind-mounted read-only into the cage (a
// FIFO stays writable on a read-only mount: its data is not the
// filesystem's), where mcpcage's own static binary, run as the cage's
// entrypoint (LaunchCommand), opens them as fds 0 and 1 and replaces itself
// with the server. A message then crosses one pipe each way, instead of
// the client, dockerd, the containerd shim and the process. stderr stays on
// the attach stream, which nothing waits on.
const (
	// StdioDir is where the cage sees the session's stdio pipes.
	StdioDir = "/.mcpcage/stdio"
	// LaunchCommand is mcpcage's hidden subcommand that opens the pipes as
	// stdin and stdout and runs the server.
	LaunchCommand = "stdio-launch"
	pipeIn        = "in"  // the server's stdin
	pipeOut       = "out" // the server's stdout
)

// Stdio ways (--stdio, MCPCAGE_STDIO).
const (
	StdioAuto   = "auto"
	StdioPipes  = "pipes"
	StdioAttach = "attach"
)

// EnvStdio names the stdio way `mcpcage run` uses when --stdio is not given.
const EnvStdio = "MCPCAGE_STDIO"

// CageStdio is what a cage on pipes needs (Spec.Stdio).
type CageStdio struct {
	Binary string // the static mcpcage binary on the engine's host
	Dir    string // the session's folder of pipes on the engine's host
	// Shell says the image has a POSIX sh (the cage images do: their
	// install phase runs in sh): the shell opens the pipes, in the same
	// order, and execs the server, a few ms sooner than mcpcage's own
	// binary starts. Else (an image of the user's) the binary does.
	Shell bool
}

// shellLaunch is the shell's launcher: stdin from the in pipe, then stdout
// to the out pipe (the host opens them in this order), then the command,
// passed as the shell's arguments, never parsed by it.
const shellLaunch = `exec "$@" <` + StdioDir + `/` + pipeIn + ` >` + StdioDir + `/` + pipeOut

// stdioPipes is the host's side of a session's pipes.
type stdioPipes struct {
	dir    string // the folder the cage mounts
	unlock func()
	in     *fifoEnd // written: the server's stdin
	out    *fifoEnd // read: the server's stdout
	opened bool     // open has begun (set before the cage can end)
}

// newStdioPipes makes the session's pipes in a folder of base (made 0700
// when missing; only mcpcage's user enters it), locked while the session
// lives so that a later start can remove what a killed one left
// (reapPipes).
func newStdioPipes(base string) (*stdioPipes, error) {
	if err := os.MkdirAll(base, 0o700); err != nil {
		return nil, fmt.Errorf("cannot make the folder of the stdio pipes: %v", err)
	}
	dir, err := os.MkdirTemp(base, "pipes-")
	if err != nil {
		return nil, fmt.Errorf("cannot make the folder of the stdio pipes: %v", err)
	}
	p := &stdioPipes{dir: dir}
	fail := func(err error) (*stdioPipes, error) {
		p.remove()
		return nil, err
	}
	unlock, ok, err := tryLock(dir + ".lock")
	if err != nil || !ok {
		return fail(fmt.Errorf("cannot lock the folder of the stdio pipes: %v", err))
	}
	p.unlock = unlock
	// The cage's user sees the folder as its mount's root.
	if err := os.Chmod(dir, 0o755); err != nil {
		return fail(fmt.Errorf("cannot open the folder of the stdio pipes to the cage: %v", err))
	}
	for _, n := range []string{pipeIn, pipeOut} {
		if err := egress.MakeFIFO(filepath.Join(dir, n)); err != nil {
			return fail(err)
		}
	}
	p.in = &fifoEnd{path: filepath.Join(dir, pipeIn), write: true, ready: make(chan struct{})}
	p.out = &fifoEnd{path: filepath.Join(dir, pipeOut), ready: make(chan struct{})}
	return p, nil
}

// open starts opening the host's ends; each open returns once the launcher
// in the cage has opened the other end (or release gives up on it).
func (p *stdioPipes) open() {
	p.opened = true
	go p.in.open()
	go p.out.open()
}

// unblock ends the opens still waiting (the cage ended, or never opened its
// pipes): a read then sees EOF once what the server wrote is read, a write
// an error.
func (p *stdioPipes) unblock() {
	if !p.opened {
		return
	}
	p.in.unblock()
	p.out.unblock()
}

// close closes both host ends, once the session is over. Ends that were
// never opened (the cage did not start) have nothing to close.
func (p *stdioPipes) close() {
	if !p.opened {
		return
	}
	p.in.close()
	p.out.close()
}

func (p *stdioPipes) remove() {
	if p.dir != "" {
		_ = os.RemoveAll(p.dir)
		_ = os.Remove(p.dir + ".lock")
	}
	if p.unlock != nil {
		p.unlock()
	}
}

// fifoEnd is one host end of a pipe, usable before its open has returned:
// the first Read or Write waits for it.
type fifoEnd struct {
	path  string
	write bool

	ready  chan struct{} // closed when the open has returned
	mu     sync.Mutex
	f      *os.File
	err    error
	closed bool // an open that returns now is closed at once
}

func (e *fifoEnd) open() {
	flag := os.O_RDONLY
	if e.write {
		flag = os.O_WRONLY
	}
	f, err := os.OpenFile(e.path, flag, 0)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err == nil && e.closed {
		f.Close()
		f, err = nil, errStdioGone
	}
	if err == nil {
		egress.Widen(f)
	}
	e.f, e.err = f, err
	close(e.ready)
}

var errStdioGone = errors.New("the cage's stdio is closed")

// unblock ends an open that still waits, by opening the other end without
// waiting and closing it again: the reader then sees EOF, the writer an
// error on its first write. The open may not have begun its system call
// yet (then the other end's open fails, or passes unseen): it is tried
// again until the open has returned. An open that returns from now on is
// this one's doing, not the cage's: it is closed at once, so a write never
// lands in a pipe nobody in the cage reads.
func (e *fifoEnd) unblock() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	for {
		select {
		case <-e.ready:
			return
		default:
		}
		// A reader waits for a writer and the other way round.
		if other, err := openNonblock(e.path, !e.write); err == nil {
			select {
			case <-e.ready:
			case <-time.After(10 * time.Millisecond):
			}
			other.Close()
			continue
		}
		time.Sleep(time.Millisecond)
	}
}

// close closes this end, whether or not its open has returned yet.
func (e *fifoEnd) close() {
	e.unblock()
	e.mu.Lock()
	if e.f != nil {
		e.f.Close()
	}
	e.mu.Unlock()
}

func (e *fifoEnd) file() (*os.File, error) {
	<-e.ready
	return e.f, e.err
}

func (e *fifoEnd) Read(b []byte) (int, error) {
	f, err := e.file()
	if err != nil {
		return 0, io.EOF
	}
	n, err := f.Read(b)
	if err != nil && errors.Is(err, os.ErrClosed) {
		err = io.EOF
	}
	return n, err
}

func (e *fifoEnd) Write(b []byte) (int, error) {
	f, err := e.file()
	if err != nil {
		return 0, err
	}
	return f.Write(b)
}

// Close closes this end: the server's stdin sees EOF. It does not wait for
// a server that has not opened its stdin yet.
func (e *fifoEnd) Close() error {
	go e.close()
	return nil
}

// stdioWay decides how the cage's stdio travels: "pipes" or "attach", and
// why, for `--progress plain`. Asked: StdioAuto, StdioPipes or
// StdioAttach. Pipes need the engine on this machine's kernel (the named
// pipe in the bind mount is the same one; not Docker Desktop's or another
// VM's, not a remote engine), mcpcage's binary static (it is the launcher
// in the cage), and a runtime that opens a host's FIFO (not gVisor, whose
// gofer serves files, not pipes).
func stdioWay(asked, host string, gvisor bool, binErr error) (way, why string, err error) {
	switch asked {
	case StdioAttach:
		return StdioAttach, "as asked (--stdio attach)", nil
	case "", StdioAuto, StdioPipes:
	default:
		return "", "", fmt.Errorf("--stdio %q: give auto, pipes or attach", asked)
	}
	reason := ""
	switch {
	case !sharesPipes():
		reason = "named pipes are not shared with the engine on this system"
	case !strings.HasPrefix(host, "unix://") && host != "":
		reason = "the engine is not on this machine (" + host + ")"
	case engineInVM(host):
		reason = engineName(host) + " runs its containers in a VM, which shares no named pipe with this machine"
	case gvisor:
		reason = "gVisor does not open a named pipe of the host"
	case binErr != nil:
		reason = binErr.Error()
	}
	if reason == "" {
		return StdioPipes, "named pipes", nil
	}
	if asked == StdioPipes {
		return "", "", fmt.Errorf("--stdio pipes: %s", reason)
	}
	return StdioAttach, reason, nil
}
