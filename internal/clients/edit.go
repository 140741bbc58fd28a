package clients

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// Op is an edit of a configuration file.
type Op int

const (
	// OpFix cages every cageable entry.
	OpFix Op = iota
	// OpUnwrap restores every entry written in the wrapped form.
	OpUnwrap
)

// Change is one entry an edit changes.
type Change struct {
	Before, After Server
	// Original is a remote entry's object as it was written before --fix
	// (for unwrap, which puts it back byte for byte); "" for the others.
	Original string
	idx      int // the entry's position among the file's entries
}

// ErrCheck means an edit did not pass its own check: a bug in mcpcage, and
// the file is left as it was.
var ErrCheck = errors.New("internal check failed")

// Read returns the server entries of a file's content.
func Read(f Format, data []byte, tables [][]string) ([]Server, error) {
	if f == TOML {
		doc, err := parseTOML(data)
		if err != nil {
			return nil, err
		}
		return doc.servers(), nil
	}
	doc, err := parseJSON(data, tables)
	if err != nil {
		return nil, err
	}
	return doc.servers(), nil
}

// Edit applies op to a file's content and returns the new content and what
// changed; with no change it returns data itself and no changes. exe is the
// absolute path of mcpcage written into caged entries. only, when not nil,
// limits the edit to the entries it accepts.
//
// The result is checked by reading it again: the same entries in the same
// places, each changed one with exactly the command and args intended, every
// other entry as it was, and strict JSON still strict. Anything else is an
// error and nothing should be written.
func Edit(f Format, data []byte, tables [][]string, op Op, exe string, only func(Server) bool) ([]byte, []Change, error) {
	return EditWith(f, data, tables, op, Wrap{Exe: exe}, only)
}

// Wrap is how OpFix cages an entry: the mcpcage written as its command, and
// the flags `mcpcage run` gets for it besides --name and --env.
type Wrap struct {
	Exe string
	// Flags, when set, returns further run flags for an entry (--home,
	// --mount, --workdir), written between the --env flags and "--".
	Flags func(Server) []string
	// Original, for OpUnwrap, is a caged remote entry's object as it was
	// written before --fix (the ledger's), "" when unknown.
	Original func(Server) string
}

// Args is what a cageable entry's args start with once caged; the original
// command and args follow.
func (w Wrap) Args(s Server) []string {
	out := WrapArgs(s)
	if w.Flags == nil {
		return out
	}
	out = out[:len(out)-1]
	out = append(out, w.Flags(s)...)
	return append(out, "--")
}

// EditWith is Edit with the wrapping spelled out (see Wrap).
func EditWith(f Format, data []byte, tables [][]string, op Op, w Wrap, only func(Server) bool) ([]byte, []Change, error) {
	var (
		out     []byte
		changes []Change
		err     error
	)
	if f == TOML {
		out, changes, err = editTOML(data, op, w, only)
	} else {
		out, changes, err = editJSON(data, tables, op, w, only)
	}
	if err != nil || len(changes) == 0 {
		return out, changes, err
	}
	if err := verify(f, data, out, tables, changes); err != nil {
		return nil, nil, fmt.Errorf("%w, nothing changed: %v", ErrCheck, err)
	}
	return out, changes, nil
}

func key(where []string) string { return strings.Join(where, "\x00") }

func verify(f Format, before, after []byte, tables [][]string, changes []Change) error {
	a, err := Read(f, before, tables)
	if err != nil {
		return err
	}
	b, err := Read(f, after, tables)
	if err != nil {
		return fmt.Errorf("the result does not parse: %v", err)
	}
	if len(a) != len(b) {
		return fmt.Errorf("%d entries became %d", len(a), len(b))
	}
	// By position: two entries may have the same key path (a repeated name).
	want := map[int]Server{}
	whole := map[int]bool{} // remote entries: the whole entry changes
	for _, c := range changes {
		want[c.idx] = c.After
		whole[c.idx] = c.Original != ""
	}
	for i := range a {
		if key(a[i].Where) != key(b[i].Where) {
			return fmt.Errorf("entry %q moved", a[i].Name)
		}
		exp := a[i]
		if w, ok := want[i]; ok {
			if whole[i] {
				exp = w
			} else {
				exp.Command, exp.Args = w.Command, w.Args
			}
		}
		if len(exp.Args) == 0 {
			exp.Args = nil
		}
		got := b[i]
		if len(got.Args) == 0 {
			got.Args = nil
		}
		if !reflect.DeepEqual(exp, got) {
			return fmt.Errorf("entry %q is not as intended", a[i].Name)
		}
	}
	if f == JSON && json.Valid(before) && !json.Valid(after) {
		return fmt.Errorf("the result is no longer strict JSON")
	}
	return nil
}
