//go:build unix

package egress

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// MakePipes makes the session's two named pipes in dir, open to every user:
// the cage and the gateway run as users of their own, and dir is what keeps
// others out (the caller makes it inside a folder only it can enter).
func MakePipes(dir string) error {
	for _, name := range []string{PipeUp, PipeDown} {
		if err := MakeFIFO(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// MakeFIFO makes a named pipe at p that a cage's user may open (mode 0666:
// the folder above keeps others out), for the egress pipes and the cage's
// stdio pipes alike.
func MakeFIFO(p string) error {
	if err := syscall.Mkfifo(p, 0o666); err != nil {
		return fmt.Errorf("cannot make the pipe %s: %v", p, err)
	}
	// The umask took bits off.
	if err := os.Chmod(p, 0o666); err != nil {
		return fmt.Errorf("cannot open the pipe %s to the cage: %v", p, err)
	}
	return nil
}

// OpenGatewayPipes opens dir's pipes as the gateway: PipeUp to read, then
// PipeDown to write. Each open waits for the shim's.
func OpenGatewayPipes(dir string) (io.ReadWriteCloser, error) {
	up, down, err := openPipes(dir, os.O_RDONLY, os.O_WRONLY)
	if err != nil {
		return nil, err
	}
	return pipePair{r: up, w: down}, nil
}

// OpenShimPipes opens dir's pipes as the shim, in the same order as the
// gateway: PipeUp to write, then PipeDown to read.
func OpenShimPipes(dir string) (io.ReadWriteCloser, error) {
	up, down, err := openPipes(dir, os.O_WRONLY, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	return pipePair{r: down, w: up}, nil
}

// openPipes opens PipeUp, then PipeDown (both ends open them in this order,
// so neither waits for the other forever), and widens them.
func openPipes(dir string, upFlag, downFlag int) (up, down *os.File, err error) {
	up, err = os.OpenFile(filepath.Join(dir, PipeUp), upFlag, 0)
	if err != nil {
		return nil, nil, err
	}
	down, err = os.OpenFile(filepath.Join(dir, PipeDown), downFlag, 0)
	if err != nil {
		up.Close()
		return nil, nil, err
	}
	Widen(up, down)
	return up, down, nil
}
