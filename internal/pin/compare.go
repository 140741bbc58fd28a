package pin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Op says how an item differs from its pin.
type Op int

const (
	Added Op = iota + 1
	Removed
	Changed
)

func (o Op) String() string {
	switch o {
	case Added:
		return "added"
	case Removed:
		return "removed"
	}
	return "changed"
}

// Change is one item that differs from what was approved.
type Change struct {
	Kind   Kind
	Key    string // the item's name (uri for resources, uriTemplate for templates)
	Op     Op
	Old    jsontext.Value // approved item, nil when added
	New    jsontext.Value // item as the server sent it, nil when removed
	Fields []string       // top-level members that differ, for Changed
}

// ItemKey returns the identifying member of an item of kind k (its name, or
// uri, or uriTemplate). Instructions have the fixed key "instructions".
func ItemKey(k Kind, raw jsontext.Value) (string, error) {
	if k == Instructions {
		return "instructions", nil
	}
	if raw.Kind() != '{' {
		return "", fmt.Errorf("a %s is not a JSON object", k.Noun())
	}
	if key, ok := fastKey(raw, k.keyField()); ok && key != "" {
		return key, nil
	}
	dec, done := getDecoder(raw)
	defer done()
	if _, err := dec.ReadToken(); err != nil {
		return "", err
	}
	field, key, found := k.keyField(), "", false
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return "", err
		}
		if name.String() != field {
			if err := dec.SkipValue(); err != nil {
				return "", err
			}
			continue
		}
		v, err := dec.ReadToken()
		if err != nil {
			return "", err
		}
		if v.Kind() != '"' {
			return "", fmt.Errorf("a %s has a %q that is not a string", k.Noun(), field)
		}
		key, found = v.String(), true
	}
	if !found || key == "" {
		return "", fmt.Errorf("a %s has no %q", k.Noun(), field)
	}
	return key, nil
}

// index maps each item's key to its position, refusing an item listed twice:
// a server that shows two definitions under one name is not guessed about.
func index(k Kind, items []jsontext.Value) (map[string]int, error) {
	m := make(map[string]int, len(items))
	for i, it := range items {
		key, err := ItemKey(k, it)
		if err != nil {
			return nil, err
		}
		if _, dup := m[key]; dup {
			return nil, fmt.Errorf("%s %q is listed twice", k.Noun(), key)
		}
		m[key] = i
	}
	return m, nil
}

// Index is an approved list ready for comparing, built once and reused for
// every list a session compares against it.
type Index struct {
	kind  Kind
	items []jsontext.Value
	pos   map[string]int

	mu    sync.Mutex
	canon map[int][]byte // canonical forms, computed when first needed
	equiv map[int][]byte // other bytes found to be the same definition
}

// NewIndex indexes the approved items of kind k.
func NewIndex(k Kind, approved []jsontext.Value) (*Index, error) {
	pos, err := index(k, approved)
	if err != nil {
		return nil, fmt.Errorf("approved pins: %w", err)
	}
	return &Index{kind: k, items: approved, pos: pos, canon: map[int][]byte{}, equiv: map[int][]byte{}}, nil
}

// Get returns the approved item with the key, nil when there is none.
func (ix *Index) Get(key string) jsontext.Value {
	if ix == nil {
		return nil
	}
	if j, ok := ix.pos[key]; ok {
		return ix.items[j]
	}
	return nil
}

func (ix *Index) canonical(j int) ([]byte, error) {
	ix.mu.Lock()
	c, ok := ix.canon[j]
	ix.mu.Unlock()
	if ok {
		return c, nil
	}
	c, err := CanonicalItem(ix.kind, ix.items[j])
	if err != nil {
		return nil, err
	}
	ix.mu.Lock()
	ix.canon[j] = c
	ix.mu.Unlock()
	return c, nil
}

// Compare returns every difference between the approved items of kind k and
// the current ones, sorted by key. Items compare by their CanonicalItem form,
// so member order, whitespace and escapes never count, nor an empty value of
// an optional top-level member ("annotations": {}); every other member,
// empty or not, does. Identical bytes are taken as equal without
// canonicalizing.
func Compare(k Kind, approved, current []jsontext.Value) ([]Change, error) {
	ix, err := NewIndex(k, approved)
	if err != nil {
		return nil, err
	}
	return ix.Compare(current)
}

