package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
)

// Listing is what a server says about itself and its tools.
type Listing struct {
	ProtocolVersion string
	ServerInfo      json.RawMessage // the server's serverInfo object, nil when absent
	Instructions    string
	Tools           []json.RawMessage // each tool object exactly as the server sent it, in order
}

// ListTimeout bounds ListTools when ctx has no deadline.
const ListTimeout = 60 * time.Second

// maxPages bounds tools/list pagination against a server that never stops.
const maxPages = 1000

// ListTools acts as a minimal MCP client on srv: initialize (with the latest
// handshake version), notifications/initialized, then tools/list across all
// pages. Every message is held to jsonrpc.Parse's rules. It gives up with an
// error when ctx ends or, without a deadline, after ListTimeout. It does not
// stop srv; the caller does, which also ends ListTools' reading goroutine.
func ListTools(ctx context.Context, srv Server) (*Listing, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, ListTimeout)
		defer cancel()
	}
	c := &miniClient{srv: srv, w: jsonrpc.NewWriter(srv.Stdin()), lines: make(chan []byte, 16), readErr: make(chan error, 1), done: make(chan struct{})}
	defer close(c.done)
	go c.read()

	init := fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"mcpcage","version":"0"}}`, HandshakeVersions[len(HandshakeVersions)-1])
	res, err := c.call(ctx, "initialize", []byte(init))
	if err != nil {
		return nil, err
	}
	l := &Listing{}
	l.ProtocolVersion, _ = member(res, "protocolVersion")
	if !KnownVersion(l.ProtocolVersion) {
		return nil, fmt.Errorf("the server chose protocol version %s, which mcpcage does not understand", clip(l.ProtocolVersion))
	}
	if raw, ok := memberRaw(res, "serverInfo"); ok {
		l.ServerInfo = raw
	}
	l.Instructions, _ = member(res, "instructions")
	if err := c.w.WriteMessage(jsonrpc.NewNotification("notifications/initialized", nil)); err != nil {
		return nil, fmt.Errorf("the server is not reading its input (it may have exited): %v", err)
	}
	cursor := ""
	seen := map[string]bool{}
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("the server's tool list goes on for more than %d pages", maxPages)
		}
		var params []byte
		if cursor != "" {
			params, _ = jsontext.AppendQuote([]byte(`{"cursor":`), cursor)
			params = append(params, '}')
		}
		res, err := c.call(ctx, "tools/list", params)
		if err != nil {
			return nil, err
		}
		tools, ok := memberRaw(res, "tools")
		if !ok {
			return nil, errors.New("the server's tools/list result has no tools array")
		}
		items, err := arrayItems(tools)
		if err != nil {
			return nil, fmt.Errorf("the server's tools/list result: %w", err)
		}
		l.Tools = append(l.Tools, items...)
		next, _ := member(res, "nextCursor")
		if next == "" {
			return l, nil
		}
		if seen[next] {
			return nil, errors.New("the server's tools/list pages loop: a cursor came back twice")
		}
		seen[next] = true
		cursor = next
	}
}

func arrayItems(arr []byte) ([]json.RawMessage, error) {
	d := jsontext.NewDecoder(bytes.NewReader(arr))
	tok, err := d.ReadToken()
	if err != nil || tok.Kind() != '[' {
		return nil, errors.New("tools is not an array")
	}
	var out []json.RawMessage
	for d.PeekKind() != ']' {
		v, err := d.ReadValue()
		if err != nil {
			return nil, err
		}
		if v.Kind() != '{' {
			return nil, errors.New("a tool is not an object")
		}
		out = append(out, json.RawMessage(bytes.Clone(v)))
	}
	return out, nil
}

type miniClient struct {
	srv     Server
	w       *jsonrpc.Writer
	seq     int64
	lines   chan []byte
	readErr chan error
	done    chan struct{} // closed when ListTools returns
}

func (c *miniClient) read() {
	rd := jsonrpc.NewReader(c.srv.Stdout(), 0)
	for {
		line, err := rd.ReadLine()
		if err != nil {
			var tl *jsonrpc.LineTooLongError
			if errors.As(err, &tl) {
				continue
			}
			c.readErr <- err
			close(c.lines)
			return
		}
		select {
		case c.lines <- line:
		case <-c.done:
			return
		}
	}
}

func (c *miniClient) call(ctx context.Context, method string, params []byte) ([]byte, error) {
	c.seq++
	id := jsonrpc.IntID(c.seq)
	if err := c.w.WriteMessage(jsonrpc.NewRequest(id, method, params)); err != nil {
		return nil, fmt.Errorf("the server is not reading its input (it may have exited) before %s: %v", method, err)
	}
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("the server did not answer %s in time: %w", method, ctx.Err())
		case line, ok := <-c.lines:
			if !ok {
				err := <-c.readErr
				c.readErr <- err
				if err == nil || errors.Is(err, io.EOF) {
					return nil, fmt.Errorf("the server closed its output before answering %s", method)
				}
				return nil, fmt.Errorf("the server closed its output before answering %s: %v", method, err)
			}
			if blank(line) {
				continue
			}
			m, err := jsonrpc.Parse(line)
			if err != nil {
				continue // not ours to judge here; a malformed line is ignored
			}
			switch m.Kind {
			case jsonrpc.KindRequest:
				// A server may ping or ask for roots even now; answer so
				// that it does not wait on us.
				if m.Method == "ping" {
					_ = c.w.WriteMessage(jsonrpc.NewResponse(m.ID, nil))
				} else {
					_ = c.w.WriteMessage(jsonrpc.NewErrorResponse(m.ID, jsonrpc.CodeMethodNotFound, "mcpcage: not supported while listing tools", nil))
				}
			case jsonrpc.KindResponse:
				if m.ID.Key() != id.Key() {
					continue
				}
				if m.Error != nil {
					return nil, fmt.Errorf("the server answered %s with error %d: %s", method, m.Error.Code, clip(m.Error.Message))
				}
				return m.Result, nil
			}
		}
	}
}
