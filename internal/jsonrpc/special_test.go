package jsonrpc

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
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
			b := buf[off : off+n : off+n] // no room after it: a read past the end fails
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

// TestPortableParseSame: the portable search (plainWords) gives the same
// verdict, reason and offset included, as the vector one (special) on the
// test vectors and on strings of escapes, UTF-8, bad UTF-8 and control
// bytes after every length of padding across the word and vector sizes,
// inside an object, an array and alone on the line.
func TestPortableParseSame(t *testing.T) {
	var lines [][]byte
	files, _ := filepath.Glob("testdata/*.json")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, b)
	}
	bodies := []string{"", `\n`, `\"`, `\\`, `\/`, `\u00e9`, `\ud83d\ude00`, `\ud83d`, `\x`, `\u12`,
		"é", "€", "😀", "\xff", "\xc3", "\xe2\x82", "\x00", "\x1f", "\x7f", " ", "\t", `"`}
	for _, body := range bodies {
		for pad := 0; pad <= 70; pad++ {
			p := strings.Repeat("a", pad)
			for _, f := range []string{
				`{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"%s"}}`,
				`{"jsonrpc":"2.0","id":1,"method":"m","params":{"s%s":1}}`,
				`["%s"]`, `"%s"`, `{"jsonrpc":"2.0","id":"%s","result":{}}`,
			} {
				lines = append(lines, []byte(strings.Replace(f, "%s", p+body+p, 1)))
				lines = append(lines, []byte(strings.Replace(f, "%s", p+body, 1)))
			}
		}
	}
	lines = append(lines, benchLine(64<<10))
	for _, line := range lines {
		mv, ev := (&scanner{}).parse(line)
		mw, ew := (&scanner{words: true}).parse(line)
		if (ev == nil) != (ew == nil) || ev != nil && ev.Error() != ew.Error() {
			t.Fatalf("%q: vector %v, portable %v", line, ev, ew)
		}
		if ev == nil && (string(mv.Params) != string(mw.Params) || mv.ID != mw.ID || string(mv.Result) != string(mw.Result)) {
			t.Fatalf("%q: vector %+v, portable %+v", line, mv, mw)
		}
	}
}
