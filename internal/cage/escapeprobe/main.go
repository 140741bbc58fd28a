//go:build linux

// Command escapeprobe is the escape suite's fixture: an MCP stdio server,
// built static and run in a scratch image through the cage, whose one tool
// "probe" tries to get out of the cage in a named way and reports whether it
// managed to. It runs in the cage only: cagetest builds it for linux.
//
// tools/call probe {"check": C, "target": T} answers one text item holding
// {"check":C,"escaped":bool,"detail":"..."}. "escaped" true means the attempt
// worked: in a sound cage every check reports false.
//
//	ifaces            any network interface other than lo that is up
//	udp  T=ip:port    a DNS query to T gets a reply
//	tcp  T=ip:port    a TCP connection to T opens
//	read T=path       the file or folder T can be read
//	write T=path      the file T can be created
//	fill T=path:bytes T bytes can be written to path (tmpfs size)
//	fork T=n          n child processes can be started (pids limit)
//	memory T=MiB      a child can touch that much memory and exit normally
//	caps              any effective, permitted or bounding capability
//	chown, mknod, setuid, mount, rawsock  privileged operations succeed
//	suid T=path       running the setuid-root binary T yields euid 0
//	root              the server runs as uid 0
//	socket            a Docker socket is visible
//	unix T=path       a connection to the Unix socket T opens and answers
//	socketpair        a connected pair of Unix sockets can be made (this
//	                  one is not a way out: "escaped" means it works)
//	dgram T=path      a datagram reaches the Unix datagram socket T from an
//	                  end of a SOCK_DGRAM socketpair (sendto, then connect)
//	env T=NAME        the variable NAME is set (detail: SHA-256 of its value)
//	dns T=name        the name resolves (detail: its addresses)
//	https T=url       a GET of T answers 200, straight (detail: the body)
//	httpsproxy T=url  the same through HTTPS_PROXY
//	raw T=host:port   a TCP service at T greets and echoes (detail: the greeting)
//	sni T=addr/name   a TLS handshake with addr, naming name, completes
//	download T=url    a GET of T is read to the end (detail: bytes)
//	uname             the kernel the server sees (detail: release and
//	                  version; "escaped" always)
//	proxylong T=n     a request line of n control characters to the proxy
//	                  port, 127.0.0.1:3128 (a refusal that quotes it, each
//	                  byte escaped, is long)
//	flood T=n:bytes   n connections to 127.0.0.1:443 at once, each sending
//	                  bytes of data that names no host, held 3 s (detail:
//	                  how many opened)
//	writable          every mount point (folder or file) the server can
//	                  write, space-separated in detail; "escaped" when any
//
// Run as "escapeprobe report CHECK=TARGET..." it serves as above and makes
// each check when asked for its tools, listing beside "probe" one tool per
// check named CHECK_escaped_N or CHECK_held_N (N its position): what a client that only lists
// tools (protect --inspect) learns of the cage.
//
// Run as "escapeprobe stderr" it first writes terminal controls to its
// stderr (C1 as runes and raw bytes, bidi controls, an invalid byte).
//
// Run as "escapeprobe sleep" it sleeps (fork children); "escapeprobe eat N"
// touches N MiB; "escapeprobe euid" prints its effective uid; "escapeprobe
// exit N" exits with status N at once; "escapeprobe hang" never answers.
package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "sleep":
			time.Sleep(60 * time.Second)
			return
		case "eat":
			n, _ := strconv.Atoi(os.Args[2])
			eat(n)
			return
		case "euid":
			fmt.Println(os.Geteuid())
			return
		case "exit":
			n, _ := strconv.Atoi(os.Args[2])
			fmt.Fprintf(os.Stderr, "escapeprobe: exiting with status %d\n", n)
			os.Exit(n)
		case "stderr":
			// C1 controls as runes and as raw bytes, bidi controls, a
			// zero-width space and an invalid byte, then it serves.
			os.Stderr.WriteString("csi \u009b2J osc \u009d0;owned\u0007\nraw \x9b2J \x9d0;owned\nfile \u202etxt.exe \u2066x\u2069\nzw d\u200bo \xff end\n")
			serve(nil)
			return
		case "report":
			serve(os.Args[2:])
			return
		case "hang":
			// Reads its stdin and never answers: a server waiting for a
			// network it does not have.
			io.Copy(io.Discard, os.Stdin)
			time.Sleep(time.Minute)
			return
		}
	}
	serve(nil)
}

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// serve answers MCP requests; reports are the checks of "escapeprobe
// report", made at tools/list.
func serve(reports []string) {
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	for {
		line, err := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			handle(out, line, reports)
			out.Flush()
		}
		if err != nil {
			return
		}
	}
}

