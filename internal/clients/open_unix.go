//go:build unix

package clients

import (
	"fmt"
	"os"
	"syscall"
)

// openConfig opens a configuration file for reading without ever blocking:
// O_NONBLOCK, so a FIFO or a device planted in its place does not hold the
// open, and then only a regular file on an ordinary file system is kept
// (specialFS). A file of procfs such as /proc/kmsg is a regular file whose
// read blocks.
func openConfig(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	if err := keepRegular(f); err != nil {
		return nil, err
	}
	if fs := specialFS(f); fs != "" {
		f.Close()
		return nil, fmt.Errorf("a file of %s, not a configuration; not read", fs)
	}
	return f, nil
}
