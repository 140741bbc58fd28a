package main

// Test-only programs for testscript scripts (never in the shipped binary):
//
//	mcpcage-bare [run flags] [--name NAME] -- argv...
//	    the full policy chain of `mcpcage run` (every run extension), with
//	    argv started as a plain child process instead of a cage, so scripts
//	    exercise pins, scanner and audit without Docker.
//
//	fixture-server
//	    internal/fixture's MCP server, configured by FIXTURE_* variables.
//
//	mcp-client SCRIPT argv...
//	    a scripted MCP client: starts argv (e.g. mcpcage-bare ... -- fixture-server),
//	    sends the requests SCRIPT lists one at a time, waits for each answer and
//	    prints it on stdout. Script lines (# starts a comment):
//	        initialize                 initialize + notifications/initialized
//	        list tools|prompts|resources|templates
//	        call NAME [JSON-ARGS]      tools/call
//	        get-prompt NAME            prompts/get
//	        read URI                   resources/read
//	        request METHOD [JSON]      any request
//	        wait METHOD                wait for a notification from the server
//	        run ARGV...                run a command mid-session (e.g. mcpcage approve
//	                                   in "another terminal"); its output is printed
//	                                   with "| " in front, a failure ends the script
//	    Output lines:
//	        < METHOD result JSON
//	        < METHOD error MCP error CODE: MESSAGE     (as MCP clients render it)
//	        < notification METHOD
//	    A list result is also summarised as "  names: a,b,c" (tools, prompts,
//	    templates) or "  uris: ..." (resources).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpcage/mcpcage/internal/fixture"
	"github.com/mcpcage/mcpcage/internal/guard"
	"github.com/mcpcage/mcpcage/internal/home"
	"github.com/mcpcage/mcpcage/internal/launch"
	"github.com/mcpcage/mcpcage/internal/oauth/oauthtest"
	"github.com/mcpcage/mcpcage/internal/proxy/proxytest"
)