func reply(out *bufio.Writer, id json.RawMessage, result any) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	out.Write(b)
	out.WriteByte('\n')
}

func handle(out *bufio.Writer, line []byte, reports []string) {
	var req request
	if err := json.Unmarshal(line, &req); err != nil || req.ID == nil {
		return
	}
	switch req.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		json.Unmarshal(req.Params, &p)
		if p.ProtocolVersion == "" {
			p.ProtocolVersion = "2025-06-18"
		}
		reply(out, req.ID, map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "escape-probe", "version": "1.0.0"},
		})
	case "ping":
		reply(out, req.ID, map[string]any{})
	case "tools/list":
		tools := []any{map[string]any{
			"name":        "probe",
			"description": "Tries one way out of the cage and reports whether it worked.",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{
				"check": map[string]any{"type": "string"}, "target": map[string]any{"type": "string"},
			}, "required": []string{"check"}},
		}}
		for i, r := range reports {
			check, target, _ := strings.Cut(r, "=")
			verdict := "held"
			if escaped, _ := probe(check, target); escaped {
				verdict = "escaped"
			}
			tools = append(tools, map[string]any{"name": check + "_" + verdict + "_" + strconv.Itoa(i+1), "description": "The check " + check + " " + verdict + ".",
				"inputSchema": map[string]any{"type": "object"}})
		}
		reply(out, req.ID, map[string]any{"tools": tools})
	case "tools/call":
		var p struct {
			Name      string `json:"name"`
			Arguments struct {
				Check  string `json:"check"`
				Target string `json:"target"`
			} `json:"arguments"`
		}
		json.Unmarshal(req.Params, &p)
		escaped, detail := probe(p.Arguments.Check, p.Arguments.Target)
		text, _ := json.Marshal(map[string]any{"check": p.Arguments.Check, "escaped": escaped, "detail": detail})
		reply(out, req.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": string(text)}}})
	default:
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
		out.Write(b)
		out.WriteByte('\n')
	}
}

