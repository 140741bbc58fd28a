package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpcage/mcpcage/internal/guard"
	"github.com/mcpcage/mcpcage/internal/launch"
	"github.com/mcpcage/mcpcage/internal/proxy"
)

// The chain benchmarks compare, in one run and interleaved (each iteration
// takes every way in turn, a different one first each time), the ways a
// client can reach one tiny MCP server on real OS pipes:
//
//	direct  the client writes to the server's stdin and reads its stdout
//	relay   two goroutines copying bytes each way: the physical cost of one
//	        extra hop, the floor for any proxy
//	core    proxy.Run with no policies: framing, strict parse, id matching
//	full    proxy.Run with every run extension of `mcpcage run` (pins,
//	        scanner, audit with a real log on disk), no container
//
// The machine is shared and noisy: read the -over-relay and -pct figures,
// which come from the same iterations, rather than absolute microseconds.

// chainServer is a minimal MCP server on OS pipes: it answers initialize,
// tools/list (one tool, "echo") and tools/call with a text result of about
// size bytes, and anything else with {}.
type chainServer struct {
	inR, inW, outR, outW *os.File
	done                 chan struct{}
}

// proseBlock is ordinary English, so that the scanner reads text like a real
// result rather than one repeated byte.
const proseBlock = "The report lists every file in the project folder with its size and the date it last changed. " +
	"Files under the build folder are left out, and so are hidden ones. Totals are given per folder, largest first. "

func resultText(size int) string {
	var b bytes.Buffer
	for b.Len() < size {
		b.WriteString(proseBlock)
	}
	return string(b.Bytes()[:size])
}

func newChainServer(tb testing.TB, size int) *chainServer {
	s := &chainServer{done: make(chan struct{})}
	var err error
	if s.inR, s.inW, err = os.Pipe(); err != nil {
		tb.Fatal(err)
	}
	if s.outR, s.outW, err = os.Pipe(); err != nil {
		tb.Fatal(err)
	}
	head := `,"result":{"content":[{"type":"text","text":"`
	text := resultText(max(0, size-len(head)-40))
	go func() {
		defer close(s.done)
		defer s.outW.Close()
		br := bufio.NewReaderSize(s.inR, 256<<10)
		bw := bufio.NewWriterSize(s.outW, 256<<10)
		for {
			line, err := br.ReadSlice('\n')
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
			if err != nil {
				return
			}
			i := bytes.Index(line, []byte(`"id":`))
			if i < 0 {
				continue // a notification
			}
			i += 5
			j := i + bytes.IndexAny(line[i:], ",}")
			bw.WriteString(`{"jsonrpc":"2.0","id":`)
			bw.Write(line[i:j])
			switch {
			case bytes.Contains(line, []byte(`"method":"tools/call"`)):
				bw.WriteString(head)
				bw.WriteString(text)
				bw.WriteString(`"}]}}` + "\n")
			case bytes.Contains(line, []byte(`"method":"initialize"`)):
				bw.WriteString(`,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"bench","version":"1"}}}` + "\n")
			case bytes.Contains(line, []byte(`"method":"tools/list"`)):
				bw.WriteString(`,"result":{"tools":[{"name":"echo","description":"Echoes its text.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}}]}}` + "\n")
			default:
				bw.WriteString(`,"result":{}}` + "\n")
			}
			if br.Buffered() == 0 && bw.Flush() != nil {
				return
			}
		}
	}()
	return s
}

func (s *chainServer) Stdin() io.WriteCloser { return s.inW }
func (s *chainServer) Stdout() io.Reader     { return s.outR }
func (s *chainServer) Stderr() io.Reader     { return nil }
func (s *chainServer) Wait() (int, error)    { <-s.done; return 0, nil }
func (s *chainServer) Stop(ctx context.Context) error {
	s.inW.Close()
	<-s.done
	s.inR.Close()
	s.outR.Close()
	return nil
}

