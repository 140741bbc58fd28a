package pin

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpcage/mcpcage/internal/launch"
)

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

func launchEqual(a, b launch.Launch) bool {
	x, _ := json.Marshal(a, json.Deterministic(true))
	y, _ := json.Marshal(b, json.Deterministic(true))
	return bytes.Equal(x, y)
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