func probe(check, target string) (bool, string) {
	switch check {
	case "ifaces":
		ifs, err := net.Interfaces()
		if err != nil {
			return false, err.Error()
		}
		var names []string
		escaped := false
		for _, i := range ifs {
			names = append(names, i.Name)
			if i.Flags&net.FlagLoopback == 0 && i.Flags&net.FlagUp != 0 {
				escaped = true
			}
		}
		return escaped, strings.Join(names, ",")
	case "udp":
		c, err := net.DialTimeout("udp", target, 2*time.Second)
		if err != nil {
			return false, err.Error()
		}
		defer c.Close()
		// A DNS query for probe.mcpcage.test, type A.
		q := []byte{0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0}
		for _, l := range []string{"probe", "mcpcage", "test"} {
			q = append(q, byte(len(l)))
			q = append(q, l...)
		}
		q = append(q, 0, 0, 1, 0, 1)
		if _, err := c.Write(q); err != nil {
			return false, err.Error()
		}
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 512)
		n, err := c.Read(buf)
		if err != nil {
			return false, err.Error()
		}
		return true, fmt.Sprintf("reply of %d bytes", n)
	case "dns":
		addrs, err := net.LookupHost(target)
		if err != nil {
			return false, err.Error()
		}
		return true, strings.Join(addrs, ",")
	case "https", "httpsproxy":
		tr := &http.Transport{DisableKeepAlives: true}
		if check == "httpsproxy" {
			tr.Proxy = http.ProxyFromEnvironment
		}
		cl := &http.Client{Transport: tr, Timeout: 5 * time.Second}
		resp, err := cl.Get(target)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode == 200, fmt.Sprintf("%d %s", resp.StatusCode, b)
	case "download":
		resp, err := http.Get(target)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		if err != nil {
			return false, err.Error()
		}
		return resp.StatusCode == 200, strconv.FormatInt(n, 10)
	case "uname":
		var u syscall.Utsname
		if err := syscall.Uname(&u); err != nil {
			return false, errDetail(err)
		}
		str := func(b [65]int8) string {
			var s []byte
			for _, c := range b {
				if c == 0 {
					break
				}
				s = append(s, byte(c))
			}
			return string(s)
		}
		return true, str(u.Release) + " " + str(u.Version)
	case "proxylong":
		n, _ := strconv.Atoi(target)
		c, err := net.DialTimeout("tcp", "127.0.0.1:3128", 2*time.Second)
		if err != nil {
			return false, err.Error()
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, strings.Repeat("\x01", n)+"\r\nHost: x.test\r\n\r\n")
		b, _ := io.ReadAll(io.LimitReader(c, 512))
		return false, strings.TrimSpace(string(b))
	case "flood":
		ns, bs, _ := strings.Cut(target, ":")
		n, _ := strconv.Atoi(ns)
		size, _ := strconv.Atoi(bs)
		junk := bytes.Repeat([]byte{'x'}, size)
		var wg sync.WaitGroup
		var opened atomic.Int64
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := net.DialTimeout("tcp", "127.0.0.1:443", 2*time.Second)
				if err != nil {
					return
				}
				defer c.Close()
				opened.Add(1)
				c.SetDeadline(time.Now().Add(3 * time.Second))
				c.Write(junk)
				time.Sleep(3 * time.Second)
			}()
		}
		wg.Wait()
		return false, strconv.FormatInt(opened.Load(), 10)
	case "raw":
		c, err := net.DialTimeout("tcp", target, 2*time.Second)
		if err != nil {
			return false, err.Error()
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(3 * time.Second))
		br := bufio.NewReader(c)
		greeting, err := br.ReadString('\n')
		if err != nil {
			return false, "no greeting: " + err.Error()
		}
		io.WriteString(c, "ping\n")
		echo, err := br.ReadString('\n')
		if err != nil || echo != "ping\n" {
			return false, fmt.Sprintf("no echo: %q %v", echo, err)
		}
		return true, strings.TrimSpace(greeting)
	case "sni":
		addr, name, _ := strings.Cut(target, "/")
		d := &net.Dialer{Timeout: 2 * time.Second}
		c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{ServerName: name})
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, "handshake with " + name
	case "tcp":
		c, err := net.DialTimeout("tcp", target, 2*time.Second)
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, "connected"
	case "read":
		st, err := os.Stat(target)
		if err != nil {
			return false, err.Error()
		}
		if st.IsDir() {
			es, err := os.ReadDir(target)
			if err != nil {
				return false, err.Error()
			}
			return true, fmt.Sprintf("%d entries", len(es))
		}
		b, err := os.ReadFile(target)
		if err != nil {
			return false, err.Error()
		}
		return true, fmt.Sprintf("read %d bytes", len(b))
	case "write":
		if err := os.WriteFile(target, []byte("escaped\n"), 0o644); err != nil {
			return false, errDetail(err)
		}
		return true, "written"
	case "fill":
		k := strings.LastIndexByte(target, ':')
		if k < 0 {
			return false, "target must be path:bytes"
		}
		want, _ := strconv.ParseInt(target[k+1:], 10, 64)
		f, err := os.Create(target[:k])
		if err != nil {
			return false, errDetail(err)
		}
		defer os.Remove(target[:k])
		defer f.Close()
		chunk := make([]byte, 1<<20)
		var n int64
		for n < want {
			w, err := f.Write(chunk)
			n += int64(w)
			if err != nil {
				return false, fmt.Sprintf("wrote %d bytes: %s", n, errDetail(err))
			}
		}
		return true, fmt.Sprintf("wrote %d bytes", n)
	case "fork":
		want, _ := strconv.Atoi(target)
		var kids []*exec.Cmd
		var ferr error
		for len(kids) < want {
			c := exec.Command("/proc/self/exe", "sleep")
			if err := c.Start(); err != nil {
				ferr = err
				break
			}
			kids = append(kids, c)
		}
		for _, c := range kids {
			c.Process.Kill()
			c.Wait()
		}
		if ferr != nil {
			return false, fmt.Sprintf("started %d of %d: %s", len(kids), want, errDetail(ferr))
		}
		return true, fmt.Sprintf("started %d", len(kids))
	case "memory":
		c := exec.Command("/proc/self/exe", "eat", target)
		out, err := c.CombinedOutput()
		if err != nil {
			return false, fmt.Sprintf("child: %v %s", err, strings.TrimSpace(string(out)))
		}
		return true, "child touched " + target + " MiB"
	case "caps":
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return false, err.Error()
		}
		escaped := false
		var seen []string
		for _, l := range strings.Split(string(b), "\n") {
			for _, k := range []string{"CapEff:", "CapPrm:", "CapBnd:", "CapAmb:", "NoNewPrivs:"} {
				if strings.HasPrefix(l, k) {
					v := strings.TrimSpace(strings.TrimPrefix(l, k))
					seen = append(seen, k+v)
					if k != "NoNewPrivs:" && strings.Trim(v, "0") != "" {
						escaped = true
					}
				}
			}
		}
		return escaped, strings.Join(seen, " ")
	case "chown":
		p := "/tmp/chown-probe"
		os.WriteFile(p, nil, 0o644)
		defer os.Remove(p)
		if err := os.Chown(p, 0, 0); err != nil {
			return false, errDetail(err)
		}
		st, _ := os.Stat(p)
		if s, ok := st.Sys().(*syscall.Stat_t); ok && s.Uid == 0 && os.Geteuid() != 0 {
			return true, "gave a file to root"
		}
		return os.Geteuid() == 0, "chown succeeded"
	case "mknod":
		p := "/tmp/mknod-probe"
		defer os.Remove(p)
		if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
			return false, errDetail(err)
		}
		// Whether it opens (/tmp is nodev) is said, not judged.
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			return true, "made /dev/null's twin, which does not open: " + errDetail(err)
		}
		f.Close()
		return true, "made /dev/null's twin, and it opens"
	case "mount":
		if err := os.MkdirAll("/tmp/mnt-probe", 0o755); err != nil {
			return false, errDetail(err)
		}
		if err := syscall.Mount("none", "/tmp/mnt-probe", "tmpfs", 0, "size=1m"); err != nil {
			return false, errDetail(err)
		}
		syscall.Unmount("/tmp/mnt-probe", 0)
		return true, "mounted a tmpfs"
	case "rawsock":
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_ICMP)
		if err != nil {
			return false, errDetail(err)
		}
		syscall.Close(fd)
		return true, "opened a raw socket"
	case "setuid":
		if err := syscall.Setuid(0); err != nil {
			return false, errDetail(err)
		}
		return os.Geteuid() == 0, fmt.Sprintf("euid %d", os.Geteuid())
	case "suid":
		out, err := exec.Command(target, "euid").CombinedOutput()
		if err != nil {
			return false, fmt.Sprintf("%v %s", err, strings.TrimSpace(string(out)))
		}
		e := strings.TrimSpace(string(out))
		return e == "0", "euid " + e
	case "root":
		return os.Getuid() == 0 || os.Geteuid() == 0, fmt.Sprintf("uid %d euid %d gid %d", os.Getuid(), os.Geteuid(), os.Getgid())
	case "env":
		v, ok := os.LookupEnv(target)
		if !ok {
			return false, "unset"
		}
		sum := sha256.Sum256([]byte(v))
		return true, "sha256:" + hex.EncodeToString(sum[:])
	case "unix":
		c, err := net.DialTimeout("unix", target, 2*time.Second)
		if err != nil {
			return false, errDetail(err)
		}
		defer c.Close()
		// The test's listener greets each connection: a reply proves the
		// other end is the host's process, not a socket file alone.
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 64)
		n, err := c.Read(buf)
		if err != nil {
			return true, "connected, no greeting: " + errDetail(err)
		}
		return true, fmt.Sprintf("connected, the host said %q", buf[:n])
	case "writable":
		b, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			return false, err.Error()
		}
		var found []string
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if len(f) < 5 {
				continue
			}
			mp := strings.ReplaceAll(f[4], "\\040", " ")
			st, err := os.Stat(mp)
			if err != nil {
				continue
			}
			switch {
			case st.IsDir():
				t, err := os.CreateTemp(mp, ".probe-")
				if err != nil {
					continue
				}
				t.Close()
				os.Remove(t.Name())
			case st.Mode().IsRegular():
				w, err := os.OpenFile(mp, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					continue
				}
				w.Close()
			default:
				continue
			}
			found = append(found, mp)
		}
		return len(found) > 0, strings.Join(found, " ")
	case "socketpair":
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			return false, errDetail(err)
		}
		defer syscall.Close(fds[0])
		defer syscall.Close(fds[1])
		if _, err := syscall.Write(fds[0], []byte("x")); err != nil {
			return false, errDetail(err)
		}
		b := make([]byte, 1)
		if _, err := syscall.Read(fds[1], b); err != nil {
			return false, errDetail(err)
		}
		return true, "a socketpair carries data"
	case "dgram":
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			return false, "socketpair: " + errDetail(err)
		}
		defer syscall.Close(fds[0])
		defer syscall.Close(fds[1])
		to := &syscall.SockaddrUnix{Name: target}
		if err := syscall.Sendto(fds[0], []byte("dgram-sendto"), 0, to); err == nil {
			return true, "sendto delivered to " + target
		}
		if err := syscall.Connect(fds[0], to); err != nil {
			return false, "connect: " + errDetail(err)
		}
		if _, err := syscall.Write(fds[0], []byte("dgram-connect")); err != nil {
			return false, "write: " + errDetail(err)
		}
		return true, "connected and wrote to " + target
	case "socket":
		for _, p := range []string{"/var/run/docker.sock", "/run/docker.sock"} {
			if _, err := os.Stat(p); err == nil {
				return true, p + " is visible"
			}
		}
		return false, "no socket"
	}
	return false, "unknown check " + check
}

func errDetail(err error) string {
	var errno syscall.Errno
	if e, ok := err.(interface{ Unwrap() error }); ok {
		if en, ok := e.Unwrap().(syscall.Errno); ok {
			errno = en
		}
	}
	if en, ok := err.(syscall.Errno); ok {
		errno = en
	}
	if errno != 0 {
		return fmt.Sprintf("%s (errno %d)", err.Error(), int(errno))
	}
	return err.Error()
}

// eat touches n MiB so the pages are really used.
func eat(n int) {
	var keep [][]byte
	for i := 0; i < n; i++ {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1
		}
		keep = append(keep, b)
	}
	fmt.Println(len(keep))
}