// Compare is the package-level Compare against the indexed approved items.
func (ix *Index) Compare(current []jsontext.Value) ([]Change, error) {
	k, approved, ai := ix.kind, ix.items, ix.pos
	ci, err := index(k, current)
	if err != nil {
		return nil, err
	}
	var out []Change
	for key, i := range ci {
		j, ok := ai[key]
		if !ok {
			out = append(out, Change{Kind: k, Key: key, Op: Added, New: current[i]})
			continue
		}
		if bytes.Equal(current[i], approved[j]) {
			continue
		}
		ix.mu.Lock()
		eq := bytes.Equal(current[i], ix.equiv[j])
		ix.mu.Unlock()
		if eq {
			continue // a server that re-serializes sends the same other bytes each time
		}
		oc, err := ix.canonical(j)
		if err != nil {
			return nil, fmt.Errorf("approved %s %q: %w", k.Noun(), key, err)
		}
		fields, err := changedFields(k, oc, current[i])
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", k.Noun(), key, err)
		}
		if fields != nil {
			out = append(out, Change{Kind: k, Key: key, Op: Changed, Old: approved[j], New: current[i], Fields: fields})
			continue
		}
		ix.mu.Lock()
		ix.equiv[j] = current[i]
		ix.mu.Unlock()
	}
	for key, j := range ai {
		if _, ok := ci[key]; !ok {
			out = append(out, Change{Kind: k, Key: key, Op: Removed, Old: approved[j]})
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Key < out[b].Key })
	return out, nil
}

// changedFields returns the top-level members whose canonical forms differ,
// or nil when the two items are the same definition.
func changedFields(k Kind, oc []byte, cur jsontext.Value) ([]string, error) {
	cc, err := CanonicalItem(k, cur)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(oc, cc) {
		return nil, nil
	}
	om, cm := members(oc), members(cc)
	var fields []string
	for n, v := range cm {
		if !bytes.Equal(om[n], v) {
			fields = append(fields, n)
		}
	}
	for n := range om {
		if _, ok := cm[n]; !ok {
			fields = append(fields, n)
		}
	}
	sort.Strings(fields)
	if len(fields) == 0 {
		fields = []string{""} // the values differ but are not objects (instructions)
	}
	return fields, nil
}

// members splits a canonical object into its members; anything else is one
// member named "".
func members(c []byte) map[string]jsontext.Value {
	m := map[string]jsontext.Value{}
	if len(c) == 0 || c[0] != '{' {
		m[""] = c
		return m
	}
	var obj map[string]jsontext.Value
	if err := json.Unmarshal(c, &obj); err != nil {
		m[""] = c
		return m
	}
	return obj
}

// Changes returns what is pending in f: every kind the pending snapshot holds,
// compared with what was approved (everything is Added on first use).
func Changes(f *File) ([]Change, error) {
	if f == nil || f.Pending == nil {
		return nil, nil
	}
	var all []Change
	for _, k := range Kinds {
		if !f.Pending.Has(k) {
			continue
		}
		ch, err := Compare(k, f.Approved.List(k), f.Pending.List(k))
		if err != nil {
			return nil, err
		}
		all = append(all, ch...)
	}
	return all, nil
}

// PendingHash identifies the pending set of f: what a person saw in `mcpcage
// diff` is approved only if the hash they were shown still matches. It is the
// first 16 hex digits of SHA-256 over the pending launch and, kind by kind,
// each pending item's canonical form, sorted by key.
func PendingHash(f *File) (string, error) {
	if f == nil || f.Pending == nil {
		return "", errors.New("nothing is pending")
	}
	h := sha256.New()
	l, err := json.Marshal(f.Pending.Launch, json.Deterministic(true))
	if err != nil {
		return "", err
	}
	c, err := Canonical(l)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "launch %d %s\n", len(c), c)
	for _, k := range Kinds {
		if !f.Pending.Has(k) {
			continue
		}
		items := f.Pending.List(k)
		idx, err := index(k, items)
		if err != nil {
			return "", err
		}
		keys := make([]string, 0, len(idx))
		for key := range idx {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		fmt.Fprintf(h, "kind %s %d\n", k, len(keys))
		for _, key := range keys {
			c, err := CanonicalItem(k, items[idx[key]])
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "%d %s\n", len(c), c)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Approve moves everything pending in f into the approved snapshot.
func Approve(f *File, now time.Time) {
	if f.Pending == nil {
		return
	}
	if f.Approved == nil {
		f.Approved = &Snapshot{}
	}
	for _, k := range Kinds {
		if f.Pending.Has(k) {
			f.Approved.Set(k, f.Pending.List(k))
		}
	}
	if f.Pending.Contexts != nil {
		f.Approved.Contexts = f.Pending.Contexts
	}
	f.Approved.Launch = f.Pending.Launch
	f.Approved.Time = now.UTC()
	f.Pending = nil
}
