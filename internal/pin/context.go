package pin

import (
	"slices"
	"sort"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Capability-dependent lists
//
// Servers offer some tools only to clients that can do something for them:
// server-everything lists 13 tools to a bare client and up to 16 to one that
// offers sampling, elicitation and roots. Comparing every session against one
// approved list would lock the second client on a change nobody made. So the
// tools a server listed are recorded per context, the set of capabilities
// the client declared at initialize (ContextKey), and a session's list is
// compared against what was approved with these rules:
//
//   - a changed definition locks, whatever the context (rug-pull protection);
//   - an approved tool missing from the list is no change when it was never
//     listed in this context (it is offered to other clients); missing from a
//     context that listed it before, it is a change, as always;
//   - a tool approved in no context, listed in a context never seen before,
//     follows the first-use rules: pinned silently unless the session is
//     --strict or the scanner finds signs at medium severity or above in it,
//     which lock it until `mcpcage approve`;
//   - a tool approved in no context, listed in a context seen before, locks:
//     the server added it.
//
// Pin files written before contexts were recorded have none: their changes
// lock as they always did, and the first session that matches records its
// context.

// ContextKey names a client's capabilities from the params of its initialize
// request: the sorted names of the members of "capabilities" that change what
// a server may offer, joined by "+", or "none".
func ContextKey(initializeParams []byte) string {
	var p struct {
		Capabilities map[string]jsontext.Value `json:"capabilities"`
	}
	if json.Unmarshal(initializeParams, &p) != nil {
		return "none"
	}
	var names []string
	for n, v := range p.Capabilities {
		// "sampling": null is not offering it.
		if v.Kind() == 'n' || !contextCapability(n) {
			continue
		}
		names = append(names, n)
	}
	if len(names) == 0 {
		return "none"
	}
	sort.Strings(names)
	return strings.Join(names, "+")
}

// contextCapability keeps the capability names that servers act on, in a
// printable spelling: anything else a client declares (experimental
// extensions) neither widens nor splits the contexts.
func contextCapability(n string) bool {
	switch n {
	case "roots", "sampling", "elicitation", "tasks":
		return true
	}
	return false
}

// names are the keys of a list's items, in order.
func names(k Kind, items []jsontext.Value) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		if key, err := ItemKey(k, it); err == nil {
			out = append(out, key)
		}
	}
	return out
}

// explain splits the changes of a tools list seen in context ctx into those
// the context explains, the tools that follow the first-use rules (fresh),
// and the real changes, per the rules above. flagged says whether the scanner
// finds signs at medium or above in a tool.
func explain(approved *Snapshot, ctx string, changes []Change, strict bool, flagged func(item []byte) bool) (fresh []jsontext.Value, real []Change) {
	seen := approved.Contexts
	if len(seen) == 0 || ctx == "" {
		return nil, changes
	}
	listed, known := seen[ctx]
	for _, c := range changes {
		switch {
		case c.Op == Removed && !slices.Contains(listed, c.Key):
			// Offered to clients of other capabilities only.
		case c.Op == Added && !known && !strict && (flagged == nil || !flagged(c.New)):
			fresh = append(fresh, c.New)
		default:
			real = append(real, c)
		}
	}
	return fresh, real
}

// recordContext notes the tools listed in context ctx.
func recordContext(s *Snapshot, ctx string, items []jsontext.Value) bool {
	if ctx == "" {
		return false
	}
	n := names(Tools, items)
	if old, ok := s.Contexts[ctx]; ok && slices.Equal(old, n) {
		return false
	}
	if s.Contexts == nil {
		s.Contexts = map[string][]string{}
	}
	s.Contexts[ctx] = n
	return true
}

// withOtherContexts is the list to approve for a session that locked: what it
// saw, plus the approved tools it was not offered because of its
// capabilities, so that approving it does not take them from other clients.
func withOtherContexts(approved *Snapshot, ctx string, items []jsontext.Value) []jsontext.Value {
	if len(approved.Contexts) == 0 || ctx == "" {
		return items
	}
	have := map[string]bool{}
	for _, n := range names(Tools, items) {
		have[n] = true
	}
	out := append([]jsontext.Value(nil), items...)
	listed := approved.Contexts[ctx]
	for _, it := range approved.Tools {
		key, err := ItemKey(Tools, it)
		if err != nil || have[key] || slices.Contains(listed, key) {
			continue
		}
		out = append(out, it)
	}
	return out
}

// copyContexts returns a deep copy, for a pending set.
func copyContexts(m map[string][]string) map[string][]string {
	if m == nil {
		return nil
	}
	out := make(map[string][]string, len(m))
	for k, v := range m {
		out[k] = append([]string(nil), v...)
	}
	return out
}