// chainCall is a tools/call of "echo" about size bytes long, newline included.
func chainCall(id, size int) []byte {
	head := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`
	return []byte(head + resultText(max(0, size-len(head)-5)) + "\"}}}\n")
}

var chainWays = []string{"direct", "relay", "core", "full"}

// chainPeer is the client's end of one way.
type chainPeer struct {
	w    io.Writer
	r    *bufio.Reader
	stop func()
}

func (p *chainPeer) readLine() error {
	for {
		_, err := p.r.ReadSlice('\n')
		if err != bufio.ErrBufferFull {
			return err
		}
	}
}

func (p *chainPeer) roundTrip(msg []byte) error {
	if _, err := p.w.Write(msg); err != nil {
		return err
	}
	return p.readLine()
}

// newChainPeer starts a server of responses about size bytes and connects to
// it the given way, handshake and tools/list done.
func newChainPeer(tb testing.TB, way string, size int) *chainPeer {
	srv := newChainServer(tb, size)
	p := &chainPeer{}
	switch way {
	case "direct":
		p.w, p.r = srv.inW, bufio.NewReaderSize(srv.outR, 256<<10)
		p.stop = func() { srv.Stop(context.Background()) }
	case "relay":
		cinR, cinW, _ := os.Pipe()
		coutR, coutW, _ := os.Pipe()
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { io.Copy(srv.inW, cinR); srv.inW.Close(); wg.Done() }()
		go func() { io.Copy(coutW, srv.outR); coutW.Close(); wg.Done() }()
		p.w, p.r = cinW, bufio.NewReaderSize(coutR, 256<<10)
		p.stop = func() {
			cinW.Close()
			wg.Wait()
			srv.Stop(context.Background())
			cinR.Close()
			coutR.Close()
		}
	case "core", "full":
		var policies []proxy.Policy
		errOut := &cageBuffer{}
		if way == "full" {
			dir := tb.TempDir()
			os.Setenv("MCPCAGE_HOME", dir) // read when each policy is built, just below
			var err error
			if policies, err = guard.New(guard.Config{Name: "bench", Stderr: errOut,
				Launch: launch.Launch{Kind: "process", Argv: []string{"bench-server"}}, Home: dir}); err != nil {
				tb.Fatal(err)
			}
		}
		cinR, cinW, _ := os.Pipe()
		coutR, coutW, _ := os.Pipe()
		done := make(chan struct{})
		go func() {
			proxy.Run(context.Background(), proxy.Config{Session: &proxy.Session{Name: "bench"}, Policies: policies, Stderr: errOut, StopTimeout: 2 * time.Second}, cinR, coutW, srv)
			coutW.Close()
			close(done)
		}()
		p.w, p.r = cinW, bufio.NewReaderSize(coutR, 256<<10)
		p.stop = func() {
			cinW.Close()
			<-done
			coutR.Close()
			if s := errOut.String(); s != "" && way == "full" && bytes.Contains([]byte(s), []byte("error")) {
				tb.Errorf("full chain stderr: %s", s)
			}
		}
	default:
		tb.Fatalf("unknown way %q", way)
	}
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}` + "\n",
		`{"jsonrpc":"2.0","id":"l","method":"tools/list"}` + "\n",
	} {
		if err := p.roundTrip([]byte(m)); err != nil {
			tb.Fatalf("%s: handshake: %v", way, err)
		}
		if m[len(m)-3] == 'e' { // after initialize
			p.w.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
		}
	}
	// One call before timing: what a session loads once, on first use (the
	// scanner's rules), is not a per-call cost.
	if err := p.roundTrip(chainCall(0, size)); err != nil {
		tb.Fatalf("%s: first call: %v", way, err)
	}
	return p
}

// benchSizesChain are the sizes of request and response, in bytes.
var benchSizesChain = []int{200, 64 << 10}

