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

// Limits on walking a server's paginated list; exceeding any fails closed.
const (
	DefaultMaxPages = 100
	DefaultMaxBytes = 32 << 20
	DefaultMaxItems = 10000
	// DefaultWalkTimeout bounds a whole walk, so a server that stops
	// answering the proxy's own requests cannot leave the client waiting.
	DefaultWalkTimeout = 60 * time.Second
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

// Filter hides tools from the client: hidden tools vanish from tools/list and
// calling them gets "Unknown tool". Filters do not change what is pinned: the
// pins hold the server's whole catalog, whatever flags a session used.
type Filter struct {
	Allow    []string // when not empty, only these tools
	Deny     []string
	ReadOnly bool // only tools annotated readOnlyHint: true
}

// Hides reports whether the tool (its raw definition, nil when unknown) is
// filtered out.
func (f Filter) Hides(name string, def []byte) bool {
	if len(f.Allow) > 0 && !contains(f.Allow, name) {
		return true
	}
	if contains(f.Deny, name) {
		return true
	}
	if f.ReadOnly {
		var t struct {
			Annotations struct {
				ReadOnlyHint *bool `json:"readOnlyHint"`
			} `json:"annotations"`
		}
		if def == nil || json.Unmarshal(def, &t) != nil || t.Annotations.ReadOnlyHint == nil || !*t.Annotations.ReadOnlyHint {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
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
		if meta := rawMember(m.Params, "_meta"); meta != nil {
			p.mu.Lock()
			p.meta = meta
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
	params := paramStrings(m.Params)
	if k, ok := listKinds[m.Method]; ok {
		if params["cursor"] != "" {
			// mcpcage answers every list in one page, so no cursor is ours.
			return reply(errorMsg(m.ID, jsonrpc.CodeInvalidParams, "Invalid cursor: mcpcage answers "+m.Method+" in one page"))
		}
		return proxy.Verdict{Async: func(ctx context.Context) proxy.Verdict { return p.list(ctx, s, m, k) }}
	}
	var k Kind
	var key string
	switch m.Method {
	case "tools/call":
		k, key = Tools, params["name"]
	case "prompts/get":
		k, key = Prompts, params["name"]
	case "resources/read":
		k, key = Resources, params["uri"]
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
		return reply(errorMsg(m.ID, se.e.Code, se.e.Message))
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

// rawMember returns the exact bytes of the top-level member name of the JSON
// object obj (already validated by the strict parser), nil when absent.
func rawMember(obj []byte, name string) []byte {
	if len(obj) == 0 {
		return nil
	}
	dec := jsontext.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil
	}
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil
		}
		key := tok.String() // before ReadValue, which voids tok
		v, err := dec.ReadValue()
		if err != nil {
			return nil
		}
		if key == name {
			return bytes.Clone(v)
		}
	}
	return nil
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

// check compares items with the pins, records first use or pending drift,
// and sets this session's state for k.
//
// The usual case, nothing changed and the pin file untouched since this
// session last read it, is decided from the cached index without taking the
// lock; anything else is decided under the pin file's lock from a fresh read.
func (p *Policy) check(k Kind, items []jsontext.Value) error {
	if items == nil {
		items = []jsontext.Value{}
	}
	p.mu.Lock()
	c := p.cache[k]
	p.mu.Unlock()
	if c != nil && p.cfg.Store.unchanged(p.cfg.Name, c.fi) {
		if ch, err := c.ix.Compare(items); err == nil && len(ch) == 0 {
			p.setState(k, &kindState{checked: true, approved: c.ix, seen: items, fi: c.fi})
			return nil
		}
	}
	var changes []Change
	var lock, reason string
	var approved []jsontext.Value
	var pinned, foreign bool
	p.mu.Lock()
	ctx := p.ctx
	p.mu.Unlock()
	var flagged func([]byte) bool
	if p.cfg.Flagged != nil {
		flagged = func(item []byte) bool { return p.cfg.Flagged(k, item, items) }
	}
	_, fi, err := p.cfg.Store.update(p.cfg.Name, func(f *File) (bool, error) {
		changes, lock, reason, approved, pinned, foreign = nil, "", "", nil, false, false
		now := p.cfg.Now().UTC()
		// No instructions at all need no approval, even under --strict.
		noInstructions := k == Instructions && len(items) == 1 && string(items[0]) == `""`
		foreign = f.Approved != nil && f.Approved.Launch.Kind != "" && f.Approved.Launch.Identity() != p.cfg.Launch.Identity()
		if !foreign && !f.Approved.Has(k) && (!p.cfg.Strict || noInstructions) {
			if f.Approved == nil {
				f.Approved = &Snapshot{Launch: p.cfg.Launch}
			}
			f.Approved.Set(k, items)
			if k == Tools {
				recordContext(f.Approved, ctx, items)
			}
			f.Approved.Time = now
			approved, pinned = items, true
			dropSettledPending(f, k)
			return true, nil
		}
		var err error
		changes, err = Compare(k, f.Approved.List(k), items)
		if err != nil {
			return false, err
		}
		approved = f.Approved.List(k)
		pendingItems := items
		if k == Tools && f.Approved.Has(k) && !foreign {
			fresh, real := explain(f.Approved, ctx, changes, p.cfg.Strict, flagged)
			if len(real) == 0 {
				changes = nil
				wrote := recordContext(f.Approved, ctx, items)
				if len(fresh) > 0 {
					f.Approved.Tools = append(f.Approved.Tools, fresh...)
					approved, pinned, wrote = f.Approved.Tools, true, true
				}
				return dropSettledPending(f, k) || wrote, nil
			}
			changes = real
			pendingItems = withOtherContexts(f.Approved, ctx, items)
		}
		if len(changes) == 0 && f.Approved.Has(k) && !foreign {
			return dropSettledPending(f, k), nil
		}
		switch {
		case foreign:
			// Another package or image under a name someone approved: the
			// same tools are no reason to trust another publisher's code.
			lock = fmt.Sprintf("%q now runs %s, not %s, which is what was approved under this name. Run `mcpcage diff %s`.",
				p.cfg.Name, describeLaunch(p.cfg.Launch), describeLaunch(f.Approved.Launch), p.cfg.Name)
			reason = fmt.Sprintf("%q runs %s instead of the approved %s", p.cfg.Name, describeLaunch(p.cfg.Launch), describeLaunch(f.Approved.Launch))
		case f.Approved.Has(k):
			lock = p.driftMessage(k, changes, items)
			reason = fmt.Sprintf("the %s of %q changed since they were approved (rug-pull protection)", definitions(k), p.cfg.Name)
		default:
			lock = fmt.Sprintf("%s of %q are not approved yet (--strict). Run `mcpcage diff %s`, then `mcpcage approve %s`.",
				definitions(k), p.cfg.Name, p.cfg.Name, p.cfg.Name)
			reason = fmt.Sprintf("the %s of %q are not approved yet (--strict)", definitions(k), p.cfg.Name)
		}
		if f.Pending.Has(k) {
			if same, err := Compare(k, f.Pending.List(k), pendingItems); err == nil && len(same) == 0 && launchEqual(f.Pending.Launch, p.cfg.Launch) {
				return false, nil
			}
		}
		if f.Pending == nil {
			f.Pending = &Snapshot{}
		}
		f.Pending.Set(k, pendingItems)
		if k == Tools && f.Approved != nil && len(f.Approved.Contexts) > 0 && ctx != "" {
			f.Pending.Contexts = copyContexts(f.Approved.Contexts)
			recordContext(f.Pending, ctx, items)
			seen := ctx
			f.Pending.SeenWith = &seen
		}
		f.Pending.Launch = p.cfg.Launch
		f.Pending.Time = now
		return true, nil
	})
	if err != nil {
		return err
	}
	p.event(k, pinned, lock != "", changes, len(items))
	ix, err := NewIndex(k, approved)
	if err != nil {
		return err
	}
	st := &kindState{checked: true, lock: lock, reason: reason, approved: ix, drifted: map[string]bool{}, seen: items, fi: fi}
	for _, c := range changes {
		if c.Op != Removed {
			st.drifted[c.Key] = true
		}
	}
	if lock != "" && (len(changes) == 0 || foreign) {
		// --strict first use, or another server's code: everything is new.
		for _, it := range items {
			if key, err := ItemKey(k, it); err == nil {
				st.drifted[key] = true
			}
		}
	}
	p.mu.Lock()
	if lock == "" && fi != nil {
		p.cache[k] = &cachedIndex{fi: fi, ix: ix}
	} else {
		delete(p.cache, k)
	}
	p.mu.Unlock()
	p.setState(k, st)
	return nil
}

// dropSettledPending removes the pending list of kind k when it holds what is
// now approved anyway, so that diff never shows a pending set with no change.
func dropSettledPending(f *File, k Kind) bool {
	if !f.Pending.Has(k) {
		return false
	}
	if ch, err := Compare(k, f.Approved.List(k), f.Pending.List(k)); err != nil || len(ch) > 0 {
		return false
	}
	f.Pending.Set(k, nil)
	return true
}

// cachedIndex is an approved list and the pin file it was read from.
type cachedIndex struct {
	fi os.FileInfo
	ix *Index
}

func (p *Policy) setState(k Kind, st *kindState) {
	p.mu.Lock()
	p.state[k] = st
	p.mu.Unlock()
}

func definitions(k Kind) string {
	if k == Instructions {
		return "instructions"
	}
	return k.Noun() + " definitions"
}

// driftMessage is the text after "mcpcage blocked METHOD: ", as the brief
// shows it.
func (p *Policy) driftMessage(k Kind, changes []Change, list []jsontext.Value) string {
	var b strings.Builder
	if k == Instructions {
		fmt.Fprintf(&b, "the instructions of %q changed since they were approved (rug-pull protection).", p.cfg.Name)
	} else {
		fmt.Fprintf(&b, "%s of %q changed since they were approved (rug-pull protection).", definitions(k), p.cfg.Name)
	}
	if p.cfg.HighFindings != nil {
		n := 0
		for _, c := range changes {
			if c.New != nil {
				n += p.cfg.HighFindings(k, c.New, list)
			}
		}
		switch {
		case n == 1:
			b.WriteString(" 1 high-severity sign of hidden instructions.")
		case n > 1:
			fmt.Fprintf(&b, " %d high-severity signs of hidden instructions.", n)
		}
	}
	fmt.Fprintf(&b, " Run `mcpcage diff %s`.", p.cfg.Name)
	return b.String()
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

// describeLaunch names what a launch runs, for a lock message.
func describeLaunch(l launch.Launch) string {
	switch l.Kind {
	case "npx":
		return fmt.Sprintf("the npm package %s", l.Package)
	case "uvx":
		return fmt.Sprintf("the PyPI package %s", l.Package)
	case "image":
		return fmt.Sprintf("the image %s", launch.ImageRepository(l.Image))
	}
	return l.Identity()
}

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

func launchEqual(a, b launch.Launch) bool {
	x, _ := json.Marshal(a, json.Deterministic(true))
	y, _ := json.Marshal(b, json.Deterministic(true))
	return bytes.Equal(x, y)
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

// paramStrings returns the string members of a request's params.
func paramStrings(params []byte) map[string]string {
	out := map[string]string{}
	if len(params) == 0 {
		return out
	}
	var m map[string]jsontext.Value
	if json.Unmarshal(params, &m) != nil {
		return out
	}
	for k, v := range m {
		var s string
		if v.Kind() == '"' && json.Unmarshal(v, &s) == nil {
			out[k] = s
		}
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

// event tells Config.Event what check did.
func (p *Policy) event(k Kind, pinned, locked bool, changes []Change, items int) {
	if p.cfg.Event == nil || !pinned && !locked {
		return
	}
	f := map[string]any{"server": p.cfg.Name, "what": k.Noun(), "items": items}
	if pinned {
		p.cfg.Event("pin", f)
		return
	}
	var ch []string
	for _, c := range changes {
		if len(ch) == 100 {
			break
		}
		ch = append(ch, c.Op.String()+" "+c.Key)
	}
	f["changes"], f["blocked"] = ch, true
	p.cfg.Event("drift", f)
}
