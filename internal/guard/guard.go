// Package guard builds the policy chain of one `mcpcage run` session: the
// policies the proxy consults, in order, for every message in either
// direction. New is the only place the chain is put together and the only
// place its order is written down:
//
//  1. silence: answers the client when the server says nothing at all
//     within Config.StartTimeout (a server that needs the network).
//  2. scanner (results.go): scans every message the server sends, whatever
//     its method (answers, errors, requests, notifications, a task's
//     result), every string at any depth but the members MCP defines as
//     binary, with internal/scan; reports on stderr and in the audit log
//     (bounded per kind of message: flood.go); withholds under
//     --block-results. It comes before the pins so that nothing they
//     rewrite (an initialize answer without its instructions) goes
//     unscanned.
//  3. pins (internal/pin): hides filtered tools, pins definitions on first
//     use and locks the session when they drift; answers lists itself (an
//     error the server answered a list with passes the scanner first).
//  4. argument secrets (secrets.go): refuses a tools/call whose arguments
//     carry a private key, a token or another caged server's credential.
//  5. audit (internal/audit): records calls, a task's result onto the call
//     that started it, blocks, refusals and the others' events in the
//     hash-chained log; never changes a message.
//
// The first policy whose verdict is not Forward ends the walk for that
// message; observers (audit) still see the final outcome. Policies do not
// reach each other through globals or late-bound fields: what one needs of
// another is handed in by New as a value or a function (audit's event
// function to pins, pins' decisions to audit, the scanner's per-session
// tally of findings to audit).
//
// Where things go:
//   - A policy: a type in this package with Inspect (and Observe, Lifecycle
//     or ObserveRefusal as it needs), built in New and placed in the list New
//     returns at the point of the run order where it belongs.
//   - A scanner input: nothing to add; every message from the server is
//     scanned whole. A member known to be binary is left out in
//     internal/scan (binaryMember), nowhere else.
//   - An audit record kind: a method of auditPolicy (audit.go) that calls
//     p.append(kind, fields) with names and counts, never values, and a case
//     in cmd/mcpcage's formatRecord if `audit show` should say more than
//     key=value.
package guard

import (
	"encoding/json"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpcage/mcpcage/internal/audit"
	"github.com/mcpcage/mcpcage/internal/launch"
	"github.com/mcpcage/mcpcage/internal/pin"
	"github.com/mcpcage/mcpcage/internal/proxy"
	"github.com/mcpcage/mcpcage/internal/scan"
	"github.com/mcpcage/mcpcage/internal/secrets"
)

// Config is everything a session's chain depends on; cmd/mcpcage fills it
// from flags.
type Config struct {
	Name    string        // the server's identity: pins, audit records
	Launch  launch.Launch // what runs in the cage
	Home    string        // $MCPCAGE_HOME, resolved
	Version string        // mcpcage's version, for session_start
	Stderr  io.Writer     // the person's view: findings, warnings

	// StartTimeout bounds the wait for the server's first message; 0
	// waits for ever. AllowNet only shapes the hint when it fires.
	StartTimeout time.Duration
	AllowNet     bool

	Strict bool       // --strict: the first list needs an approval too
	Filter pin.Filter // --tools, --deny-tools, --read-only-tools

	// BlockResults withholds what the server sends with findings of this
	// severity or higher; 0 reports and passes everything on.
	BlockResults scan.Severity

	Env          []string      // the server's --env names
	AllowSecrets secrets.Allow // --allow-secret

	AuditAnchor        string // --audit-anchor; "" for $MCPCAGE_AUDIT_ANCHOR
	AuditAnchorCommand string // --audit-anchor-cmd

	// Stopped names the signal that ended the session ("SIGINT") and its
	// number, or "" while none did; nil for a session no signal ends.
	Stopped func() (name string, number int)

	// OtherTools returns the approved tools of the other caged servers, so
	// that orders about them count as findings; nil for none.
	OtherTools func() []json.RawMessage

	// auditOptions, for tests only, adjusts the audit log's options.
	auditOptions func(*audit.Options)
}

