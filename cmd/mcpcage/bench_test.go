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
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpcage/mcpcage/internal/audit"
	"github.com/mcpcage/mcpcage/internal/cage"
	"github.com/mcpcage/mcpcage/internal/install"
	"golang.org/x/sys/unix"
)

// BenchmarkStartup measures the time from starting a server to its first
// tools/list answer, for a package already in the cache, four ways, taken in
// turn within each iteration so that a busy machine slows all of them alike:
//
//	mcpcage      mcpcage run -- npx -y PKG (reap, cache lookup, cage, proxy)
//	mcpcage-attach the same with the engine's attach stream (MCPCAGE_STDIO=attach)
//	mcpcage-runsc  the same under gVisor (--runtime runsc)
//	docker-run   plain docker run -i --rm of the same image, command and cache mount
//	docker-hard  the same docker run with the cage's hardening flags
//	bare-node    the host's node running the same files directly
//	npx-warm     npx -y PKG on the host, its npm cache warm (what users had)
//	npx-cold     the same with an empty npm cache each time (a download)
//
// cage-cost is mcpcage minus docker-run: what the cage adds beyond a plain
// docker run, hardening included; own-cost is mcpcage minus docker-hard:
// mcpcage's own work (Docker API calls, reaping, the proxy).
func BenchmarkStartup(b *testing.B) {
	cb := newCageBench(b)
	plain, hard := cb.dockerArgs(false), cb.dockerArgs(true)
	nodeArgv := make([]string, len(cb.res.Command))
	for i, a := range cb.res.Command {
		nodeArgv[i] = strings.Replace(a, cb.res.MountPoint, cb.res.CacheDir, 1)
	}
	var tCage, tAttach, tRunsc, tPlain, tHard, tNode, tWarm, tCold time.Duration
	npx := func(cache string) *exec.Cmd {
		cmd := exec.Command("npx", "-y", everything)
		cmd.Env = append(os.Environ(), "npm_config_cache="+cache, "npm_config_update_notifier=false")
		return cmd
	}
	warm := b.TempDir()
	firstToolsList(b, npx(warm)) // fills the warm cache
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runs := []func(){
			func() {
				tCage += firstToolsList(b, cb.mcpcageRun(cb.bin))
			},
			func() {
				tAttach += firstToolsList(b, cb.mcpcageRun(cb.bin, cage.EnvStdio+"=attach"))
			},
			func() { tWarm += firstToolsList(b, npx(warm)) },
			func() { tCold += firstToolsList(b, npx(b.TempDir())) },
			func() {
				cmd := cb.mcpcageRun(cb.bin)
				cmd.Env = append(cmd.Env, cage.EnvRuntime+"=runsc")
				tRunsc += firstToolsList(b, cmd)
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
	b.ReportMetric(ms(tAttach), "mcpcage-attach-ms")
	b.ReportMetric(ms(tWarm), "npx-warm-ms")
	b.ReportMetric(ms(tCold), "npx-cold-ms")
	b.ReportMetric(ms(tRunsc), "mcpcage-runsc-ms")
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

// cageBench is what the cage benchmarks share: the mcpcage binary a user
// runs (not this test binary), a fresh $MCPCAGE_HOME, and the everything
// server installed in the cache, with the docker run command lines of the
// same image, command and cache mount.
type cageBench struct {
	bin, hardHome string
	env           []string
	res           *install.Result
}

// mcpcageRun is `BIN run -- npx -y` of the everything server, in the
// benchmark's environment (bin is cb.bin or an older mcpcage to compare),
// with env added.
func (cb *cageBench) mcpcageRun(bin string, env ...string) *exec.Cmd {
	cmd := exec.Command(bin, "run", "--", "npx", "-y", everything)
	cmd.Env = append(append([]string(nil), cb.env...), env...)
	return cmd
}

// directPipes is the everything server in a plain container whose stdin
// and stdout are named pipes of a fresh folder (mcpcage's launcher opens
// them, as in a cage, then runs the server): no proxy, no attach stream.
// It returns the docker run and the folder, whose pipes the session opens.
func (cb *cageBench) directPipes(b *testing.B) (*exec.Cmd, string) {
	dir, err := os.MkdirTemp(b.TempDir(), "pipes-")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for _, n := range []string{"in", "out"} {
		if err := unix.Mkfifo(filepath.Join(dir, n), 0o666); err != nil {
			b.Fatal(err)
		}
		// The umask took bits off; the image's user is not root.
		if err := os.Chmod(filepath.Join(dir, n), 0o666); err != nil {
			b.Fatal(err)
		}
	}
	res := cb.res
	args := []string{"run", "--rm", "-v", res.CacheDir + ":" + res.MountPoint + ":ro", "-v", dir + ":/p:ro",
		"-v", cb.bin + ":/.mcpcage/mcpcage:ro", "--entrypoint", "/.mcpcage/mcpcage"}
	for _, e := range res.Env {
		args = append(args, "-e", e)
	}
	args = append(args, res.ImageID, cage.LaunchCommand, "--dir", "/p", "--")
	return exec.Command("docker", append(args, res.Command...)...), dir
}

func newCageBench(b *testing.B) *cageBench {
	ctx := context.Background()
	dir := b.TempDir()
	for _, s := range []string{"mcpcage", "home"} {
		os.MkdirAll(dir+"/"+s, 0o700)
	}
	cb := &cageBench{env: testEnv(dir), bin: dir + "/mcpcage-bin", hardHome: b.TempDir()}
	b.Setenv("MCPCAGE_HOME", dir+"/mcpcage")
	// Built as scripts/dist.sh builds what users install: a dynamically
	// linked build maps the C library too, about 2.5 MB more of resident
	// set than the binary users run.
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", cb.bin, "github.com/mcpcage/mcpcage/cmd/mcpcage")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	cli, err := cage.Connect(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	if cb.res, err = install.Ensure(ctx, cli, install.Request{Kind: "npx", Spec: everything}); err != nil {
		b.Fatal(err)
	}
	if err := cage.PrepareHome(cb.hardHome); err != nil {
		b.Fatal(err)
	}
	return cb
}

// dockerArgs is a plain docker run -i of the server, or with hard set the
// same with the cage's hardening flags.
func (cb *cageBench) dockerArgs(hard bool) []string {
	res := cb.res
	args := []string{"run", "-i", "--rm", "-v", res.CacheDir + ":" + res.MountPoint + ":ro", "--entrypoint", res.Command[0]}
	if hard {
		args = append(args, "--network", "none", "--read-only", "--tmpfs", "/tmp:rw,nosuid,nodev,exec,mode=1777,size=64m",
			"--cap-drop", "ALL", "--security-opt", "no-new-privileges:true", "--init", "--ipc", "private", "--log-driver", "none",
			"--user", cage.User(), "--memory", "512m", "--memory-swap", "512m", "--pids-limit", "256", "--cpus", "1",
			"-e", "HOME=/home/mcp", "-v", cb.hardHome+":/home/mcp", "-w", "/home/mcp")
	}
	for _, e := range res.Env {
		args = append(args, "-e", e)
	}
	args = append(args, res.ImageID)
	return append(args, res.Command[1:]...)
}

// cageCalls is how many sequential tools/calls BenchmarkCagePerCall times
// per session.
const cageCalls = 300

// BenchmarkCagePerCall times 300 sequential tools/calls (echo) of the
// everything server, through `mcpcage run -- npx -y PKG` (cage, proxy, pins,
// scanner, audit log; its stdio on named pipes, as users get it here), the
// same with the engine's attach stream (MCPCAGE_STDIO=attach), a plain
// docker run -i of the same image, command and cache mount, and the server
// in a plain container on named pipes with no proxy at all (direct-pipe:
// the floor of any way through pipes), the ways in turn within each
// iteration. Startup is not timed. per-call-ratio is mcpcage over
// docker-run, attach-ratio mcpcage on the attach stream over docker-run;
// each of those four ways also sends a burst of 300 calls at once
// (calls/s); mcpcage-peak-rss-MB is the mcpcage process's peak resident set
// (VmHWM, read before it exits). Under gVisor (runsc-*), mcpcage with
// --runtime runsc, whose stdio takes the attach stream, against docker run
// -i --runtime runsc of the same image and command (no network, and no
// seccomp profile: Docker's default one, which runsc applies, refuses
// node's threads under gVisor), per call and pipelined.
//
// The third way is the floor of any proxy that keeps the audit promise (a
// call's record on disk before its answer): the plain docker run -i, with
// one record appended to a real audit log (write and fsync, on the disk of
// MCPCAGE_HOME) for each call, started the instant the request is sent,
// and the call done when both its answer and its record are. A proxy that
// cost nothing else would take this long (floor-us/call, floor-ratio over
// docker-run); audit-fsync-p50-us is the median time of those records.
// The fourth way is the same with the cheapest durable write any log
// design could make instead of a record: 320 bytes written with O_DSYNC
// over space written and synced ahead, so that the file's size and blocks
// never change and the kernel writes the data alone (one device write and
// one cache flush; an append and fsync writes the inode too):
// dsync-floor-ratio, dsync-p50-us.
//
// CPU time is measured over the timed calls too, per call: of the mcpcage
// process (mcpcage-cpu-us/call), of the docker CLI that a plain docker run
// -i has in its place (docker-cli-cpu-us/call), and of one durable record
// in the floor ways (record-cpu-us/call, dsync-cpu-us/call: this process's
// CPU there less its CPU as the client alone). On a machine with few cores
// the CPU a proxy spends is taken from the engine and the server.
//
// With MCPCAGE_BENCH_BASELINE set to another mcpcage binary (say one built
// from an earlier commit), that binary is a fifth way, so that a change is
// measured before and after in one run: baseline-ratio over docker-run,
// baseline-over-mcpcage and baseline-cpu-us/call.
func BenchmarkCagePerCall(b *testing.B) {
	cb := newCageBench(b)
	baseline := os.Getenv("MCPCAGE_BENCH_BASELINE")
	plain := cb.dockerArgs(false)
	// Docker's default seccomp profile, which runsc applies (--oci-seccomp),
	// refuses node's threads under gVisor: the plain way runs without one.
	plainRunsc := append([]string{"run", "--runtime", "runsc", "--network", "none", "--security-opt", "seccomp=unconfined"}, plain[1:]...)
	floorDir := b.TempDir()
	lg, err := audit.Open(audit.Options{Dir: filepath.Join(floorDir, "audit"), KeyDir: filepath.Join(floorDir, "keys")})
	if err != nil {
		b.Fatal(err)
	}
	defer lg.Close()
	var synced []time.Duration
	record := func() func() {
		t0 := time.Now()
		p := lg.Add("call_start", map[string]any{"server": "bench", "tool": "echo"})
		return func() {
			if _, err := p.Wait(); err != nil {
				b.Fatal(err)
			}
			synced = append(synced, time.Since(t0))
		}
	}
	dsync, err := os.OpenFile(filepath.Join(floorDir, "dsync"), os.O_RDWR|os.O_CREATE|unix.O_DSYNC, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer dsync.Close()
	const dsyncSpace = 4 << 20
	if _, err := dsync.Write(make([]byte, dsyncSpace)); err != nil {
		b.Fatal(err)
	}
	if err := dsync.Sync(); err != nil {
		b.Fatal(err)
	}
	rec := bytes.Repeat([]byte("r"), 320)
	var dsyncOff int64
	var dsynced []time.Duration
	writeDsync := func() func() {
		t0 := time.Now()
		off := dsyncOff
		dsyncOff = (dsyncOff + int64(len(rec))) % (dsyncSpace - int64(len(rec)))
		done := make(chan error, 1)
		go func() {
			_, err := dsync.WriteAt(rec, off)
			done <- err
		}()
		return func() {
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			dsynced = append(dsynced, time.Since(t0))
		}
	}
	// The ways' totals, in the order they are run.
	const (
		wCage = iota
		wAttach
		wPlain
		wDirect
		wFloor
		wDsync
		wBase
		wRunsc
		wPlainRunsc
		nWays
	)
	var tot [nWays]callRun
	var burst [nWays]time.Duration // pipelined bursts of cageCalls calls
	var rss int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		add := func(w int, r callRun) {
			tot[w].elapsed += r.elapsed
			tot[w].cpu += r.cpu
			tot[w].selfCPU += r.selfCPU
		}
		pipelined := func(w int, cmd *exec.Cmd, pipes string) {
			burst[w] += pipelinedCalls(b, cmd, cageCalls, 200, pipes).elapsed
		}
		runs := []func(){
			func() {
				r := sequentialCalls(b, cb.mcpcageRun(cb.bin), cageCalls, nil, "")
				add(wCage, r)
				rss = max(rss, r.hwm)
				pipelined(wCage, cb.mcpcageRun(cb.bin), "")
			},
			func() {
				add(wAttach, sequentialCalls(b, cb.mcpcageRun(cb.bin, cage.EnvStdio+"=attach"), cageCalls, nil, ""))
				pipelined(wAttach, cb.mcpcageRun(cb.bin, cage.EnvStdio+"=attach"), "")
			},
			func() {
				add(wPlain, sequentialCalls(b, exec.Command("docker", plain...), cageCalls, nil, ""))
				pipelined(wPlain, exec.Command("docker", plain...), "")
			},
			func() {
				cmd, dir := cb.directPipes(b)
				add(wDirect, sequentialCalls(b, cmd, cageCalls, nil, dir))
				cmd, dir = cb.directPipes(b)
				pipelined(wDirect, cmd, dir)
			},
			func() { add(wFloor, sequentialCalls(b, exec.Command("docker", plain...), cageCalls, record, "")) },
			func() { add(wDsync, sequentialCalls(b, exec.Command("docker", plain...), cageCalls, writeDsync, "")) },
			func() {
				// gVisor: the attach stream (stdioWay), against docker
				// run -i under the same runtime.
				add(wRunsc, sequentialCalls(b, cb.mcpcageRun(cb.bin, cage.EnvRuntime+"=runsc"), cageCalls, nil, ""))
				pipelined(wRunsc, cb.mcpcageRun(cb.bin, cage.EnvRuntime+"=runsc"), "")
			},
			func() {
				add(wPlainRunsc, sequentialCalls(b, exec.Command("docker", plainRunsc...), cageCalls, nil, ""))
				pipelined(wPlainRunsc, exec.Command("docker", plainRunsc...), "")
			},
		}
		if baseline != "" {
			runs = append(runs, func() {
				add(wBase, sequentialCalls(b, cb.mcpcageRun(baseline), cageCalls, nil, ""))
			})
		}
		for k := range runs {
			runs[(i+k)%len(runs)]()
		}
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(b.N*cageCalls) }
	ratio := func(w int) float64 { return float64(tot[w].elapsed) / float64(tot[wPlain].elapsed) }
	b.ReportMetric(us(tot[wCage].elapsed), "mcpcage-us/call")
	b.ReportMetric(us(tot[wAttach].elapsed), "mcpcage-attach-us/call")
	b.ReportMetric(us(tot[wPlain].elapsed), "docker-run-us/call")
	b.ReportMetric(us(tot[wDirect].elapsed), "direct-pipe-us/call")
	b.ReportMetric(ratio(wCage), "per-call-ratio")
	b.ReportMetric(ratio(wAttach), "attach-ratio")
	perSec := func(w int) float64 { return float64(b.N*cageCalls) / burst[w].Seconds() }
	b.ReportMetric(perSec(wCage), "mcpcage-calls/s")
	b.ReportMetric(perSec(wAttach), "mcpcage-attach-calls/s")
	b.ReportMetric(perSec(wPlain), "docker-run-calls/s")
	b.ReportMetric(perSec(wDirect), "direct-pipe-calls/s")
	b.ReportMetric(us(tot[wRunsc].elapsed), "runsc-mcpcage-us/call")
	b.ReportMetric(us(tot[wPlainRunsc].elapsed), "runsc-docker-run-us/call")
	b.ReportMetric(float64(tot[wRunsc].elapsed)/float64(tot[wPlainRunsc].elapsed), "runsc-per-call-ratio")
	b.ReportMetric(perSec(wRunsc), "runsc-mcpcage-calls/s")
	b.ReportMetric(perSec(wPlainRunsc), "runsc-docker-run-calls/s")
	b.ReportMetric(us(tot[wRunsc].cpu), "runsc-mcpcage-cpu-us/call")
	b.ReportMetric(us(tot[wFloor].elapsed), "floor-us/call")
	b.ReportMetric(ratio(wFloor), "floor-ratio")
	b.ReportMetric(ratio(wDsync), "dsync-floor-ratio")
	slices.Sort(synced)
	b.ReportMetric(float64(synced[len(synced)/2].Microseconds()), "audit-fsync-p50-us")
	slices.Sort(dsynced)
	b.ReportMetric(float64(dsynced[len(dsynced)/2].Microseconds()), "dsync-p50-us")
	// CPU per call: of the mcpcage process, of the docker CLI it stands in
	// for, and of one durable record (this process's CPU in a floor way
	// less its CPU in the plain way, where it is only the client).
	b.ReportMetric(us(tot[wCage].cpu), "mcpcage-cpu-us/call")
	b.ReportMetric(us(tot[wAttach].cpu), "mcpcage-attach-cpu-us/call")
	b.ReportMetric(us(tot[wPlain].cpu), "docker-cli-cpu-us/call")
	b.ReportMetric(us(tot[wFloor].selfCPU-tot[wPlain].selfCPU), "record-cpu-us/call")
	b.ReportMetric(us(tot[wDsync].selfCPU-tot[wPlain].selfCPU), "dsync-cpu-us/call")
	if baseline != "" {
		b.ReportMetric(ratio(wBase), "baseline-ratio")
		b.ReportMetric(float64(tot[wBase].elapsed)/float64(tot[wCage].elapsed), "baseline-over-mcpcage")
		b.ReportMetric(us(tot[wBase].cpu), "baseline-cpu-us/call")
	}
	b.ReportMetric(float64(rss)/1024, "mcpcage-peak-rss-MB")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkCageRSS is the peak resident set of a real `mcpcage run` session
// (cage, proxy, pins, scanner, audit log) under large results: the client
// sends 300 echo calls of the everything server with a 64 KiB message each
// at once, and reads the 300 answers (64 KiB each, scanned) as they come;
// mcpcage-peak-rss-MB is the VmHWM of the mcpcage process, read before it
// exits, and file-MB and anon-MB split the resident set at the sampled peak
// (file pages are the binary's text, anonymous ones its heap and stacks);
// mcpcage-ms/session and mcpcage-cpu-ms/session are the time from the first
// call sent to the last answer read and the process's CPU time over it.
// With MCPCAGE_BENCH_BASELINE set, that binary runs the same session in
// turn: baseline-peak-rss-MB, baseline-ms/session, baseline-cpu-ms/session.
func BenchmarkCageRSS(b *testing.B) {
	cb := newCageBench(b)
	baseline := os.Getenv("MCPCAGE_BENCH_BASELINE")
	var peak, basePeak rssPeak
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bins := []string{cb.bin}
		if baseline != "" {
			bins = append(bins, baseline)
		}
		for k := range bins {
			k = (k + i) % len(bins)
			p := pipelinedCalls(b, cb.mcpcageRun(bins[k]), 300, 64<<10, "")
			if k == 0 {
				peak = peak.max(p)
			} else {
				basePeak = basePeak.max(p)
			}
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 / float64(b.N) }
	b.ReportMetric(float64(peak.hwm)/1024, "mcpcage-peak-rss-MB")
	b.ReportMetric(float64(peak.file)/1024, "file-MB")
	b.ReportMetric(float64(peak.anon)/1024, "anon-MB")
	b.ReportMetric(ms(peak.elapsed), "mcpcage-ms/session")
	b.ReportMetric(ms(peak.cpu), "mcpcage-cpu-ms/session")
	if baseline != "" {
		b.ReportMetric(float64(basePeak.hwm)/1024, "baseline-peak-rss-MB")
		b.ReportMetric(ms(basePeak.elapsed), "baseline-ms/session")
		b.ReportMetric(ms(basePeak.cpu), "baseline-cpu-ms/session")
	}
	b.ReportMetric(0, "ns/op")
}

// rssPeak is a process's peak resident set (VmHWM) and the split of the
// largest resident set sampled, in KiB; and the time and the process's CPU
// time from the first call sent to the last answer read.
type rssPeak struct {
	hwm, file, anon int64
	elapsed, cpu    time.Duration
}

// max keeps the larger peak and adds up the times.
func (p rssPeak) max(q rssPeak) rssPeak {
	el, cpu := p.elapsed+q.elapsed, p.cpu+q.cpu
	if q.hwm > p.hwm {
		p = q
	}
	p.elapsed, p.cpu = el, cpu
	return p
}

// pipelinedCalls starts cmd, runs the MCP handshake, sends n echo calls
// with a message of size bytes each at once, reads their n answers, and
// returns the process's peak resident set; /proc/PID/status is sampled
// meanwhile for the file/anonymous split at the largest VmRSS seen.
func pipelinedCalls(b *testing.B, cmd *exec.Cmd, n, size int, pipes string) rssPeak {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	sess := startSession(b, cmd, pipes)
	defer sess.stop()
	var peak rssPeak
	sampled := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
			if err != nil {
				continue
			}
			var s rssPeak
			for _, l := range strings.Split(string(st), "\n") {
				k, v, _ := strings.Cut(l, ":")
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				switch k {
				case "VmRSS":
					s.hwm = kb
				case "RssFile":
					s.file = kb
				case "RssAnon":
					s.anon = kb
				}
			}
			if s.hwm > peak.hwm {
				peak = s
			}
		}
	}()
	msg := strings.Repeat("m", size)
	cpu0, t0 := cpuTime(b, cmd.Process.Pid), time.Now()
	go func() {
		for k := 0; k < n; k++ {
			fmt.Fprintf(sess.in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"message":"%s"}}}`+"\n", 10+k, msg)
		}
	}()
	sess.results(n)
	elapsed, cpu := time.Since(t0), cpuTime(b, cmd.Process.Pid)-cpu0
	close(stop)
	<-sampled
	peak.elapsed, peak.cpu = elapsed, cpu
	peak.hwm = max(peak.hwm, vmHWM(b, cmd.Process.Pid))
	return peak
}

// callRun is what sequentialCalls measured over its timed calls.
type callRun struct {
	elapsed time.Duration
	hwm     int64         // the process's peak resident set, KiB, read before the shutdown
	cpu     time.Duration // CPU time of the process (mcpcage, or the docker CLI)
	selfCPU time.Duration // CPU time of this test process: the client, and the records of a floor way
}

// sequentialCalls starts cmd, runs the MCP handshake, then times n
// tools/calls of echo, each sent once the answer to the one before is in;
// the handshake and the shutdown are not timed. With record, each call
// starts a record as its request is sent and is done once the wait record
// returned is over too.
func sequentialCalls(b *testing.B, cmd *exec.Cmd, n int, record func() (wait func()), pipes string) callRun {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	sess := startSession(b, cmd, pipes)
	defer sess.stop()
	cpu0, self0 := cpuTime(b, cmd.Process.Pid), cpuTime(b, os.Getpid())
	start := time.Now()
	for i := 0; i < n; i++ {
		id := strconv.Itoa(10 + i)
		wait := func() {}
		if record != nil {
			wait = record()
		}
		fmt.Fprintln(sess.in, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"echo","arguments":{"message":"call `+id+` of the benchmark"}}}`)
		sess.waitFor(id)
		wait()
	}
	run := callRun{elapsed: time.Since(start)}
	run.cpu, run.selfCPU = cpuTime(b, cmd.Process.Pid)-cpu0, cpuTime(b, os.Getpid())-self0
	run.hwm = vmHWM(b, cmd.Process.Pid)
	return run
}

