package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mcpcage/mcpcage/internal/fixture"
)

// BenchmarkRemotePerCall times 300 sequential tools/calls of a remote
// server (the fixture, Streamable HTTP with JSON answers, on loopback, in
// this process) two ways, in turn within each iteration: a direct
// Streamable HTTP client (one POST a call, with the session's headers, as
// an SDK's client sends it) and `mcpcage run --url` (the bridge under the
// whole guard: pins, scanner, argument check, a durable audit record a
// call). Reported: µs a call each way, the ratio, and mcpcage's CPU a call.
func BenchmarkRemotePerCall(b *testing.B) {
	dir := b.TempDir()
	tools := filepath.Join(dir, "tools.json")
	if err := os.WriteFile(tools, []byte(`{"tools":[{"name":"echo","description":"Echoes its message.","inputSchema":{"type":"object","properties":{"message":{"type":"string"}}}}]}`), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Setenv("FIXTURE_TOOLS", tools)
	cfg, err := fixture.ConfigFromEnv()
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: fixture.HTTPHandler(cfg, "")}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/mcp"
	bin := filepath.Join(dir, "mcpcage-bin")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "github.com/mcpcage/mcpcage/cmd/mcpcage")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	b.Setenv("MCPCAGE_HOME", filepath.Join(dir, "state"))
	client := &http.Client{}
	post := func(body string, sid string) []byte {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			b.Fatalf("HTTP %d: %s", resp.StatusCode, out)
		}
		return out
	}
	direct := func() time.Duration {
		post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`, "")
		const sid = "fixture-1"
		post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid)
		post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, sid)
		start := time.Now()
		for i := 0; i < cageCalls; i++ {
			id := strconv.Itoa(10 + i)
			out := post(`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"echo","arguments":{"message":"call `+id+` of the benchmark"}}}`, sid)
			if !bytes.Contains(out, []byte(`"id":`+id)) {
				b.Fatalf("answer %s", out)
			}
		}
		return time.Since(start)
	}
	var tDirect time.Duration
	var bridge callRun
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runs := []func(){
			func() { tDirect += direct() },
			func() {
				r := sequentialCalls(b, exec.Command(bin, "run", "--name", "remote-bench", "--url", url), cageCalls, nil, "")
				bridge.elapsed += r.elapsed
				bridge.cpu += r.cpu
			},
		}
		for k := range runs {
			runs[(i+k)%len(runs)]()
		}
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(b.N*cageCalls) }
	b.ReportMetric(us(tDirect), "direct-http-us/call")
	b.ReportMetric(us(bridge.elapsed), "mcpcage-url-us/call")
	b.ReportMetric(float64(bridge.elapsed)/float64(tDirect), "bridge-ratio")
	b.ReportMetric(us(bridge.elapsed-tDirect), "bridge-adds-us/call")
	b.ReportMetric(us(bridge.cpu), "mcpcage-cpu-us/call")
	b.ReportMetric(0, "ns/op")
}
