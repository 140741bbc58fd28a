package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The tests below re-execute the test binary as separate writer processes:
// AUDIT_TEST_CHILD selects what the child does, the other variables where.
func TestMain(m *testing.M) {
	switch os.Getenv("AUDIT_TEST_CHILD") {
	case "":
		code := m.Run()
		if bigLogRoot != "" {
			os.RemoveAll(bigLogRoot)
		}
		os.Exit(code)
	case "append":
		os.Exit(childAppend())
	case "loop":
		os.Exit(childLoop())
	}
	os.Exit(2)
}

func childOptions() Options {
	return Options{Dir: os.Getenv("AUDIT_TEST_DIR"), KeyDir: os.Getenv("AUDIT_TEST_KEYS")}
}

// childAppend appends AUDIT_TEST_N records tagged AUDIT_TEST_TAG.
func childAppend() int {
	n, _ := strconv.Atoi(os.Getenv("AUDIT_TEST_N"))
	tag := os.Getenv("AUDIT_TEST_TAG")
	l, err := Open(childOptions())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i := 0; i < n; i++ {
		if _, err := l.Append("call", map[string]any{"server": tag, "n": i}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if err := l.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// childLoop appends until killed. With AUDIT_TEST_TEAR set, the write of
// record number AUDIT_TEST_TEAR stops halfway, says so in AUDIT_TEST_READY
// and waits to be killed: a crash in the middle of a write.
func childLoop() int {
	tear, _ := strconv.ParseUint(os.Getenv("AUDIT_TEST_TEAR"), 10, 64)
	l, err := Open(childOptions())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	l.writeLine = func(f *os.File, line []byte, seq uint64) error {
		if tear == 0 || seq != tear {
			_, err := f.Write(line)
			return err
		}
		if _, err := f.Write(line[:len(line)/2]); err != nil {
			return err
		}
		f.Sync()
		os.WriteFile(os.Getenv("AUDIT_TEST_READY"), []byte("torn"), 0o600)
		time.Sleep(time.Minute)
		return nil
	}
	for i := 0; ; i++ {
		if _, err := l.Append("call", map[string]any{"server": "loop", "n": i}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
}

func child(t *testing.T, tl *testLog, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AUDIT_TEST_DIR="+tl.opts.Dir, "AUDIT_TEST_KEYS="+tl.opts.KeyDir)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	return cmd
}

// TestTwoProcessesAppend: two writer processes, 10,000 durable records each,
// at the same time. The chain must verify with every record there once.
func TestTwoProcessesAppend(t *testing.T) {
	const n = 10000
	tl := newTestLog(t, nil)
	if _, err := LoadOrCreateKeys(tl.opts.KeyDir); err != nil {
		t.Fatal(err)
	}
	a := child(t, tl, "AUDIT_TEST_CHILD=append", "AUDIT_TEST_TAG=a", "AUDIT_TEST_N="+strconv.Itoa(n))
	b := child(t, tl, "AUDIT_TEST_CHILD=append", "AUDIT_TEST_TAG=b", "AUDIT_TEST_N="+strconv.Itoa(n))
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	// Verify while they write: a growing log is never reported as damaged.
	done := make(chan error, 2)
	go func() { done <- a.Wait() }()
	go func() { done <- b.Wait() }()
	verifies := 0
	for finished := 0; finished < 2; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal("writer:", err)
			}
			finished++
		default:
			r := tl.verify(t)
			if !r.OK {
				t.Fatalf("verify during appends: %v", r.Problem)
			}
			verifies++
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("%d verifies during the appends", verifies)
	r := tl.verify(t)
	if !r.OK || r.Records != 2*n || r.Checkpoint == nil || r.Checkpoint.Records != 2*n {
		t.Fatalf("after two writers: %+v problem %v", r, r.Problem)
	}
	// Every record of each writer is there once, in its own order, and the
	// two were really interleaved.
	next := map[string]int{}
	switches, last := 0, ""
	err := Scan(tl.dir, func(file string, line int, rec *Record, err error) error {
		if err != nil {
			return err
		}
		var f struct {
			Server string `json:"server"`
			N      int    `json:"n"`
		}
		if err := json.Unmarshal(rec.Fields, &f); err != nil {
			return err
		}
		if f.N != next[f.Server] {
			return fmt.Errorf("%s line %d: writer %s record %d, want %d", file, line, f.Server, f.N, next[f.Server])
		}
		next[f.Server]++
		if f.Server != last {
			switches++
			last = f.Server
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if next["a"] != n || next["b"] != n {
		t.Fatalf("records per writer: %v", next)
	}
	if switches < 3 {
		t.Fatalf("the writers did not overlap (%d switches); the test proves nothing", switches)
	}
	t.Logf("%d records, writers alternated %d times", r.Records, switches)
}

// TestKillDuringWriteLoop kills a writer with SIGKILL while it appends in a
// loop: the log verifies, and the next writer goes on from where it stopped.
func TestKillDuringWriteLoop(t *testing.T) {
	tl := newTestLog(t, nil)
	if _, err := LoadOrCreateKeys(tl.opts.KeyDir); err != nil {
		t.Fatal(err)
	}
	cmd := child(t, tl, "AUDIT_TEST_CHILD=loop")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitRecords(t, tl, 300)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	r := tl.verify(t)
	if !r.OK || r.Records < 300 {
		t.Fatalf("after kill -9: %+v problem %v", r, r.Problem)
	}
	before := r.Records
	tl.write(t, 5)
	r = tl.verify(t)
	if !r.OK || r.Records < before+5 {
		t.Fatalf("next writer: %+v problem %v", r, r.Problem)
	}
}

// TestKillMidWrite kills a writer that has written half a line: verify
// reports a torn line, not tampering; the next writer cuts it, records a
// recovery and continues the chain.
func TestKillMidWrite(t *testing.T) {
	tl := newTestLog(t, nil)
	if _, err := LoadOrCreateKeys(tl.opts.KeyDir); err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := child(t, tl, "AUDIT_TEST_CHILD=loop", "AUDIT_TEST_TEAR=50", "AUDIT_TEST_READY="+ready)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the writer never reached record 50")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	r := tl.verify(t)
	if !r.OK || r.Records != 49 || r.Torn == nil || r.Torn.Line != 50 {
		t.Fatalf("after a torn write: %+v torn %+v problem %v", r, r.Torn, r.Problem)
	}
	torn := r.Torn.Bytes
	tl.write(t, 3)
	r = tl.verify(t)
	if !r.OK || r.Torn != nil || r.Records != 53 || len(r.Recoveries) != 1 {
		t.Fatalf("after recovery: %+v problem %v", r, r.Problem)
	}
	if rc := r.Recoveries[0]; rc.Seq != 50 || rc.TornBytes != torn || rc.Line != 50 {
		t.Fatalf("recovery: %+v (torn %d)", rc, torn)
	}
	b, _ := os.ReadFile(tl.path(1))
	if !bytes.Contains(b, []byte(`"kind":"recovery"`)) {
		t.Fatal("no recovery record")
	}
}

func waitRecords(t *testing.T, tl *testLog, n int) {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(tl.path(1))
		if bytes.Count(b, []byte("\n")) >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("fewer than %d records after 60s", n)
}