// benchSession is a server process (mcpcage run, docker run -i) that a
// benchmark talks MCP to over its stdin and stdout.
type benchSession struct {
	b      *testing.B
	cmd    *exec.Cmd
	in     io.WriteCloser
	rd     *bufio.Reader
	stderr *cageBuffer
}

// startSession starts cmd and runs the MCP handshake: initialize (id 1),
// notifications/initialized, tools/list (id 2). With pipes (a folder
// holding the named pipes in and out), the server's stdio is those pipes,
// opened here, not cmd's.
func startSession(b *testing.B, cmd *exec.Cmd, pipes string) *benchSession {
	b.Helper()
	var in io.WriteCloser
	var out io.Reader
	var err error
	if pipes == "" {
		if in, err = cmd.StdinPipe(); err != nil {
			b.Fatal(err)
		}
		if out, err = cmd.StdoutPipe(); err != nil {
			b.Fatal(err)
		}
	}
	s := &benchSession{b: b, cmd: cmd, stderr: &cageBuffer{}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	if pipes != "" {
		// Each open waits for the server's; a server that never starts
		// would leave it waiting forever.
		opened := make(chan error, 1)
		go func() {
			var err error
			if in, err = os.OpenFile(filepath.Join(pipes, "in"), os.O_WRONLY, 0); err == nil {
				out, err = os.OpenFile(filepath.Join(pipes, "out"), os.O_RDONLY, 0)
			}
			opened <- err
		}()
		select {
		case err := <-opened:
			if err != nil {
				b.Fatal(err)
			}
		case <-time.After(time.Minute):
			b.Fatalf("%v: the server did not open its pipes in a minute\n%s", cmd.Args, s.stderr.String())
		}
	}
	s.in = in
	s.rd = bufio.NewReaderSize(out, 1<<20)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	s.waitFor("1")
	fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	s.waitFor("2")
	return s
}

// line reads the next line from the server; what is the reading for.
func (s *benchSession) line(what string) string {
	line, err := s.rd.ReadString('\n')
	if err != nil {
		s.b.Fatalf("%v: %s: %v\n%s", s.cmd.Args, what, err, s.stderr.String())
	}
	return line
}

// waitFor reads up to the answer to request id, passing over what comes
// before it.
func (s *benchSession) waitFor(id string) {
	for {
		line := s.line("no answer to request " + id)
		if strings.Contains(line, `"id":`+id+`,`) || strings.Contains(line, `"id":`+id+`}`) {
			return
		}
	}
}

// results reads n answers, in whatever order they come, passing over the
// server's notifications, and fails on one that is not a result.
func (s *benchSession) results(n int) {
	for k := 0; k < n; {
		line := s.line(fmt.Sprintf("%d of %d answers read", k, n))
		if strings.HasPrefix(line, `{"method":`) {
			continue
		}
		if !strings.Contains(line, `"result":`) {
			s.b.Fatalf("%v: not a result: %.300q\n%s", s.cmd.Args, line, s.stderr.String())
		}
		k++
	}
}

// stop closes the server's stdin and waits for it to exit, 30 s at most,
// then kills it.
func (s *benchSession) stop() {
	s.in.Close()
	go io.Copy(io.Discard, s.rd)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}
