package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpcage/mcpcage/internal/audit"
)

// A call's audit record (call_start, written when the request goes to the
// server) is in the log file before its answer reaches the client, even for
// answers that come in a burst and share one group commit: this test, a
// process apart from the mcpcage session, reads the log the moment each
// answer arrives and finds at least as many call_start records as answers
// it has seen. Every call record with its outcome is there at the end.
func TestAuditRecordOnDiskBeforeAnswer(t *testing.T) {
	dir := stateDir(t)
	tools := filepath.Join(dir, "tools.json")
	if err := os.WriteFile(tools, []byte(`{"tools":[{"name":"echo","description":"Echoes its text.","inputSchema":{"type":"object"}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("mcpcage-bare", "--name", "order", "--", "fixture-server")
	cmd.Env = testEnv(dir, "FIXTURE_TOOLS="+tools)
	stderr := &cageBuffer{}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	rd := bufio.NewReaderSize(out, 1<<20)
	readAnswer := func() string {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("no answer: %v\n%s", err, stderr.String())
		}
		return line
	}
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	readAnswer()
	fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":"l","method":"tools/list"}`)
	readAnswer()

	logFile := filepath.Join(dir, "mcpcage", "audit", audit.FileName(1))
	const n = 300
	var burst bytes.Buffer
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&burst, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"call %d"}}}`+"\n", i, i)
	}
	go in.Write(burst.Bytes())
	for k := 1; k <= n; k++ {
		if a := readAnswer(); !strings.Contains(a, `"result"`) {
			t.Fatalf("answer %d: %s", k, a)
		}
		data, err := os.ReadFile(logFile)
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Count(data, []byte(`"kind":"call_start"`)); got < k {
			t.Fatalf("answer %d reached the client while the log held %d call_start records", k, got)
		}
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("session: %v\n%s", err, stderr.String())
	}
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := bytes.Count(data, []byte(`"kind":"call"`)); got != n {
		t.Fatalf("the log holds %d call records after %d calls", got, n)
	}
	r, err := audit.Verify(audit.VerifyOptions{Dir: filepath.Join(dir, "mcpcage", "audit"), KeyDir: filepath.Join(dir, "mcpcage", "keys")})
	if err != nil || !r.OK {
		t.Fatalf("verify: %v %+v", err, r)
	}
}
