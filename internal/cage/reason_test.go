package cage

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mcpcage/mcpcage/internal/proxy"
)

// TestOOMReasonReachesClient: a client waiting on a server that the kernel
// killed for its memory limit is told so, not only "status 137".
func TestOOMReasonReachesClient(t *testing.T) {
	cli, img := dockerAndProbe(t)
	ctx := context.Background()
	c, err := Start(ctx, cli, Spec{Name: "oom-reason", Image: img, Cmd: []string{"eat", "256"}, Memory: 96 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		code, _ := proxy.Run(ctx, proxy.Config{Session: &proxy.Session{Name: "oom"}, StopTimeout: 5 * time.Second}, inR, outW, c)
		outW.Close()
		done <- code
	}()
	go io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	if !strings.Contains(line, `"id":1`) || !strings.Contains(line, "killed for using more than its memory limit") || !strings.Contains(line, "--memory") {
		t.Errorf("answer %s does not say the memory limit killed the server", line)
	}
	inW.Close()
	go io.Copy(io.Discard, outR)
	select {
	case code := <-done:
		if code != 137 {
			t.Errorf("Run returned %d, want 137", code)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("proxy.Run did not return")
	}
}
