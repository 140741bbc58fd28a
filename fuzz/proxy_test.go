package fuzz

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
	"github.com/mcpcage/mcpcage/internal/proxy"
)

// pipeServer is an in-process MCP server: it answers initialize with a
// known version and every other request with {"ok":true}, after first
// writing whatever bytes it was given as its own output.
type pipeServer struct {
	inR, outR *io.PipeReader
	inW, outW *io.PipeWriter
	done      chan struct{}
	once      sync.Once
}

func newPipeServer(first []byte) *pipeServer {
	s := &pipeServer{done: make(chan struct{})}
	s.inR, s.inW = io.Pipe()
	s.outR, s.outW = io.Pipe()
	go func() {
		defer close(s.done)
		defer s.outW.Close()
		if len(first) > 0 {
			if _, err := s.outW.Write(append(first, '\n')); err != nil {
				return
			}
		}
		rd := jsonrpc.NewReader(s.inR, 0)
		for {
			line, err := rd.ReadLine()
			if err == io.EOF || err == io.ErrClosedPipe {
				return
			}
			if err != nil {
				continue
			}
			m, err := jsonrpc.Parse(line)
			if err != nil || m.Kind != jsonrpc.KindRequest {
				continue
			}
			result := []byte(`{"ok":true}`)
			if m.Method == "initialize" {
				result = []byte(`{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"pipe","version":"0"}}`)
			}
			if _, err := s.outW.Write(append(jsonrpc.NewResponse(m.ID, result), '\n')); err != nil {
				return
			}
		}
	}()
	return s
}

func (s *pipeServer) Stdin() io.WriteCloser { return s.inW }
func (s *pipeServer) Stdout() io.Reader     { return s.outR }
func (s *pipeServer) Stderr() io.Reader     { return nil }
func (s *pipeServer) Wait() (int, error)    { <-s.done; return 0, nil }
func (s *pipeServer) Stop(ctx context.Context) error {
	s.once.Do(func() {
		s.inR.CloseWithError(io.EOF)
		s.outR.Close()
	})
	<-s.done
	return nil
}

const initLine = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"f","version":"0"}}}`
const finalLine = `{"jsonrpc":"2.0","id":"final","method":"ping"}`

// session runs one proxy session: the client sends initialize, then
// clientBytes, then a ping; the server first emits serverBytes. Every line
// the client receives must be a single valid message, and the ping must be
// answered.
func session(t *testing.T, clientBytes, serverBytes []byte) {
	srv := newPipeServer(serverBytes)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		proxy.Run(context.Background(), proxy.Config{MaxLine: 4096, StopTimeout: time.Second}, inR, outW, srv)
		outW.Close()
		close(done)
	}()
	go func() {
		w := bufio.NewWriter(inW)
		w.WriteString(initLine + "\n")
		w.Write(clientBytes)
		w.WriteString("\n" + finalLine + "\n")
		w.Flush()
	}()
	br := bufio.NewReader(outR)
	answered := false
	for !answered {
		line, err := br.ReadBytes('\n')
		if err != nil {
			t.Fatalf("the proxy ended its output before answering the final ping: %v", err)
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		if jsonrpc.IsBatch(line) {
			t.Fatalf("a batch reached the client: %s", line)
		}
		m, err := jsonrpc.Parse(line)
		if err != nil {
			t.Fatalf("the client received an invalid message %q: %v", line, err)
		}
		if m.Kind == jsonrpc.KindResponse && m.ID.String() == `"final"` {
			answered = true
		}
	}
	inW.Close()
	go io.Copy(io.Discard, outR)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the client left")
	}
	outR.Close()
}

// FuzzProxyClient: any bytes from the client leave the proxy answering.
func FuzzProxyClient(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":"final","method":"hang"}`))
	f.Fuzz(func(t *testing.T, b []byte) { session(t, b, nil) })
}

// FuzzProxyServer: any bytes from the server reach the client only as
// valid single messages, and the session goes on.
func FuzzProxyServer(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":"final","result":{}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"init","result":{"protocolVersion":"1999-01-01"}}`))
	f.Fuzz(func(t *testing.T, b []byte) { session(t, nil, b) })
}
