//go:build !unix

package scan

// tableMem makes a slice on systems without anonymous mappings (see
// tables_unix.go).
func tableMem[T uint16 | int32](n int) ([]T, bool) { return make([]T, n), false }

func freezeTable[T uint16 | int32](t []T) {}