func chainSizeName(n int) string {
	if n >= 1<<10 {
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// BenchmarkChainRoundTrip: one tools/call and its answer at a time, each way
// in turn. Reported per way in µs per round trip, and what core and full add
// over the relay.
func BenchmarkChainRoundTrip(b *testing.B) {
	for _, size := range benchSizesChain {
		b.Run(chainSizeName(size), func(b *testing.B) {
			peers := make([]*chainPeer, len(chainWays))
			for i, w := range chainWays {
				peers[i] = newChainPeer(b, w, size)
			}
			defer func() {
				for _, p := range peers {
					p.stop()
				}
			}()
			reqs := [][]byte{chainCall(1, size), chainCall(2, size)}
			spent := make([]time.Duration, len(peers))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for k := range peers {
					j := (i + k) % len(peers)
					t0 := time.Now()
					if err := peers[j].roundTrip(reqs[i&1]); err != nil {
						b.Fatalf("%s: %v", chainWays[j], err)
					}
					spent[j] += time.Since(t0)
				}
			}
			us := func(j int) float64 { return float64(spent[j].Nanoseconds()) / 1e3 / float64(b.N) }
			for j, w := range chainWays {
				b.ReportMetric(us(j), w+"-us")
			}
			b.ReportMetric(us(2)-us(1), "core-over-relay-us")
			b.ReportMetric(us(3)-us(1), "full-over-relay-us")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkChainPipelined: a burst of tools/calls written while the answers
// are read, each way in turn. Reported per way in calls/s, and each way's
// throughput as a percentage of direct and of the relay.
func BenchmarkChainPipelined(b *testing.B) {
	for _, size := range benchSizesChain {
		burst := 256
		if size > 1<<10 {
			burst = 32
		}
		b.Run(chainSizeName(size), func(b *testing.B) {
			peers := make([]*chainPeer, len(chainWays))
			for i, w := range chainWays {
				peers[i] = newChainPeer(b, w, size)
			}
			defer func() {
				for _, p := range peers {
					p.stop()
				}
			}()
			var reqs bytes.Buffer
			for i := 0; i < burst; i++ {
				reqs.Write(chainCall(1000+i, size))
			}
			spent := make([]time.Duration, len(peers))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for k := range peers {
					j := (i + k) % len(peers)
					p := peers[j]
					t0 := time.Now()
					errc := make(chan error, 1)
					go func() { _, err := p.w.Write(reqs.Bytes()); errc <- err }()
					for n := 0; n < burst; n++ {
						if err := p.readLine(); err != nil {
							b.Fatalf("%s: %v", chainWays[j], err)
						}
					}
					if err := <-errc; err != nil {
						b.Fatalf("%s: %v", chainWays[j], err)
					}
					spent[j] += time.Since(t0)
				}
			}
			rate := func(j int) float64 { return float64(burst*b.N) / spent[j].Seconds() }
			for j, w := range chainWays {
				b.ReportMetric(rate(j), w+"-calls/s")
			}
			b.ReportMetric(100*rate(2)/rate(0), "core-pct-direct")
			b.ReportMetric(100*rate(3)/rate(0), "full-pct-direct")
			b.ReportMetric(100*rate(2)/rate(1), "core-pct-relay")
			b.ReportMetric(100*rate(3)/rate(1), "full-pct-relay")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkSessionRSS runs one session of the full chain as its own process
// (mcpcage-bare: every run extension, no container) in front of the fixture
// server: the handshake, each request once the one before is answered, then
// 300 pipelined tools/calls whose results carry 64 KiB of text; every answer
// must be a result. It reports the session process's peak resident set
// (VmHWM).
func BenchmarkSessionRSS(b *testing.B) {
	var peak int64
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		os.MkdirAll(dir+"/mcpcage", 0o700)
		os.MkdirAll(dir+"/home", 0o700)
		tools := dir + "/tools.json"
		os.WriteFile(tools, []byte(`{"tools":[{"name":"echo","description":"Echoes its text.","inputSchema":{"type":"object"}}]}`), 0o600)
		cmd := exec.Command("mcpcage-bare", "--name", "rss", "--", "fixture-server")
		cmd.Env = testEnv(dir, "FIXTURE_TOOLS="+tools, "FIXTURE_RESULT_TEXT="+resultText(64<<10))
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		errOut := &cageBuffer{}
		cmd.Stderr = errOut
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		rd := bufio.NewReaderSize(out, 1<<20)
		// answer reads one answer and fails on an error: a request the
		// proxy refused (one sent before initialize was answered, say) is
		// not scanned, and a session of refusals measures nothing.
		answer := func(what string) {
			line, err := rd.ReadString('\n')
			if err != nil {
				b.Fatalf("%s: %v\n%s", what, err, errOut.String())
			}
			if !strings.Contains(line, `"result":`) {
				b.Fatalf("%s: not a result: %.300q", what, line)
			}
		}
		fmt.Fprintln(in, `{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
		answer("initialize")
		fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		fmt.Fprintln(in, `{"jsonrpc":"2.0","id":"l","method":"tools/list"}`)
		answer("tools/list")
		go func() {
			for k := 0; k < 300; k++ {
				fmt.Fprintf(in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"call %d"}}}`+"\n", k, k)
			}
		}()
		for n := 0; n < 300; n++ {
			answer(fmt.Sprintf("answer %d", n))
		}
		peak = max(peak, vmHWM(b, cmd.Process.Pid))
		in.Close()
		io.Copy(io.Discard, rd)
		if err := cmd.Wait(); err != nil {
			b.Fatalf("session: %v\n%s", err, errOut.String())
		}
	}
	b.ReportMetric(float64(peak)/1024, "session-peak-rss-MB")
	b.ReportMetric(0, "ns/op")
}

// vmHWM is the peak resident set of a running process, in KiB, from
// /proc/PID/status. (Not the ru_maxrss of the exited child: Go starts
// children with vfork semantics, and Linux counts the parent's resident set
// at exec into the child's maxrss.)
func vmHWM(tb testing.TB, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	tb.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// cpuTime is the CPU time the threads of process pid have used so far: the
// sum of the first field of /proc/PID/task/*/schedstat (nanoseconds on a
// CPU, exact, unlike the clock ticks of /proc/PID/stat). A thread that
// ends between two readings takes its time with it; Go's threads do not
// end while a program runs.
func cpuTime(tb testing.TB, pid int) time.Duration {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		tb.Fatalf("no threads of process %d in /proc: %v", pid, err)
	}
	var sum int64
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if err != nil {
			continue // the thread is gone
		}
		f := strings.Fields(string(data))
		if len(f) == 0 {
			tb.Fatalf("%s: %q", t, data)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			tb.Fatalf("%s: %v", t, err)
		}
		sum += n
	}
	return time.Duration(sum)
}
