package pin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpcage/mcpcage/internal/jsonrpc"
	"github.com/mcpcage/mcpcage/internal/launch"
	"github.com/mcpcage/mcpcage/internal/proxy"
)

// Config sets up the pin policy of one session.
type Config struct {
	Store  Store
	Name   string        // the server's identity
	Launch launch.Launch // recorded with what is pinned
	// Strict makes the first list need an approval too (no trust on first use).
	Strict bool
	Filter Filter
	// HighFindings, when set, counts the scanner's high-severity findings in
	// one item (a tool, prompt, ... as raw JSON; instructions as a JSON
	// string), given the whole list it came in. The lock message gives the
	// total over what was added or changed.
	HighFindings func(k Kind, item []byte, list []jsontext.Value) int
	// Flagged, when set, says whether the scanner finds signs of hidden
	// instructions at medium severity or above in one item: such a tool,
	// listed for the first time to a client of new capabilities, is not
	// trusted on first use (see ContextKey).
	Flagged func(k Kind, item []byte, list []jsontext.Value) bool
	// Event, when set, hears what pinning did, for the audit log: "pin" (a
	// first list was pinned) and "drift" (a list differs from the approved
	// one, or --strict awaits a first approval; the session is locked).
	// Fields hold names and counts, never definitions.
	Event func(kind string, fields map[string]any)
	// Decided, when set, hears each answer the policy gives in the server's
	// place that another policy must know about, as a value (the audit log
	// records blocks and the definitions a call was made against), so that
	// nobody has to read the policy's reply bytes to learn what it decided.
	Decided func(Decision)
	// RelayError, when set, sees an error the server answered a list with
	// before it is passed on to the client, and returns what is passed on
	// instead (itself, or mcpcage's own error when it is withheld).
	RelayError func(method string, e *jsonrpc.Error) *jsonrpc.Error
	// Limits; zero means the Default values.
	MaxPages, MaxBytes, MaxItems int
	WalkTimeout                  time.Duration
	Now                          func() time.Time
}

// Decision is one answer the policy gave in the server's place.
type Decision struct {
	Method string
	// Blocked is jsonrpc.CodeBlocked when the request was refused because
	// of pins (drift, a walk that failed closed); 0 otherwise.
	Blocked int
	// Tools are the tool definitions a tools/list answer gave the client,
	// exactly as sent; nil for anything else.
	Tools []jsontext.Value
}

// Policy pins what a server shows the model and locks the session on drift.
// It is a proxy.Policy; make one per session with New.
type Policy struct {
	cfg Config

	mu    sync.Mutex
	state map[Kind]*kindState
	cache map[Kind]*cachedIndex
	// meta is the raw _meta of the client's latest request. In the stateless
	// era every request must carry the client's capabilities and info there,
	// so the proxy's own list requests repeat it.
	meta []byte
	// ctx is the client's capabilities as a ContextKey, from its initialize
	// request; "" before one was seen.
	ctx string
}

// kindState is what this session last found for one kind.
type kindState struct {
	checked  bool             // compared since the last list_changed
	approved *Index           // approved items
	drifted  map[string]bool  // keys added or changed (for gates)
	lock     string           // non-empty: the kind is locked; the text after "mcpcage blocked METHOD: "
	reason   string           // the same, short, for blocked calls
	seen     []jsontext.Value // what the server showed at that comparison
	fi       os.FileInfo      // the pin file compared against (nil: none)
}