func scriptBare() {
	scriptCommands["mcpcage-bare"] = func() { os.Exit(bareMain(os.Args[1:])) }
	scriptCommands["fixture-server"] = func() {
		cfg, err := fixture.ConfigFromEnv()
		if err == nil {
			err = fixture.Serve(os.Stdin, os.Stdout, cfg)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "fixture-server: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	scriptCommands["mcp-client"] = func() { os.Exit(mcpClientMain(os.Args[1:])) }
	// fixture-http FILE: the fixture as a remote server (Streamable HTTP)
	// on a loopback port; its URL is written to FILE (read with urlfrom).
	// FIXTURE_HTTP_NEED="Name: value" makes it answer 401 without that
	// header. Runs until killed.
	scriptCommands["fixture-http"] = func() {
		cfg, err := fixture.ConfigFromEnv()
		if err != nil {
			fmt.Fprintf(os.Stderr, "fixture-http: %v\n", err)
			os.Exit(1)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintf(os.Stderr, "fixture-http: %v\n", err)
			os.Exit(1)
		}
		url := "http://" + ln.Addr().String() + "/mcp"
		if err := os.WriteFile(os.Args[1]+".tmp", []byte(url), 0o644); err != nil || os.Rename(os.Args[1]+".tmp", os.Args[1]) != nil {
			os.Exit(1)
		}
		_ = http.Serve(ln, fixture.HTTPHandler(cfg, os.Getenv("FIXTURE_HTTP_NEED")))
	}
	// fixture-oauth FILE: the fixture as a remote server behind an OAuth
	// authorization server of its own (oauthtest), both on loopback; the
	// server's URL is written to FILE. Runs until killed.
	scriptCommands["fixture-oauth"] = func() {
		cfg, err := fixture.ConfigFromEnv()
		if err != nil {
			fmt.Fprintf(os.Stderr, "fixture-oauth: %v\n", err)
			os.Exit(1)
		}
		as := oauthtest.NewAS()
		rs := oauthtest.Protect(as, fixture.HTTPHandler(cfg, ""), "/mcp")
		as.Resource = rs.URL + "/mcp"
		if err := os.WriteFile(os.Args[1]+".tmp", []byte(as.Resource), 0o644); err != nil || os.Rename(os.Args[1]+".tmp", os.Args[1]) != nil {
			os.Exit(1)
		}
		select {}
	}
	// fake-browser URL: follows an authorization URL to its loopback
	// redirect, as a person's click in a browser would, and records the
	// URL it was given in $FAKE_BROWSER_LOG.
	scriptCommands["fake-browser"] = func() {
		if p := os.Getenv("FAKE_BROWSER_LOG"); p != "" {
			f, _ := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			fmt.Fprintln(f, strings.Join(os.Args[1:], " "))
			f.Close()
		}
		resp, err := http.Get(os.Args[1])
		if err != nil {
			os.Exit(1)
		}
		resp.Body.Close()
	}
}

func bareMain(args []string) int {
	tuneSessionGC() // as runRun
	io := systemStreams()
	fs := pflag.NewFlagSet("mcpcage-bare", pflag.ContinueOnError)
	fs.SetOutput(io.ErrOut)
	var g GuardFlags
	g.add(fs)
	name := fs.String("name", "", "the server's name")
	env := fs.StringArray("env", nil, "the --env names of the server (recorded for the argument check)")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(io.ErrOut, "mcpcage: error: %v\n", err)
		return 2
	}
	argv := fs.Args()
	if len(argv) == 0 || fs.ArgsLenAtDash() != 0 {
		fmt.Fprintln(io.ErrOut, "mcpcage: error: usage: mcpcage-bare [flags] -- argv...")
		return 2
	}
	if *name == "" {
		*name = argv[0]
	}
	dir, err := home.Dir()
	if err != nil {
		fmt.Fprintf(io.ErrOut, "mcpcage: error: %v\n", err)
		return 1
	}
	cfg, err := g.config(io, *name, launch.Launch{Kind: "process", Argv: argv}, dir)
	if err != nil {
		fmt.Fprintf(io.ErrOut, "mcpcage: error: %v\n", err)
		return 2
	}
	cfg.Env = *env
	// The guard first, as `mcpcage run` opens it: a session whose log
	// cannot be written never starts its server.
	guardOf, err := guard.Open(cfg)
	if err != nil {
		fmt.Fprintf(io.ErrOut, "mcpcage: error: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := proxytest.StartProcess(ctx, argv, nil)
	if err != nil {
		guardOf.Abort()
		fmt.Fprintf(io.ErrOut, "mcpcage: error: %v\n", err)
		return 1
	}
	code, err := serveSession(ctx, io, guardOf, srv, 16<<20, 0)
	if err != nil {
		fmt.Fprintf(io.ErrOut, "mcpcage: error: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// mcpClientMain is the scripted client described at the top of this file.
func mcpClientMain(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mcp-client SCRIPT argv...")
		return 2
	}
	script, err := os.ReadFile(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcp-client:", err)
		return 1
	}
	cmd := exec.Command(args[1], args[2:]...)
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "mcp-client:", err)
		return 1
	}
	lines := make(chan []byte)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 1<<16), 64<<20)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(lines)
	}()
	c := &scriptClient{in: stdin, lines: lines, seen: map[string]bool{}}
	status := 0
	for _, l := range strings.Split(string(script), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if err := c.step(l); err != nil {
			fmt.Fprintf(os.Stderr, "mcp-client: %s: %v\n", l, err)
			status = 1
			break
		}
	}
	stdin.Close()
	done := make(chan error, 1)
	go func() {
		for range lines {
		}
		done <- cmd.Wait()
	}()
	select {
	case err := <-done:
		if err != nil {
			fmt.Printf("< exit %v\n", err)
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		fmt.Fprintln(os.Stderr, "mcp-client: the server did not exit after its stdin was closed")
		return 1
	}
	return status
}

type scriptClient struct {
	in    io.Writer
	lines chan []byte
	id    int
	seen  map[string]bool // notifications received
}

func (c *scriptClient) step(l string) error {
	verb, rest, _ := strings.Cut(l, " ")
	rest = strings.TrimSpace(rest)
	switch verb {
	case "initialize":
		if err := c.request("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"mcp-client","version":"1.0.0"}}`); err != nil {
			return err
		}
		return c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	case "list":
		m := map[string]string{"tools": "tools/list", "prompts": "prompts/list", "resources": "resources/list", "templates": "resources/templates/list"}[rest]
		if m == "" {
			return fmt.Errorf("list what?")
		}
		return c.request(m, "")
	case "call":
		name, a, _ := strings.Cut(rest, " ")
		if a == "" {
			a = "{}"
		}
		n, _ := json.Marshal(name)
		return c.request("tools/call", `{"name":`+string(n)+`,"arguments":`+a+`}`)
	case "get-prompt":
		n, _ := json.Marshal(rest)
		return c.request("prompts/get", `{"name":`+string(n)+`}`)
	case "read":
		u, _ := json.Marshal(rest)
		return c.request("resources/read", `{"uri":`+string(u)+`}`)
	case "request":
		m, p, _ := strings.Cut(rest, " ")
		return c.request(m, p)
	case "raw":
		// A line sent as it is (malformed on purpose); its answer is printed.
		if err := c.send(rest); err != nil {
			return err
		}
		select {
		case line, ok := <-c.lines:
			if !ok {
				return errors.New("the server went away")
			}
			fmt.Printf("< raw %s\n", line)
			return nil
		case <-time.After(20 * time.Second):
			return errors.New("timed out waiting for the answer")
		}
	case "run":
		argv := strings.Fields(rest)
		if len(argv) == 0 {
			return errors.New("run what?")
		}
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
			fmt.Printf("| %s\n", l)
		}
		return err
	case "wait":
		deadline := time.After(20 * time.Second)
		for !c.seen[rest] {
			select {
			case line, ok := <-c.lines:
				if !ok {
					return errors.New("the server went away")
				}
				c.show(line, 0, "")
			case <-deadline:
				return errors.New("timed out")
			}
		}
		delete(c.seen, rest)
		return nil
	}
	return fmt.Errorf("unknown script verb %q", verb)
}

