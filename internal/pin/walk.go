package pin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
	"github.com/mcpcage/mcpcage/internal/proxy"
)

// Limits on walking a server's paginated list; exceeding any fails closed.
const (
	DefaultMaxPages = 100
	DefaultMaxBytes = 32 << 20
	DefaultMaxItems = 10000
	// DefaultWalkTimeout bounds a whole walk, so a server that stops
	// answering the proxy's own requests cannot leave the client waiting.
	DefaultWalkTimeout = 60 * time.Second
)

// serverError is an error the server itself answered a list with; it is
// passed on to the client as it is (e.g. a server with no prompts).
type serverError struct{ e *jsonrpc.Error }

func (e *serverError) Error() string { return e.e.Message }

// refresh walks the server's list of kind k (and, for tools, makes sure the
// instructions were checked), compares it with the pins and records the
// outcome. It returns the items the server sent.
func (p *Policy) refresh(ctx context.Context, s *proxy.Session, k Kind) ([]jsontext.Value, error) {
	items, err := p.walk(ctx, s, k)
	if err != nil {
		return nil, err
	}
	if k == Tools {
		// Locked instructions are not sent again until the next initialize:
		// compare what was seen with the pins again, so an approval made
		// meanwhile unlocks the tools too.
		p.mu.Lock()
		st := p.state[Instructions]
		p.mu.Unlock()
		if st != nil && st.lock != "" {
			if err := p.check(Instructions, st.seen); err != nil {
				return nil, err
			}
		}
	}
	return items, p.check(k, items)
}

// walk fetches every page of the list with the proxy's own requests.
func (p *Policy) walk(ctx context.Context, s *proxy.Session, k Kind) ([]jsontext.Value, error) {
	method := listMethod(k)
	ctx, cancel := context.WithTimeout(ctx, p.cfg.WalkTimeout)
	defer cancel()
	var items []jsontext.Value
	seen := map[string]bool{}
	cursor, total := "", 0
	for page := 1; ; page++ {
		if page > p.cfg.MaxPages {
			return nil, fmt.Errorf("the server's %s list has more than %d pages", k.Noun(), p.cfg.MaxPages)
		}
		p.mu.Lock()
		meta := p.meta
		p.mu.Unlock()
		params := listParams(s.ProtocolVersion(), cursor, meta)
		resp, err := s.Call(ctx, method, params)
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("the server did not list its %ss within %v", k.Noun(), p.cfg.WalkTimeout)
		}
		if err != nil {
			return nil, fmt.Errorf("the server did not answer %s: %v", method, err)
		}
		if resp.Error != nil {
			if page == 1 {
				return nil, &serverError{resp.Error}
			}
			return nil, fmt.Errorf("the server answered page %d of %s with an error: %s", page, method, resp.Error.Message)
		}
		total += len(resp.Result)
		if total > p.cfg.MaxBytes {
			return nil, fmt.Errorf("the server's %s list is larger than %d bytes", k.Noun(), p.cfg.MaxBytes)
		}
		pageItems, next, err := parsePage(resp.Result, k)
		if err != nil {
			return nil, fmt.Errorf("the server sent an invalid %s result: %v", method, err)
		}
		items = append(items, pageItems...)
		if len(items) > p.cfg.MaxItems {
			return nil, fmt.Errorf("the server lists more than %d %ss", p.cfg.MaxItems, k.Noun())
		}
		if next == "" {
			return items, nil
		}
		if seen[next] || next == cursor {
			return nil, fmt.Errorf("the server's %s list does not end (cursor %.40q came back)", k.Noun(), next)
		}
		seen[next] = true
		cursor = next
	}
}

// listParams are the params of the proxy's own list request: the cursor, and
// in the stateless protocol era the _meta every request must carry: the
// client's own (clientMeta, its latest request's) when there is one, else the
// protocol version alone.
func listParams(version, cursor string, clientMeta []byte) []byte {
	b := []byte{'{'}
	if cursor != "" {
		b = append(b, `"cursor":`...)
		b, _ = jsontext.AppendQuote(b, cursor)
	}
	for _, v := range proxy.StatelessVersions {
		if v != version {
			continue
		}
		if cursor != "" {
			b = append(b, ',')
		}
		if clientMeta != nil {
			b = append(b, `"_meta":`...)
			b = append(b, clientMeta...)
			break
		}
		b = append(b, `"_meta":{`...)
		b, _ = jsontext.AppendQuote(b, proxy.MetaProtocolVersion)
		b = append(b, ':')
		b, _ = jsontext.AppendQuote(b, version)
		b = append(b, '}')
	}
	return append(b, '}')
}

// ParsePage reads one page of a list result (untrusted: what a server sent):
// the items under k, each an object with whitespace removed, and nextCursor
// ("" on the last page). Members other than those two are ignored.
func ParsePage(result []byte, k Kind) ([]jsontext.Value, string, error) {
	return parsePage(result, k)
}

func parsePage(result []byte, k Kind) ([]jsontext.Value, string, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(result))
	if dec.PeekKind() != '{' {
		return nil, "", errors.New("not an object")
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, "", err
	}
	var items []jsontext.Value
	var next string
	found := false
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return nil, "", err
		}
		switch name.String() {
		case string(k):
			if dec.PeekKind() != '[' {
				return nil, "", fmt.Errorf("%q is not an array", k)
			}
			dec.ReadToken()
			for dec.PeekKind() != ']' {
				v, err := dec.ReadValue()
				if err != nil {
					return nil, "", err
				}
				if v.Kind() != '{' {
					return nil, "", fmt.Errorf("a %s is not an object", k.Noun())
				}
				c := v.Clone()
				if err := c.Compact(); err != nil {
					return nil, "", err
				}
				items = append(items, c)
			}
			if _, err := dec.ReadToken(); err != nil {
				return nil, "", err
			}
			found = true
		case "nextCursor":
			v, err := dec.ReadToken()
			if err != nil {
				return nil, "", err
			}
			if v.Kind() == 'n' {
				continue
			}
			if v.Kind() != '"' {
				return nil, "", errors.New("nextCursor is not a string")
			}
			next = v.String()
		default:
			if err := dec.SkipValue(); err != nil {
				return nil, "", err
			}
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, "", err
	}
	if !found {
		return nil, "", fmt.Errorf("no %q", k)
	}
	if items == nil {
		items = []jsontext.Value{}
	}
	return items, next, nil
}
