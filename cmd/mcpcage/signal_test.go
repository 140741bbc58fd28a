package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// echoInit is a server that answers initialize and nothing else, and, as
// PID 1 without a handler, ignores SIGTERM: only the engine's kill ends it.
const echoInit = `require("readline").createInterface({input: process.stdin}).on("line", l => {
  const m = JSON.parse(l);
  if (m.method === "initialize") process.stdout.write(JSON.stringify({jsonrpc: "2.0", id: m.id,
    result: {protocolVersion: "2025-06-18", capabilities: {tools: {}}, serverInfo: {name: "s", version: "1"}}}) + "\n");
})`

// TestSignalEndsSession: SIGINT or SIGTERM to `mcpcage run` is the user
// ending the session: exit 130/143, a line that says so, the client's
// pending request answered with that reason, and the audit log's
// session_end saying so; never "exited (status 137)", which reads as an
// out-of-memory kill.
func TestSignalEndsSession(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		name string
		code int
	}{{syscall.SIGINT, "SIGINT", 130}, {syscall.SIGTERM, "SIGTERM", 143}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := stateDir(t)
			cmd := exec.Command("mcpcage", "run", "--name", "sig-test", "--image", "mcpcage/node:22", "--", "node", "-e", echoInit)
			cmd.Env = testEnv(dir)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			outR, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := make(chan string, 8)
			go func() {
				sc := bufio.NewScanner(outR)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			next := func() string {
				select {
				case l := <-lines:
					return l
				case <-time.After(2 * time.Minute):
					t.Fatalf("no answer; stderr:\n%s", stderr.String())
				}
				return ""
			}
			io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
			if l := next(); !strings.Contains(l, `"protocolVersion"`) {
				t.Fatalf("initialize: %s", l)
			}
			io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
			io.WriteString(in, `{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n") // never answered
			time.Sleep(500 * time.Millisecond)
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			if l := next(); !strings.Contains(l, `"id":2`) || !strings.Contains(l, "stopped because mcpcage received "+tc.name+" (the session was ended by the user)") {
				t.Errorf("pending request answered with %s", l)
			}
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.code {
				t.Errorf("exit: %v, want status %d\nstderr:\n%s", err, tc.code, stderr.String())
			}
			if want := `mcpcage: "sig-test" stopped: mcpcage received ` + tc.name + " (the session was ended by the user)\n"; !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
			}
			if strings.Contains(stderr.String(), "memory") || strings.Contains(stderr.String(), "status 137") {
				t.Errorf("a stop reported as a kill:\n%s", stderr.String())
			}
			show := exec.Command("mcpcage", "audit", "show", "--kind", "session_end", "--json")
			show.Env = testEnv(dir)
			out, err := show.Output()
			if err != nil {
				t.Fatalf("audit show: %v", err)
			}
			var rec struct {
				Fields map[string]any `json:"fields"`
			}
			line := strings.TrimSpace(string(out))
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("audit show: %v\n%s", err, out)
			}
			t.Logf("session_end: %s", line)
			if !strings.Contains(line, `"stopped_by":"`+tc.name+`"`) || !strings.Contains(line, `"exit":`+itoa(tc.code)) {
				t.Errorf("session_end does not say the user stopped it: %s", line)
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