// Guard is one session's guard from before its server runs: Open opens the
// audit log, so a session whose records cannot be written never starts its
// server, and what the cage reports while it starts (its egress gateway's
// events) goes straight into that log. Chain then gives the proxy the
// policies.
type Guard struct {
	cfg Config
	rec *auditPolicy

	mu     sync.Mutex
	egress *Egress
}

// Open opens the session's audit log; cfg.Launch may still be empty (see
// Launched).
func Open(cfg Config) (*Guard, error) {
	rec, err := openAudit(cfg)
	if err != nil {
		return nil, err
	}
	// The scanner's rules are compiled on first use, which takes about a
	// second of CPU on a loaded machine: do it while the server starts,
	// not in the path of the first message scanned (a tools/call result
	// when the pins are known).
	go scan.Rules()
	rec.tally, rec.tasks = newTally(), newTasks()
	rec.flood = newFlood(cfg.Name, cfg.Stderr, rec.event)
	return &Guard{cfg: cfg, rec: rec}, nil
}

// Egress is the sink of the session's egress gateway: each event is
// recorded in the open log as it comes (docs/audit.md, egress).
func (g *Guard) Egress() *Egress {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.egress == nil {
		g.egress = NewEgress(g.cfg.Name, g.cfg.Stderr, g.rec.event)
	}
	return g.egress
}

// Launched tells the guard what runs in the cage, once the install phase
// knows it and before the server starts: session_start and the pins carry
// it.
func (g *Guard) Launched(l launch.Launch) {
	g.mu.Lock()
	g.cfg.Launch = l
	g.mu.Unlock()
	g.rec.setLaunch(l)
}

// Config is the guard's configuration, with the launch once known.
func (g *Guard) Config() Config {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cfg
}

// Abort closes the log of a session whose server never started.
func (g *Guard) Abort() { _ = g.rec.log.Close() }

// New opens the guard of a session whose launch is known and returns its
// chain (tests, and proxies of a plain process).
func New(cfg Config) ([]proxy.Policy, error) {
	g, err := Open(cfg)
	if err != nil {
		return nil, err
	}
	return g.Chain()
}

// Chain builds the chain of the session, in run order.
func (g *Guard) Chain() ([]proxy.Policy, error) {
	g.mu.Lock()
	cfg, egress := g.cfg, g.egress
	g.mu.Unlock()
	rec := g.rec
	sc := &scanner{name: cfg.Name, stderr: cfg.Stderr, block: cfg.BlockResults, tally: rec.tally, tasks: rec.tasks, flood: rec.flood, event: rec.event}
	pins := pin.New(pin.Config{
		Store:      PinStore(cfg.Home),
		Name:       cfg.Name,
		Launch:     cfg.Launch,
		Strict:     cfg.Strict,
		Filter:     cfg.Filter,
		Event:      rec.event,
		Decided:    rec.decided,
		RelayError: sc.relayError,
		HighFindings: func(k pin.Kind, item []byte, list []jsontext.Value) int {
			return scan.Count(ScanItem(k, item, list, others(cfg)), scan.High)
		},
		// A tool with signs at medium or above is never trusted on first
		// use in a new client context.
		Flagged: func(k pin.Kind, item []byte, list []jsontext.Value) bool {
			return scan.Count(ScanItem(k, item, list, others(cfg)), scan.Medium) > 0
		},
	})
	argSecrets, err := NewArgSecrets(SecretsConfig{
		Name: cfg.Name, Home: cfg.Home, Env: cfg.Env, Allow: cfg.AllowSecrets, Stderr: cfg.Stderr,
		Event: rec.event,
	})
	if err != nil {
		rec.log.Close()
		return nil, err
	}
	chain := []proxy.Policy{newSilence(cfg), sc, pins, argSecrets}
	if egress != nil {
		// Its summaries are written before the session's last record.
		chain = append(chain, egress)
	}
	return append(chain, rec), nil
}

// PinStore is where the pins of every server live.
func PinStore(home string) pin.Store { return pin.Store{Dir: filepath.Join(home, "pins")} }

func others(cfg Config) []json.RawMessage {
	if cfg.OtherTools == nil {
		return nil
	}
	return cfg.OtherTools()
}
