//go:build linux || darwin || freebsd || netbsd || openbsd

package audit

import (
	"os"
	"syscall"
)

// readAll maps a log file read-only, so verifying a large log neither copies
// nor zeroes it; release unmaps it. The mapping is private to this process:
// a writer appending meanwhile only adds bytes past the mapped length.
func readAll(path string) (data []byte, release func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.Size() == 0 {
		return nil, func() {}, nil
	}
	if st.Size() > 1<<40 {
		return nil, nil, syscall.EFBIG
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_PRIVATE)
	if err != nil {
		// Some file systems cannot map; reading is only slower.
		b, err := os.ReadFile(path)
		return b, func() {}, err
	}
	return b, func() { _ = syscall.Munmap(b) }, nil
}
