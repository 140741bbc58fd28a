package jsonrpc

import (
	"strings"
	"testing"
)

func benchLine(size int) []byte {
	head := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`
	return []byte(head + strings.Repeat("x", size-len(head)-4) + `"}}}`)
}

func BenchmarkParse(b *testing.B) {
	for _, size := range []int{200, 64 << 10} {
		line := benchLine(size)
		b.Run(map[int]string{200: "200B", 64 << 10: "64KiB"}[size], func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := Parse(line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadLine is framing alone: each line copied out of the reader's
// buffer into a slice of its own.
func BenchmarkReadLine(b *testing.B) {
	for _, size := range []int{200, 64 << 10} {
		line := append(benchLine(size), '\n')
		b.Run(map[int]string{200: "200B", 64 << 10: "64KiB"}[size], func(b *testing.B) {
			src := &repeatReader{line: line}
			rd := NewReader(src, 0)
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := rd.ReadLine(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// repeatReader gives line again and again.
type repeatReader struct {
	line []byte
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.line[r.off:])
		n += c
		r.off = (r.off + c) % len(r.line)
	}
	return n, nil
}
