package jsonrpc

import (
	"math/rand/v2"
	"testing"
)

// firstSpecial is the plain byte loop that special and plainWords must
// agree with.
func firstSpecial(b []byte) int {
	for i, c := range b {
		if c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
			return i
		}
	}
	return len(b)
}

// TestSpecialSearch: the vector search (special, where this CPU has it)
// and the portable one (plainWords) find the first byte that needs a
// closer look at every position of buffers of every length up to a few
// vectors, from every alignment, among filler bytes next to the limits
// (0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7f: none of them special), with more
// special bytes after it, and find none in filler alone.
func TestSpecialSearch(t *testing.T) {
	filler := []byte{0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7f, 'a', '0'}
	specials := []byte{'"', '\\', 0x00, 0x1f, 0x80, 0xc3, 0xff}
	rng := rand.New(rand.NewPCG(1, 2))
	_, vector := special(nil)
	if !vector {
		t.Log("no vector search on this CPU: plainWords only")
	}
	check := func(b []byte, want int) {
		t.Helper()
		if got, ok := special(b); ok && got != want {
			t.Fatalf("special(%q) = %d, want %d", b, got, want)
		}
		s := &scanner{b: b, quote: -1, slash: -1}
		if got := s.plainWords(0); got != want {
			t.Fatalf("plainWords(%q) = %d, want %d", b, got, want)
		}
	}
	buf := make([]byte, 200)
	for n := 0; n <= 140; n++ {
		for off := 0; off < 4; off++ {
			b := buf[off : off+n]
			for i := range b {
				b[i] = filler[rng.IntN(len(filler))]
			}
			check(b, n)
			for p := 0; p < n; p++ {
				for _, c := range specials {
					keep := b[p]
					b[p] = c
					if q := p + 1 + rng.IntN(n-p); q < n { // a later one must not matter
						later := b[q]
						b[q] = specials[rng.IntN(len(specials))]
						check(b, firstSpecial(b))
						b[q] = later
					}
					check(b, p)
					b[p] = keep
				}
			}
		}
	}
}