func (c *scriptClient) send(msg string) error {
	_, err := io.WriteString(c.in, msg+"\n")
	return err
}

func (c *scriptClient) request(method, params string) error {
	c.id++
	m, _ := json.Marshal(method)
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%s`, c.id, m)
	if params != "" {
		msg += `,"params":` + params
	}
	if err := c.send(msg + "}"); err != nil {
		return err
	}
	deadline := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				return errors.New("the server went away")
			}
			if c.show(line, c.id, method) {
				return nil
			}
		case <-deadline:
			return errors.New("timed out waiting for the answer")
		}
	}
}

// show prints one line from the server and reports whether it answered id.
func (c *scriptClient) show(line []byte, id int, method string) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		fmt.Printf("< invalid %q\n", line)
		return false
	}
	if m.Method != "" && len(m.ID) == 0 {
		fmt.Printf("< notification %s\n", m.Method)
		c.seen[m.Method] = true
		return false
	}
	if m.Method != "" {
		fmt.Printf("< server request %s\n", m.Method)
		return false
	}
	if string(m.ID) != fmt.Sprint(id) {
		fmt.Printf("< unexpected %s\n", line)
		return false
	}
	if m.Error != nil {
		fmt.Printf("< %s error MCP error %d: %s\n", method, m.Error.Code, m.Error.Message)
		return true
	}
	var buf bytes.Buffer
	json.Compact(&buf, m.Result)
	fmt.Printf("< %s result %s\n", method, buf.Bytes())
	var lists map[string]json.RawMessage
	if json.Unmarshal(m.Result, &lists) == nil {
		for _, k := range []string{"tools", "prompts", "resources", "resourceTemplates"} {
			var items []map[string]any
			if json.Unmarshal(lists[k], &items) != nil || lists[k] == nil {
				continue
			}
			field := "name"
			if k == "resources" {
				field = "uri"
			}
			var names []string
			for _, it := range items {
				names = append(names, fmt.Sprint(it[field]))
			}
			fmt.Printf("  %ss: %s\n", field, strings.Join(names, ","))
		}
	}
	return true
}
