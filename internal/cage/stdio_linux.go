package cage

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// openNonblock opens the FIFO at p without waiting for its other end.
func openNonblock(p string, write bool) (*os.File, error) {
	flag := os.O_RDONLY
	if write {
		flag = os.O_WRONLY
	}
	return os.OpenFile(p, flag|syscall.O_NONBLOCK, 0)
}

func sharesPipes() bool { return true }

// LaunchOnPipes is the launcher in the cage: it opens dir's pipes as stdin
// (in, to read) and stdout (out, to write), in the order the host opens
// them, and replaces itself with argv, which keeps this process, its pid,
// its signals and its stderr.
func LaunchOnPipes(dir string, argv []string) error {
	if len(argv) == 0 {
		return fmt.Errorf("no command to run")
	}
	in, err := unix.Open(filepath.Join(dir, pipeIn), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cannot open the stdin pipe: %v", err)
	}
	out, err := unix.Open(filepath.Join(dir, pipeOut), unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cannot open the stdout pipe: %v", err)
	}
	if err := unix.Dup3(in, 0, 0); err != nil {
		return fmt.Errorf("cannot make the pipe stdin: %v", err)
	}
	if err := unix.Dup3(out, 1, 0); err != nil {
		return fmt.Errorf("cannot make the pipe stdout: %v", err)
	}
	unix.Close(in)
	unix.Close(out)
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	return unix.Exec(path, argv, os.Environ())
}
