//go:build unix

package scan

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// tableMem returns n zeroed elements outside the collected heap, and
// whether they are; when the system refuses the mapping, it makes a slice.
//
// The automaton's tables are most of what a session keeps live (4 MB of
// 8 under a burst of large results), and the collector lets the heap grow
// to twice what is live before it collects: on its heap, the tables cost
// their size twice in the resident set. They are made once, for the
// process's life, and hold no pointers, so nothing is lost by keeping
// them out of the collector's sight.
func tableMem[T uint16 | int32](n int) ([]T, bool) {
	var zero T
	size := n * int(unsafe.Sizeof(zero))
	if size == 0 {
		return nil, false
	}
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return make([]T, n), false
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n), true
}

// freezeTable makes a table that tableMem mapped read-only: once built,
// the automaton does not change, and a write to it stops the process.
func freezeTable[T uint16 | int32](t []T) {
	if cap(t) == 0 {
		return
	}
	var zero T
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(t))), cap(t)*int(unsafe.Sizeof(zero)))
	// It fails only for memory that is not a mapping of ours; the tables
	// read the same either way.
	_ = unix.Mprotect(b, unix.PROT_READ)
}
