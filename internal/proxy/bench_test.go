package proxy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"testing"
	"time"
)

// benchServer is an in-process echo server on real OS pipes, as a server's
// stdio would be: it answers each request with a response of the same size.
type benchServer struct {
	inR, inW, outR, outW *os.File
	done                 chan struct{}
}

func newBenchServer(b testing.TB, size int) *benchServer {
	s := &benchServer{done: make(chan struct{})}
	var err error
	if s.inR, s.inW, err = os.Pipe(); err != nil {
		b.Fatal(err)
	}
	if s.outR, s.outW, err = os.Pipe(); err != nil {
		b.Fatal(err)
	}
	go func() {
		defer close(s.done)
		defer s.outW.Close()
		br := bufio.NewReaderSize(s.inR, 128<<10)
		bw := bufio.NewWriterSize(s.outW, 128<<10)
		pad := bytes.Repeat([]byte("r"), size)
		for {
			line, err := br.ReadSlice('\n')
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
			if err != nil {
				return
			}
			i := bytes.Index(line, []byte(`"id":`)) + 5
			j := i + bytes.IndexByte(line[i:], ',')
			head := `{"jsonrpc":"2.0","id":` + string(line[i:j]) + `,"result":{"pad":"`
			bw.WriteString(head)
			bw.Write(pad[:max(0, size-len(head)-4)])
			bw.WriteString("\"}}\n")
			if br.Buffered() == 0 {
				if bw.Flush() != nil {
					return
				}
			}
		}
	}()
	return s
}

func (s *benchServer) Stdin() io.WriteCloser { return s.inW }
func (s *benchServer) Stdout() io.Reader     { return s.outR }
func (s *benchServer) Stderr() io.Reader     { return nil }
func (s *benchServer) Wait() (int, error)    { <-s.done; return 0, nil }
func (s *benchServer) Stop(ctx context.Context) error {
	s.inW.Close()
	<-s.done
	s.inR.Close()
	s.outR.Close()
	return nil
}

func request(id, size int) []byte {
	head := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"pad":"`
	return []byte(head + string(bytes.Repeat([]byte("q"), max(0, size-len(head)-4))) + "\"}}\n")
}

// benchPeer gives the client's end: direct to the server's pipes, or
// through Run over another pair of OS pipes (the client's stdio).
func benchPeer(b testing.TB, size int, viaProxy bool) (w io.Writer, r *bufio.Reader, stop func()) {
	srv := newBenchServer(b, size)
	if !viaProxy {
		return srv.inW, bufio.NewReaderSize(srv.outR, 128<<10), func() { srv.Stop(context.Background()) }
	}
	cinR, cinW, _ := os.Pipe()
	coutR, coutW, _ := os.Pipe()
	done := make(chan struct{})
	go func() {
		Run(context.Background(), Config{Session: &Session{Name: "bench"}, StopTimeout: time.Second}, cinR, coutW, srv)
		coutW.Close()
		close(done)
	}()
	init := `{"jsonrpc":"2.0","id":0,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}` + "\n"
	cinW.WriteString(init)
	br := bufio.NewReaderSize(coutR, 128<<10)
	if _, err := br.ReadSlice('\n'); err != nil {
		b.Fatal(err)
	}
	return cinW, br, func() {
		cinW.Close()
		<-done
		coutR.Close()
	}
}

func readLine(br *bufio.Reader) error {
	for {
		_, err := br.ReadSlice('\n')
		if err != bufio.ErrBufferFull {
			return err
		}
	}
}

var benchSizes = []int{200, 64 << 10}

func sizeName(n int) string {
	if n >= 1<<10 {
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// BenchmarkRoundTrip: one request and its response at a time; the
// difference between proxy and direct is the latency the proxy adds.
func BenchmarkRoundTrip(b *testing.B) {
	for _, size := range benchSizes {
		for _, via := range []bool{false, true} {
			name := sizeName(size) + "/direct"
			if via {
				name = sizeName(size) + "/proxy"
			}
			b.Run(name, func(b *testing.B) {
				w, r, stop := benchPeer(b, size, via)
				defer stop()
				reqs := [][]byte{request(1, size), request(2, size)}
				b.SetBytes(int64(2 * size))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := w.Write(reqs[i&1]); err != nil {
						b.Fatal(err)
					}
					if err := readLine(r); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkThroughput: requests stream in while responses stream out; the
// ratio of MB/s, proxy over direct, is the throughput the proxy keeps.
func BenchmarkThroughput(b *testing.B) {
	for _, size := range benchSizes {
		for _, via := range []bool{false, true} {
			name := sizeName(size) + "/direct"
			if via {
				name = sizeName(size) + "/proxy"
			}
			b.Run(name, func(b *testing.B) {
				w, r, stop := benchPeer(b, size, via)
				defer stop()
				b.SetBytes(int64(2 * size))
				b.ResetTimer()
				errc := make(chan error, 1)
				go func() {
					bw := bufio.NewWriterSize(w, 256<<10)
					for i := 0; i < b.N; i++ {
						if _, err := bw.Write(request(i+1, size)); err != nil {
							errc <- err
							return
						}
					}
					errc <- bw.Flush()
				}()
				for i := 0; i < b.N; i++ {
					if err := readLine(r); err != nil {
						b.Fatal(err)
					}
				}
				if err := <-errc; err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

// TestFloodBothWays: requests stream in while answers stream out, with
// every pipe full at times; the proxy must neither deadlock nor lose one.
func TestFloodBothWays(t *testing.T) {
	for _, size := range benchSizes {
		w, r, stop := benchPeer(t, size, true)
		n := 20000 // more than a naive bound on waiting requests would allow
		if size > 1<<10 {
			n = 300
		}
		errc := make(chan error, 1)
		go func() {
			bw := bufio.NewWriterSize(w, 256<<10)
			for i := 0; i < n; i++ {
				if _, err := bw.Write(request(i+1, size)); err != nil {
					errc <- err
					return
				}
			}
			errc <- bw.Flush()
		}()
		got := make(chan int)
		go func() {
			i := 0
			for ; i < n; i++ {
				if readLine(r) != nil {
					break
				}
			}
			got <- i
		}()
		select {
		case i := <-got:
			if i != n {
				t.Errorf("%d-byte messages: %d of %d answers came back", size, i, n)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("%d-byte messages: stuck", size)
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		stop()
	}
}
