//go:build !purego

package jsonrpc

import "golang.org/x/sys/cpu"

// specialAVX2 is in special_amd64.s.
//
//go:noescape
func specialAVX2(b []byte) int

// special returns the index of the first byte of b that a string needs a
// closer look at ('"', '\\', below 0x20, at or above 0x80), or len(b), and
// true; false when this CPU has no AVX2 (plain then uses its portable
// search).
func special(b []byte) (int, bool) {
	if !cpu.X86.HasAVX2 {
		return 0, false
	}
	return specialAVX2(b), true
}
