package guard

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpcage/mcpcage/internal/audit"
	"github.com/mcpcage/mcpcage/internal/jsonrpc"
	"github.com/mcpcage/mcpcage/internal/launch"
	"github.com/mcpcage/mcpcage/internal/pin"
	"github.com/mcpcage/mcpcage/internal/proxy"
	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// auditDefinitionHash is the "def" of a call record: SHA-256 of the pin
// canonical form of the tool's definition, so it matches what was pinned.
func auditDefinitionHash(def []byte) string {
	c, err := pin.CanonicalItem(pin.Tools, def)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:])
}

// auditPolicy writes the session's audit records. It never changes a
// message: Inspect forwards everything, and the records come from Observe,
// which sees each message's final outcome before it is delivered. A
// forwarded call's call_start record is handed to the log as the request
// goes to the server, so its fsync runs while the server works, and it is
// on disk before the response reaches the client: the response is held
// (Event.Hold) until that commit is done, and replaced with an error if it
// failed. The call record with the outcome follows: held for too when the
// result had findings or mcpcage answered in the server's place; otherwise
// written with the next commit (audit.Log.AddLazy), which a crash can lose.
type auditPolicy struct {
	log     *audit.Log
	name    string
	launch  launch.Launch
	version string
	stderr  io.Writer
	tally   *tally // the scanner's findings, by response id
	tasks   *tasks // the tasks calls started
	flood   *flood // bounds the refused records a server can cause
	stopped func() (string, int)
	session string
	start   time.Time

	startMu sync.Mutex
	started bool // under startMu

	mu      sync.Mutex
	sess    *proxy.Session
	ended   bool
	pending map[string]pendingCall // by request id Key()
	defs    map[string]string      // tool name -> definition hash, from the last tools/list
	calls   int                    // calls seen; the last one's number
	failed  bool
}

type pendingCall struct {
	id     string // the request id's Key()
	n      int    // the call's number in the session, in call_start and call
	start  time.Time
	tool   string
	args   string
	def    string
	result []byte // the server's result, before any policy replaced it
	// started is the call_start record, added when the request was
	// forwarded: its fsync runs while the server works on the call.
	started *audit.Pending
}

// callStartRecord is the fields of a "call_start" record, sorted as in
// callRecord.
type callStartRecord struct {
	Args    string `json:"args"`
	Def     string `json:"def,omitempty"`
	N       int    `json:"n"`
	Server  string `json:"server"`
	Session string `json:"session"`
	Tool    string `json:"tool"`
}

// SetupError is a chain that could not be built, with what to do about it.
type SetupError struct {
	Err error
	Fix string
}

