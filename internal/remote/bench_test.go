package remote

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpcage/mcpcage/internal/fixture"
)

// BenchmarkBridgeRoundTrip is one tools/call through the bridge alone (no
// guard) to the fixture over Streamable HTTP on loopback, sequentially.
func BenchmarkBridgeRoundTrip(b *testing.B) {
	tools := filepath.Join(b.TempDir(), "tools.json")
	os.WriteFile(tools, []byte(`{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`), 0o644)
	b.Setenv("FIXTURE_TOOLS", tools)
	cfg, _ := fixture.ConfigFromEnv()
	srv := httptest.NewServer(fixture.HTTPHandler(cfg, ""))
	defer srv.Close()
	u, _ := CheckURL(srv.URL + "/mcp")
	s, _ := Dial(Options{URL: u, MaxLine: 1 << 20})
	defer s.Stop(context.Background())
	go io.Copy(io.Discard, s.Stderr())
	rd := bufio.NewReader(s.Stdout())
	rt := func(line string) {
		io.WriteString(s.Stdin(), line+"\n")
		if _, err := rd.ReadString('\n'); err != nil {
			b.Fatal(err)
		}
	}
	rt(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rt(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}`, i+10))
	}
}