// New returns the pin policy for one session.
func New(cfg Config) *Policy {
	if cfg.MaxPages <= 0 {
		cfg.MaxPages = DefaultMaxPages
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.MaxItems <= 0 {
		cfg.MaxItems = DefaultMaxItems
	}
	if cfg.WalkTimeout <= 0 {
		cfg.WalkTimeout = DefaultWalkTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Policy{cfg: cfg, state: map[Kind]*kindState{}, cache: map[Kind]*cachedIndex{}}
}

var listKinds = map[string]Kind{
	"tools/list":               Tools,
	"prompts/list":             Prompts,
	"resources/list":           Resources,
	"resources/templates/list": Templates,
}

var changedKinds = map[string]Kind{
	"notifications/tools/list_changed":     Tools,
	"notifications/prompts/list_changed":   Prompts,
	"notifications/resources/list_changed": Resources,
}

func listMethod(k Kind) string {
	for m, kk := range listKinds {
		if kk == k {
			return m
		}
	}
	return ""
}

// Inspect implements proxy.Policy.
func (p *Policy) Inspect(ctx context.Context, s *proxy.Session, ev *proxy.Event) proxy.Verdict {
	m := ev.Msg
	switch {
	case ev.Dir == proxy.ClientToServer && m.Kind == jsonrpc.KindRequest:
		// The parser found params' _meta while it validated them.
		if m.Meta != nil {
			p.mu.Lock()
			p.meta = bytes.Clone(m.Meta)
			p.mu.Unlock()
		}
		if m.Method == "initialize" {
			p.mu.Lock()
			p.ctx = ContextKey(m.Params)
			p.mu.Unlock()
		}
		return p.request(s, m)
	case ev.Dir == proxy.ServerToClient && m.Kind == jsonrpc.KindNotification:
		if k, ok := changedKinds[m.Method]; ok {
			p.mu.Lock()
			if st := p.state[k]; st != nil {
				st.checked = false
			}
			if k == Resources { // templates change with resources
				if st := p.state[Templates]; st != nil {
					st.checked = false
				}
			}
			p.mu.Unlock()
		}
	case ev.Dir == proxy.ServerToClient && m.Kind == jsonrpc.KindResponse && m.Error == nil &&
		(ev.Method == "initialize" || ev.Method == "server/discover"):
		return p.initialized(m)
	}
	return proxy.Verdict{}
}

func (p *Policy) request(s *proxy.Session, m *jsonrpc.Message) proxy.Verdict {
	params := paramStrings(m)
	if k, ok := listKinds[m.Method]; ok {
		if params.cursor != "" {
			// mcpcage answers every list in one page, so no cursor is ours.
			return reply(errorMsg(m.ID, jsonrpc.CodeInvalidParams, "Invalid cursor: mcpcage answers "+m.Method+" in one page"))
		}
		return proxy.Verdict{Async: func(ctx context.Context) proxy.Verdict { return p.list(ctx, s, m, k) }}
	}
	var k Kind
	var key string
	switch m.Method {
	case "tools/call":
		k, key = Tools, params.name
	case "prompts/get":
		k, key = Prompts, params.name
	case "resources/read":
		k, key = Resources, params.uri
	default:
		return proxy.Verdict{}
	}
	if k == Tools && key == "" {
		return reply(errorMsg(m.ID, jsonrpc.CodeInvalidParams, "Invalid params: tools/call needs a tool name"))
	}
	p.mu.Lock()
	checked := p.state[k] != nil && p.state[k].checked
	var locked *kindState
	if k == Tools {
		locked = p.toolsLock()
	} else if st := p.state[k]; st != nil && st.lock != "" {
		locked = st
	}
	p.mu.Unlock()
	// Locked, but the pins changed since (an approval in another terminal):
	// compare again rather than wait for the client to list.
	if checked && (locked == nil || p.cfg.Store.unchanged(p.cfg.Name, locked.fi)) {
		return p.gate(m, k, key)
	}
	// Clients cache lists across sessions, so a call can come before any
	// list: compare first, then decide.
	return proxy.Verdict{Async: func(ctx context.Context) proxy.Verdict {
		if _, err := p.refresh(ctx, s, k); err != nil {
			var se *serverError
			if k != Tools && errors.As(err, &se) {
				// A server with no list of prompts or resources has nothing
				// pinned to drift: let it answer for itself.
				return proxy.Verdict{}
			}
			return p.block(m, fmt.Sprintf("mcpcage blocked %s: %v", m.Method, err))
		}
		return p.gate(m, k, key)
	}}
}

// gate decides a call or get against this session's latest comparison.
func (p *Policy) gate(m *jsonrpc.Message, k Kind, key string) proxy.Verdict {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.state[k]
	switch k {
	case Tools:
		def := st.approved.Get(key)
		if p.cfg.Filter.Hides(key, def) {
			return reply(errorMsg(m.ID, jsonrpc.CodeInvalidParams, "Unknown tool: "+key))
		}
		if st := p.toolsLock(); st != nil {
			return reply(resultMsg(m.ID, fmt.Sprintf(
				"mcpcage blocked the call to %q: %s. The call did not reach the server, and none will until a person reviews the change with `mcpcage diff %s` and approves it with `mcpcage approve %s`.",
				key, st.reason, p.cfg.Name, p.cfg.Name)))
		}
		if def == nil {
			return reply(errorMsg(m.ID, jsonrpc.CodeInvalidParams, "Unknown tool: "+key))
		}
	case Prompts, Resources:
		if st.lock != "" && st.drifted[key] {
			return p.block(m, fmt.Sprintf(
				"mcpcage blocked %s: %s %q of %q changed since it was approved (rug-pull protection). Run `mcpcage diff %s`.",
				m.Method, k.Noun(), key, p.cfg.Name, p.cfg.Name))
		}
	}
	return proxy.Verdict{}
}

// toolsLock is why tool calls are blocked: the tools or the instructions
// drifted (or are not yet approved under --strict). p.mu is held.
func (p *Policy) toolsLock() *kindState {
	for _, k := range []Kind{Tools, Instructions} {
		if st := p.state[k]; st != nil && st.lock != "" {
			return st
		}
	}
	return nil
}

// list answers a client's list request from a complete, checked walk.
func (p *Policy) list(ctx context.Context, s *proxy.Session, m *jsonrpc.Message, k Kind) proxy.Verdict {
	items, err := p.refresh(ctx, s, k)
	var se *serverError
	if errors.As(err, &se) {
		e := se.e
		if p.cfg.RelayError != nil {
			e = p.cfg.RelayError(m.Method, e)
		}
		return reply(errorMsg(m.ID, e.Code, e.Message))
	}
	if err != nil {
		return p.block(m, fmt.Sprintf("mcpcage blocked %s: %v", m.Method, err))
	}
	p.mu.Lock()
	lock := p.state[k].lock
	if st := p.toolsLock(); k == Tools && st != nil {
		lock = st.lock
	}
	p.mu.Unlock()
	if lock != "" {
		return p.block(m, "mcpcage blocked "+m.Method+": "+lock)
	}
	var b bytes.Buffer
	b.WriteString(`{"` + string(k) + `":[`)
	var shown []jsontext.Value
	for _, it := range items {
		if k == Tools {
			key, _ := ItemKey(k, it)
			if p.cfg.Filter.Hides(key, it) {
				continue
			}
		}
		if len(shown) > 0 {
			b.WriteByte(',')
		}
		b.Write(it)
		shown = append(shown, it)
	}
	b.WriteString(`]}`)
	if k == Tools {
		if shown == nil {
			shown = []jsontext.Value{}
		}
		p.decide(Decision{Method: m.Method, Tools: shown})
	}
	return reply(resultMsg(m.ID, "", b.Bytes()))
}

// initialized checks the server's instructions from the initialize result.
// Instructions that are new or changed are pinned or locked like any list,
// and are removed from the result until they are approved, so they never
// reach the model unreviewed.
func (p *Policy) initialized(m *jsonrpc.Message) proxy.Verdict {
	var members map[string]jsontext.Value
	if err := json.Unmarshal(m.Result, &members); err != nil {
		return proxy.Verdict{}
	}
	// Some clients match member names without regard to case, so any
	// spelling of "instructions" is what they would show the model; one that
	// is not a string is removed rather than guessed about.
	instructions, odd := "", false
	for name, v := range members {
		if !strings.EqualFold(name, "instructions") {
			continue
		}
		if name != "instructions" || v.Kind() != '"' || json.Unmarshal(v, &instructions) != nil {
			odd = true
		}
	}
	q, _ := jsontext.AppendQuote(nil, instructions)
	if err := p.check(Instructions, []jsontext.Value{q}); err != nil {
		// Fail closed: the client gets an error instead of a server whose
		// instructions could not be checked.
		p.decide(Decision{Method: "initialize", Blocked: jsonrpc.CodeBlocked})
		return proxy.Verdict{Action: proxy.Replace, Message: errorMsg(m.ID, jsonrpc.CodeBlocked, "mcpcage blocked initialize: "+err.Error())}
	}
	p.mu.Lock()
	lock := p.state[Instructions].lock
	p.mu.Unlock()
	if !odd && (lock == "" || instructions == "") {
		return proxy.Verdict{}
	}
	stripped, err := withoutMember(m.Result, "instructions")
	if err != nil {
		return proxy.Verdict{}
	}
	return proxy.Verdict{Action: proxy.Replace, Message: resultMsg(m.ID, "", stripped)}
}

func reply(msg []byte) proxy.Verdict { return proxy.Verdict{Action: proxy.Reply, Message: msg} }

// block refuses a request because of pins, and says so to Decided.
func (p *Policy) block(m *jsonrpc.Message, text string) proxy.Verdict {
	p.decide(Decision{Method: m.Method, Blocked: jsonrpc.CodeBlocked})
	return reply(errorMsg(m.ID, jsonrpc.CodeBlocked, text))
}

func (p *Policy) decide(d Decision) {
	if p.cfg.Decided != nil {
		p.cfg.Decided(d)
	}
}

// withoutMember returns the object obj with the named top-level member
// removed, in any spelling of its letter case.
func withoutMember(obj []byte, name string) ([]byte, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	out := []byte{'{'}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		n := tok.String() // before the next read voids tok
		v, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		if strings.EqualFold(n, name) {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out, _ = jsontext.AppendQuote(out, n)
		out = append(out, ':')
		out = append(out, v...)
	}
	return append(out, '}'), nil
}

// requestParams is what the pins read of a request's params: the members
// that name what is asked for, each "" unless it is a string.
type requestParams struct {
	name, uri, cursor string
}

// paramStrings reads name, uri and cursor of request m's params: the first
// two the strict parser found while it validated them (jsonrpc.Message.Name,
// URI), so a tool call's params, arguments and all, are not read again;
// cursor is looked for only in a list request's.
func paramStrings(m *jsonrpc.Message) requestParams {
	var out requestParams
	out.name, _ = jsonrpc.String(m.Name)
	out.uri, _ = jsonrpc.String(m.URI)
	if _, ok := listKinds[m.Method]; ok {
		jsonrpc.Members(m.Params, func(name string, value []byte) bool {
			if name == "cursor" {
				out.cursor, _ = jsonrpc.String(value)
				return false
			}
			return true
		})
	}
	return out
}

func errorMsg(id jsonrpc.ID, code int, msg string) []byte {
	return jsonrpc.NewErrorResponse(id, code, msg, nil)
}

// resultMsg builds a response: with text, a tools/call result that is an
// error (isError) carrying the text; else the raw result.
func resultMsg(id jsonrpc.ID, text string, raw ...[]byte) []byte {
	if len(raw) > 0 {
		return jsonrpc.NewResponse(id, raw[0])
	}
	q, _ := jsontext.AppendQuote(nil, text)
	return jsonrpc.NewResponse(id, []byte(`{"content":[{"type":"text","text":`+string(q)+`}],"isError":true}`))
}