func (e *SetupError) Error() string { return e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// Hint says what to do.
func (e *SetupError) Hint() string { return e.Fix }

func openAudit(cfg Config) (*auditPolicy, error) {
	opts, err := audit.DefaultOptions()
	if err != nil {
		return nil, &SetupError{Err: fmt.Errorf("cannot open the audit log: %w", err), Fix: "make $MCPCAGE_HOME/audit (default ~/.mcpcage/audit) a folder mcpcage can write"}
	}
	if cfg.AuditAnchor != "" {
		opts.Anchor = cfg.AuditAnchor
	}
	if cfg.AuditAnchorCommand != "" {
		opts.AnchorCommand = cfg.AuditAnchorCommand
	}
	if cfg.auditOptions != nil {
		cfg.auditOptions(&opts)
	}
	errOut := cfg.Stderr
	opts.Warn = func(err error) { untrusted.Fprintf(errOut, "mcpcage: audit: warning: %v\n", err) }
	l, err := audit.Open(opts)
	if err != nil {
		return nil, &SetupError{Err: fmt.Errorf("cannot open the audit log: %w", err), Fix: fmt.Sprintf("check that %s is writable", opts.Dir)}
	}
	// Refuse to start on a log whose end cannot be read: records written
	// after it could not be chained.
	if _, err := l.Head(); err != nil {
		l.Close()
		return nil, &SetupError{Err: err, Fix: "run `mcpcage audit verify` to see what is wrong with the audit log"}
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	return &auditPolicy{
		log: l, stopped: cfg.Stopped, name: cfg.Name, launch: cfg.Launch, version: cfg.Version, stderr: errOut,
		tally: newTally(), session: hex.EncodeToString(id[:]), start: time.Now(),
		pending: map[string]pendingCall{}, defs: map[string]string{},
	}, nil
}

// event records another concern's event (pin, drift) in this session.
func (p *auditPolicy) event(kind string, fields map[string]any) {
	p.ensureStarted("")
	f := map[string]any{"session": p.session}
	for k, v := range fields {
		// Names in events come from the server; a huge one must not push
		// the record past the line limit and so out of the log.
		switch v := v.(type) {
		case string:
			f[k] = clip(v, 256)
		case []string:
			out := make([]string, 0, len(v))
			for i, s := range v {
				if i == 100 {
					break
				}
				out = append(out, clip(s, 256))
			}
			f[k] = out
		default:
			f[k] = v
		}
	}
	p.append(kind, f)
}

// Inspect lets everything through while the log can be written. Once a
// record could not be written, tool calls are refused: a call that cannot
// be recorded does not reach the server.
func (p *auditPolicy) Inspect(ctx context.Context, s *proxy.Session, ev *proxy.Event) proxy.Verdict {
	m := ev.Msg
	if ev.Dir != proxy.ClientToServer || m.Kind != jsonrpc.KindRequest || m.Method != "tools/call" {
		return proxy.Verdict{Action: proxy.Forward}
	}
	p.mu.Lock()
	failed := p.failed
	p.mu.Unlock()
	if !failed {
		return proxy.Verdict{Action: proxy.Forward}
	}
	return proxy.Verdict{Action: proxy.Reply, Message: jsonrpc.NewErrorResponse(m.ID, jsonrpc.CodeBlocked,
		"mcpcage blocked tools/call: the audit log cannot be written, and no call goes unrecorded. Run `mcpcage audit verify`.", nil)}
}

// append writes a record; a failure is reported once on stderr (the
// message flow cannot be stopped from Observe).
func (p *auditPolicy) append(kind string, fields map[string]any) {
	if _, err := p.log.Append(kind, fields); err != nil {
		p.appendFailed(err)
	}
}

// appendFailed refuses every later tools/call and says so once.
func (p *auditPolicy) appendFailed(err error) {
	p.mu.Lock()
	first := !p.failed
	p.failed = true
	p.mu.Unlock()
	if first {
		untrusted.Fprintf(p.stderr, "mcpcage: audit: error: %v\n", err)
	}
}

// setLaunch is what runs, once known: session_start, written with the
// first record, carries it.
func (p *auditPolicy) setLaunch(l launch.Launch) {
	p.startMu.Lock()
	p.launch = l
	p.startMu.Unlock()
}

func (p *auditPolicy) SessionStart(ctx context.Context, s *proxy.Session) {
	p.mu.Lock()
	p.sess = s
	p.mu.Unlock()
}

// ensureStarted writes session_start before the first other record; it
// waits for the initialize response when it can, to carry the protocol
// version.
func (p *auditPolicy) ensureStarted(protocol string) {
	// Held while writing, so no record of the session comes before it.
	p.startMu.Lock()
	defer p.startMu.Unlock()
	if p.started {
		return
	}
	p.started = true
	p.mu.Lock()
	if protocol == "" && p.sess != nil {
		protocol = p.sess.ProtocolVersion()
	}
	p.mu.Unlock()
	l := p.launch
	argv, _ := json.Marshal(l.Argv)
	launchFields := map[string]any{"kind": l.Kind, "argc": len(l.Argv),
		// The server's argv may hold tokens: only a keyed fingerprint.
		"argv_fp": p.log.Fingerprint(p.name, "(argv)", argv)}
	for k, v := range map[string]string{"package": l.Package, "version": l.Version, "image": l.Image, "image_digest": l.ImageDigest, "url": l.URL} {
		if v != "" {
			launchFields[k] = v
		}
	}
	p.append("session_start", map[string]any{
		"session": p.session, "server": p.name, "launch": launchFields,
		"mcpcage": p.version, "protocol": protocol, "pid": os.Getpid(),
	})
}

func (p *auditPolicy) Observe(ctx context.Context, s *proxy.Session, ev *proxy.Event, v proxy.Verdict) {
	m := ev.Msg
	switch {
	case ev.Dir == proxy.ClientToServer && m.Kind == jsonrpc.KindRequest && m.Method == "tools/call":
		p.observeCall(ev, v)
	case ev.Dir == proxy.ServerToClient && m.Kind == jsonrpc.KindResponse:
		final := m
		if v.Action == proxy.Replace {
			if r, err := jsonrpc.Parse(v.Message); err == nil {
				final = r
			}
		}
		switch ev.Method {
		case "initialize":
			p.ensureStarted(protocolOf(m.Result, s))
		case "tools/list":
			if v.Action == proxy.Forward {
				p.learnDefinitions(m.Result)
			}
		case "tools/call":
			p.mu.Lock()
			c, ok := p.pending[m.ID.Key()]
			delete(p.pending, m.ID.Key())
			p.mu.Unlock()
			if ok && m.Error == nil {
				p.tasks.started(m.Result, taskCall{tool: c.tool, n: c.n, args: c.args})
			}
			if ok {
				c.result = m.Result // findings are counted on what the server sent
				if m.Error != nil {
					c.result = m.Raw
				}
				var outcome *audit.Pending
				switch v.Action {
				case proxy.Replace: // a policy withheld the server's answer
					outcome = p.addCall(c, final, "mcpcage", false)
				case proxy.Drop:
					outcome = p.addCall(c, nil, "mcpcage", false)
				default:
					outcome = p.addCall(c, final, "server", true)
				}
				// The answer waits, off the server's pump, for the call's
				// call_start (added when the request went to the server, so
				// its fsync ran while the server worked) and, when it was not
				// plain, for its outcome too.
				holds := []*audit.Pending{c.started}
				if outcome != nil {
					holds = append(holds, outcome)
				}
				if durable(holds) {
					return // nothing to wait for: delivered by the pump at once
				}
				p.holdFor(ev, holds)
			}
			return
		case "tasks/result":
			p.holdFor(ev, []*audit.Pending{p.taskResult(ev, final, v)})
		}
	}
}

// holdFor makes the answer of ev wait, off the server's pump, until recs
// are on disk; if one cannot be written, the client gets an error instead.
func (p *auditPolicy) holdFor(ev *proxy.Event, recs []*audit.Pending) {
	if durable(recs) {
		return // nothing to wait for: delivered by the pump at once
	}
	id, method := ev.Msg.ID, ev.Method
	ev.Hold(func() []byte {
		for _, rec := range recs {
			if _, err := rec.Wait(); err != nil {
				p.appendFailed(err)
				return jsonrpc.NewErrorResponse(id, jsonrpc.CodeBlocked,
					"mcpcage withheld the answer to "+method+": its audit record could not be written, and no answer goes unrecorded. Run `mcpcage audit verify`.", nil)
			}
		}
		return nil
	})
}

// taskRecord is the fields of a "task_result" record: the outcome of a
// task's result (tasks/result), with the number, tool and argument
// fingerprint of the tools/call that started the task (n 0 when that call
// is not known to this session).
type taskRecord struct {
	Args     string `json:"args,omitempty"`
	By       string `json:"by"`
	Code     *int   `json:"code,omitempty"`
	Findings int    `json:"findings"`
	N        int    `json:"n"`
	Outcome  string `json:"outcome"`
	Server   string `json:"server"`
	Session  string `json:"session"`
	Task     string `json:"task"`
	Tool     string `json:"tool,omitempty"`
}

// taskResult records the answer to a tasks/result: its findings come from
// the scanner's tally, like a call's.
func (p *auditPolicy) taskResult(ev *proxy.Event, final *jsonrpc.Message, v proxy.Verdict) *audit.Pending {
	p.ensureStarted("")
	m := ev.Msg
	c, _ := p.tasks.get(ev.Target)
	f := taskRecord{Session: p.session, Server: p.name, Task: clip(ev.Target, 128), N: c.n, Tool: c.tool, Args: c.args, By: "server"}
	if v.Action == proxy.Replace || v.Action == proxy.Drop {
		f.By = "mcpcage"
	}
	if v.Action == proxy.Drop {
		f.Outcome = "dropped"
	} else {
		f.Outcome, f.Code = outcomeOf(final)
	}
	raw := m.Result
	if m.Error != nil {
		raw = m.Raw
	}
	f.Findings = p.tally.findings(m.ID.Key(), raw)
	return p.log.Add("task_result", f)
}

// durable says whether every record of recs is on disk already.
func durable(recs []*audit.Pending) bool {
	for _, r := range recs {
		select {
		case <-r.Done():
			if _, err := r.Wait(); err != nil {
				return false // the hold reports it
			}
		default:
			return false
		}
	}
	return true
}

// ObserveRefusal records what the proxy turned away on its own (malformed or
// oversized lines, batches, unknown versions, answers to nothing). The reason
// names a position or a member name, never a value; the line itself is not
// kept.
func (p *auditPolicy) ObserveRefusal(ctx context.Context, s *proxy.Session, r proxy.Refusal) {
	if r.Dir == proxy.ServerToClient && p.flood != nil && !p.flood.pass("refused lines", nil) {
		return // the server's flood of bad lines: summed up (reports_held)
	}
	p.ensureStarted("")
	from := "client"
	if r.Dir == proxy.ServerToClient {
		from = "server"
	}
	fields := map[string]any{"session": p.session, "server": p.name, "from": from,
		"reason": clip(r.Reason, 200), "bytes": r.Size, "answered": r.Answer != nil}
	if r.Method != "" {
		fields["method"] = clip(r.Method, 256)
	}
	p.append("refused", fields)
}

func protocolOf(result []byte, s *proxy.Session) string {
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(result, &r, json.RejectUnknownMembers(false)) == nil && r.ProtocolVersion != "" && len(r.ProtocolVersion) <= 64 {
		return r.ProtocolVersion
	}
	return s.ProtocolVersion()
}

func (p *auditPolicy) observeCall(ev *proxy.Event, v proxy.Verdict) {
	// The name (the parser found it) and the arguments, by their exact
	// member names; the arguments are not copied (the fingerprint reads
	// them once).
	var params struct {
		Name      string
		Arguments []byte
	}
	params.Name, _ = jsonrpc.String(ev.Msg.Name)
	jsonrpc.Members(ev.Msg.Params, func(name string, value []byte) bool {
		if name == "arguments" {
			params.Arguments = value
			return false
		}
		return true
	})
	tool := clip(params.Name, 256)
	p.mu.Lock()
	def := p.defs[params.Name]
	p.mu.Unlock()
	p.mu.Lock()
	p.calls++
	n := p.calls
	p.mu.Unlock()
	c := pendingCall{id: ev.Msg.ID.Key(), n: n, start: time.Now(), tool: tool, def: def,
		args: p.log.Fingerprint(p.name, params.Name, params.Arguments)}
	switch v.Action {
	case proxy.Forward, proxy.Replace:
		p.ensureStarted("")
		c.started = p.log.Add("call_start", callStartRecord{
			Args: c.args, Def: c.def, N: c.n, Server: p.name, Session: p.session, Tool: c.tool})
		p.mu.Lock()
		p.pending[ev.Msg.ID.Key()] = c
		p.mu.Unlock()
	case proxy.Reply:
		reply, err := jsonrpc.Parse(v.Message)
		if err != nil {
			reply = &jsonrpc.Message{Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError}}
		}
		p.writeCall(c, reply, "mcpcage")
	case proxy.Drop:
		p.writeCall(c, nil, "mcpcage")
	}
}

// learnDefinitions keeps each listed tool's definition hash, so a call
// record says which definition the model saw when it made the call.
func (p *auditPolicy) learnDefinitions(result []byte) {
	var r struct {
		Tools []jsontext.Value `json:"tools"`
	}
	if json.Unmarshal(result, &r, json.RejectUnknownMembers(false)) != nil {
		return
	}
	p.learnTools(r.Tools)
}

// decided hears what the pin policy answered in the server's place.
func (p *auditPolicy) decided(d pin.Decision) {
	if d.Blocked != 0 {
		p.blocked(d.Method, d.Blocked)
	}
	if d.Tools != nil {
		p.learnTools(d.Tools)
	}
}

func (p *auditPolicy) learnTools(tools []jsontext.Value) {
	defs := map[string]string{}
	for _, t := range tools {
		var n struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(t, &n, json.RejectUnknownMembers(false)) == nil {
			defs[n.Name] = auditDefinitionHash(t)
		}
	}
	p.mu.Lock()
	p.defs = defs
	p.mu.Unlock()
}

// writeCall records one tools/call with its outcome: "ok", "is_error" (the
// tool reported a failure), "error" (a JSON-RPC error, with its code),
// "dropped" or "unanswered". by says who answered: the server or mcpcage.
func (p *auditPolicy) writeCall(c pendingCall, final *jsonrpc.Message, by string) {
	if _, err := p.addCall(c, final, by, false).Wait(); err != nil {
		p.appendFailed(err)
	}
}

// callRecord is the fields of a "call" record. Its members are in the order
// encoding/json gives a map's keys (sorted), so the record reads as it did
// when it was built as a map, without a map and its sort on every call.
type callRecord struct {
	Args     string `json:"args"`
	By       string `json:"by"`
	Code     *int   `json:"code,omitempty"`
	Def      string `json:"def,omitempty"`
	DurUS    int64  `json:"dur_us"`
	Findings *int   `json:"findings,omitempty"`
	N        int    `json:"n"`
	Outcome  string `json:"outcome"`
	Server   string `json:"server"`
	Session  string `json:"session"`
	Tool     string `json:"tool"`
}

// addCall hands the record of a call to the log and returns at once. With
// lazy set, a plain outcome (no findings) is added with AddLazy: it rides
// the next commit, nothing waits for it, and addCall returns nil; a commit
// that fails to write it refuses later calls.
func (p *auditPolicy) addCall(c pendingCall, final *jsonrpc.Message, by string, lazy bool) *audit.Pending {
	p.ensureStarted("")
	f := callRecord{
		Session: p.session, Server: p.name, Tool: c.tool, Args: c.args, N: c.n,
		By: by, DurUS: time.Since(c.start).Microseconds(), Def: c.def,
	}
	switch {
	case final == nil && by == "mcpcage":
		f.Outcome = "dropped"
	case final == nil:
		f.Outcome = "unanswered"
	default:
		f.Outcome, f.Code = outcomeOf(final)
	}
	if c.result != nil {
		n := p.tally.findings(c.id, c.result)
		f.Findings = &n
		lazy = lazy && n == 0
	}
	if lazy {
		p.log.AddLazy("call", f, p.appendFailed)
		return nil
	}
	return p.log.Add("call", f)
}

// outcomeOf is what an answer to a call says: "error" with its code, or
// "ok" or "is_error" (the tool reported a failure).
func outcomeOf(final *jsonrpc.Message) (string, *int) {
	if final.Error != nil {
		code := final.Error.Code
		return "error", &code
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	_ = json.Unmarshal(final.Result, &r, json.RejectUnknownMembers(false))
	if r.IsError {
		return "is_error", nil
	}
	return "ok", nil
}

// blocked records a response mcpcage replaced with an error (a tools/list
// refused on drift). The error text is not kept: only the method and code.
func (p *auditPolicy) blocked(method string, code int) {
	p.ensureStarted("")
	p.append("blocked", map[string]any{"session": p.session, "server": p.name, "method": clip(method, 128), "code": code})
}

func (p *auditPolicy) SessionEnd(ctx context.Context, s *proxy.Session, exitCode int) {
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		return
	}
	p.ended = true
	pending := p.pending
	p.pending = map[string]pendingCall{}
	p.mu.Unlock()
	for _, c := range pending {
		p.writeCall(c, nil, "server")
	}
	p.ensureStarted(s.ProtocolVersion())
	p.mu.Lock()
	calls := p.calls
	p.mu.Unlock()
	end := map[string]any{
		"session": p.session, "server": p.name, "exit": exitCode, "calls": calls,
		"dur_ms": time.Since(p.start).Milliseconds(),
	}
	if p.stopped != nil {
		if sig, num := p.stopped(); sig != "" {
			// The server's status is then mcpcage's kill, not its own end.
			end["stopped_by"] = sig
			end["end"] = "stopped by the user (mcpcage received " + sig + ")"
			end["server_exit"] = exitCode
			end["exit"] = 128 + num
		}
	}
	p.append("session_end", end)
	if err := p.log.Close(); err != nil {
		untrusted.Fprintf(p.stderr, "mcpcage: audit: error: %v\n", err)
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
