package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcpcage/mcpcage/internal/cage"
	"github.com/mcpcage/mcpcage/internal/install"
)

// BenchmarkStartup measures the time from starting a server to its first
// tools/list answer, for a package already in the cache, four ways, taken in
// turn within each iteration so that a busy machine slows all of them alike:
//
//	mcpcage      mcpcage run -- npx -y PKG (reap, cache lookup, cage, proxy)
//	docker-run   plain docker run -i --rm of the same image, command and cache mount
//	docker-hard  the same docker run with the cage's hardening flags
//	bare-node    the host's node running the same files directly
//
// cage-cost is mcpcage minus docker-run: what the cage adds beyond a plain
// docker run, hardening included; own-cost is mcpcage minus docker-hard:
// mcpcage's own work (Docker API calls, reaping, the proxy).
func BenchmarkStartup(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	for _, s := range []string{"mcpcage", "home"} {
		os.MkdirAll(dir+"/"+s, 0o700)
	}
	env := testEnv(dir)
	b.Setenv("MCPCAGE_HOME", dir+"/mcpcage")
	// The binary a user runs, not this test binary.
	bin := dir + "/mcpcage-bin"
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/mcpcage/mcpcage/cmd/mcpcage").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	cli, err := cage.Connect(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	res, err := install.Ensure(ctx, cli, install.Request{Kind: "npx", Spec: everything})
	if err != nil {
		b.Fatal(err)
	}
	hardHome := b.TempDir()
	if err := cage.PrepareHome(hardHome); err != nil {
		b.Fatal(err)
	}
	dockerArgs := func(hard bool) []string {
		args := []string{"run", "-i", "--rm", "-v", res.CacheDir + ":" + res.MountPoint + ":ro", "--entrypoint", res.Command[0]}
		if hard {
			args = append(args, "--network", "none", "--read-only", "--tmpfs", "/tmp:rw,nosuid,nodev,exec,mode=1777,size=64m",
				"--cap-drop", "ALL", "--security-opt", "no-new-privileges:true", "--init", "--ipc", "private", "--log-driver", "none",
				"--user", cage.User(), "--memory", "512m", "--memory-swap", "512m", "--pids-limit", "256", "--cpus", "1",
				"-e", "HOME=/home/mcp", "-v", hardHome+":/home/mcp", "-w", "/home/mcp")
		}
		for _, e := range res.Env {
			args = append(args, "-e", e)
		}
		args = append(args, res.ImageID)
		return append(args, res.Command[1:]...)
	}
	plain, hard := dockerArgs(false), dockerArgs(true)
	nodeArgv := make([]string, len(res.Command))
	for i, a := range res.Command {
		nodeArgv[i] = strings.Replace(a, res.MountPoint, res.CacheDir, 1)
	}

	var tCage, tPlain, tHard, tNode time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runs := []func(){
			func() {
				cmd := exec.Command(bin, "run", "--", "npx", "-y", everything)
				cmd.Env = env
				tCage += firstToolsList(b, cmd)
			},
			func() { tPlain += firstToolsList(b, exec.Command("docker", plain...)) },
			func() { tHard += firstToolsList(b, exec.Command("docker", hard...)) },
			func() { tNode += firstToolsList(b, exec.Command(nodeArgv[0], nodeArgv[1:]...)) },
		}
		// A different one goes first each time: no way gets a warmer start.
		for k := range runs {
			runs[(i+k)%len(runs)]()
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(tCage), "mcpcage-ms")
	b.ReportMetric(ms(tPlain), "docker-run-ms")
	b.ReportMetric(ms(tHard), "docker-hard-ms")
	b.ReportMetric(ms(tNode), "bare-node-ms")
	b.ReportMetric(ms(tCage-tPlain), "cage-cost-ms")
	b.ReportMetric(ms(tCage-tHard), "own-cost-ms")
	b.ReportMetric(0, "ns/op")
}

// firstToolsList starts cmd, runs the MCP handshake and tools/list, and times
// that; the shutdown that follows is not timed.
func firstToolsList(b *testing.B, cmd *exec.Cmd) time.Duration {
	b.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	stderr := &cageBuffer{}
	cmd.Stderr = stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	rd := bufio.NewReaderSize(out, 1<<20)
	waitFor := func(id string) {
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				b.Fatalf("%v: no answer to request %s: %v\n%s", cmd.Args, id, err, stderr.String())
			}
			if strings.Contains(line, `"id":`+id+`,`) || strings.Contains(line, `"id":`+id+`}`) {
				return
			}
		}
	}
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	waitFor("1")
	fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	waitFor("2")
	elapsed := time.Since(start)
	b.StopTimer()
	in.Close()
	go io.Copy(io.Discard, rd)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
	}
	b.StartTimer()
	return elapsed
}
