package fuzz

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/mcpcage/mcpcage/internal/remote"
)

// fixedAnswer answers every request of the bridge with one body, as the
// server on the other end would; no network.
type fixedAnswer struct {
	ctype string
	body  []byte
	sid   string
}

func (f fixedAnswer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	h := http.Header{"Content-Type": {f.ctype}}
	if f.sid != "" {
		h.Set("Mcp-Session-Id", f.sid)
	}
	status := http.StatusOK
	if r.Method == http.MethodGet && f.ctype != "text/event-stream" {
		status = http.StatusMethodNotAllowed
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(bytes.NewReader(f.body)), Request: r}, nil
}

// FuzzRemoteAnswers: whatever a remote server answers (a JSON body or an
// event stream, any bytes, any session id), the bridge gives the proxy
// whole lines within the bound, answers the request, and ends when told.
func FuzzRemoteAnswers(f *testing.F) {
	f.Add(false, []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`), "s-1")
	f.Add(true, []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"id\":1,\"result\":{}}\n\n"), "")
	f.Add(true, []byte("data: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\r\r: c\rdata:\r\n\r\nid: \x00\ndata: [1,2]\n\n"), "a b")
	f.Add(true, bytes.Repeat([]byte("data: aaaa"), 2000), "")
	f.Add(false, []byte("\n\n{\"a\":\n1}\n"), "\x7f")
	const max = 4096
	u, _ := url.Parse("http://127.0.0.1:9/mcp")
	f.Fuzz(func(t *testing.T, sse bool, body []byte, sid string) {
		ctype := "application/json"
		if sse {
			ctype = "text/event-stream"
		}
		s, err := remote.Dial(remote.Options{URL: u, MaxLine: max, Transport: fixedAnswer{ctype: ctype, body: body, sid: sid}})
		if err != nil {
			t.Fatal(err)
		}
		go io.Copy(io.Discard, s.Stderr())
		lines := make(chan []byte, 16)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(s.Stdout())
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				lines <- append([]byte(nil), sc.Bytes()...)
			}
		}()
		io.WriteString(s.Stdin(), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`+"\n")
		io.WriteString(s.Stdin(), `{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n")
		s.Stdin().Close()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					s.Stop(ctx)
					return
				}
				if len(l) > max+200 {
					t.Fatalf("a line of %d bytes passed a bound of %d", len(l), max)
				}
				if bytes.ContainsAny(l, "\r\n") || len(bytes.TrimSpace(l)) == 0 {
					t.Fatalf("not one whole line: %q", l)
				}
			case <-timeout:
				t.Fatal("the bridge did not end in 20 s after its input ended")
			}
		}
	})
}
