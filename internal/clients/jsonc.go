package clients

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tailscale/hujson"
)

// jsonEntry is a server entry in a parsed JSON(C) tree, with pointers to the
// values an edit changes.
type jsonEntry struct {
	srv  Server
	val  *hujson.Value // the entry's object
	cmd  *hujson.Value // the command's value (Zed's older form: "path")
	args *hujson.Value // the args array
}

type jsonDoc struct {
	root    hujson.Value
	entries []*jsonEntry
}

var errNotEditable = errors.New("the file cannot be rewritten without changing its layout; edit it by hand")

func parseJSON(data []byte, tables [][]string) (*jsonDoc, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return &jsonDoc{}, nil
	}
	if err := checkNesting(data, JSON); err != nil {
		return nil, err
	}
	v, err := hujson.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", trimHujson(err))
	}
	doc := &jsonDoc{root: v}
	if _, ok := v.Value.(*hujson.Object); !ok {
		return nil, errors.New("not valid: the top level is not a JSON object")
	}
	for _, t := range tables {
		doc.walk(&doc.root, t, nil)
	}
	// A remote entry comes back from the ledger by its place in the file:
	// two entries at one place (a repeated name) cannot be told apart.
	seen := map[string]int{}
	for _, e := range doc.entries {
		seen[key(e.srv.Where)]++
	}
	for _, e := range doc.entries {
		if seen[key(e.srv.Where)] > 1 && (e.srv.URL != "" || e.srv.RemoteCaged()) && e.srv.Problem == "" {
			e.srv.Problem = "its name appears more than once at the same place in this file; edit it by hand"
		}
	}
	return doc, nil
}

func trimHujson(err error) string {
	s := err.Error()
	if len(s) > 8 && s[:8] == "hujson: " {
		s = s[8:]
	}
	return s
}

func litString(v *hujson.Value) (string, bool) {
	l, ok := v.Value.(hujson.Literal)
	if !ok || l.Kind() != '"' {
		return "", false
	}
	return l.String(), true
}

// walk descends along path; at its end every member of the object there is
// a server entry.
func (d *jsonDoc) walk(v *hujson.Value, path []string, where []string) {
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return
	}
	if len(path) == 0 {
		for i := range obj.Members {
			m := &obj.Members[i]
			name, _ := litString(&m.Name)
			d.entry(&m.Value, name, append(append([]string(nil), where...), name))
		}
		return
	}
	// Clients read JSON with last-one-wins for repeated keys, so follow the
	// last member of that name (for "*", every member).
	idx := -1
	for i := range obj.Members {
		name, _ := litString(&obj.Members[i].Name)
		if path[0] == "*" {
			d.walk(&obj.Members[i].Value, path[1:], append(append([]string(nil), where...), name))
		} else if name == path[0] {
			idx = i
		}
	}
	if idx >= 0 {
		d.walk(&obj.Members[idx].Value, path[1:], append(append([]string(nil), where...), path[0]))
	}
}

func members(obj *hujson.Object, key string) []*hujson.Value {
	var vs []*hujson.Value
	for i := range obj.Members {
		if n, ok := litString(&obj.Members[i].Name); ok && n == key {
			vs = append(vs, &obj.Members[i].Value)
		}
	}
	return vs
}

func last(vs []*hujson.Value) *hujson.Value {
	if len(vs) == 0 {
		return nil
	}
	return vs[len(vs)-1]
}

func (d *jsonDoc) entry(v *hujson.Value, name string, where []string) {
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return
	}
	e := &jsonEntry{srv: Server{Name: name, Where: where}, val: v}
	s := &e.srv
	cmdObj, cmdKey := obj, "command"
	// Zed's older form: "command": {"path": ..., "args": [...], "env": {...}}.
	if c := last(members(obj, "command")); c != nil {
		if o, ok := c.Value.(*hujson.Object); ok {
			cmdObj, cmdKey = o, "path"
		}
	}
	cmds, argss := members(cmdObj, cmdKey), members(cmdObj, "args")
	if len(cmds) > 1 || len(argss) > 1 {
		s.Problem = "the entry repeats its command or args key; edit it by hand"
	}
	if c := last(cmds); c != nil {
		if str, ok := litString(c); ok {
			s.Command, s.HasCommand, e.cmd = str, true, c
		} else {
			s.Problem = "its command is not a string"
		}
	}
	if a := last(argss); a != nil {
		arr, ok := a.Value.(*hujson.Array)
		if !ok {
			s.Problem = "its args are not a list"
		} else {
			e.args = a
			for i := range arr.Elements {
				str, ok := litString(&arr.Elements[i])
				if !ok {
					s.Problem = "its args are not all strings"
				}
				s.Args = append(s.Args, str)
			}
		}
	}
	for _, envKey := range []string{"env"} {
		if ev := last(members(cmdObj, envKey)); ev != nil {
			s.Env = objectVars(ev)
		}
	}
	for _, k := range []string{"url", "serverUrl", "httpUrl"} {
		if u := last(members(obj, k)); u != nil {
			if str, ok := litString(u); ok && str != "" {
				s.URL = str
			}
		}
	}
	if f := last(members(obj, "envFile")); f != nil {
		s.EnvFile, _ = litString(f)
	}
	if h := last(members(obj, "headers")); h != nil {
		s.Headers = objectVars(h)
	}
	if t := last(members(obj, "type")); t != nil {
		s.Transport, _ = litString(t)
	}
	if b := last(members(obj, "disabled")); b != nil {
		if l, ok := b.Value.(hujson.Literal); ok && l.Bool() {
			s.Disabled = true
		}
	}
	if b := last(members(obj, "enabled")); b != nil {
		if l, ok := b.Value.(hujson.Literal); ok && l.Kind() == 'f' {
			s.Disabled = true
		}
	}
	d.entries = append(d.entries, e)
}

func objectVars(v *hujson.Value) []Var {
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return nil
	}
	var out []Var
	for i := range obj.Members {
		n, _ := litString(&obj.Members[i].Name)
		val, ok := litString(&obj.Members[i].Value)
		if !ok {
			if l, isLit := obj.Members[i].Value.Value.(hujson.Literal); isLit {
				val = string(l)
			}
		}
		out = append(out, Var{Name: n, Value: val})
	}
	return out
}

func (d *jsonDoc) servers() []Server {
	out := make([]Server, 0, len(d.entries))
	for _, e := range d.entries {
		out = append(out, e.srv)
	}
	return out
}

// jsonString encodes s as a JSON string literal.
func jsonString(s string) hujson.Literal {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return hujson.Literal(bytes.TrimRight(b.Bytes(), "\n"))
}

func isSpace(b []byte) bool {
	return len(bytes.TrimLeft(b, " \t\r\n")) == 0
}

// separator is the whitespace put before inserted array elements: the one
// the array already uses between elements, else a space.
func separator(arr *hujson.Array) hujson.Extra {
	if len(arr.Elements) > 1 && len(arr.Elements[1].BeforeExtra) > 0 && isSpace(arr.Elements[1].BeforeExtra) {
		return append(hujson.Extra(nil), arr.Elements[1].BeforeExtra...)
	}
	if b := arr.Elements[0].BeforeExtra; len(b) > 0 && isSpace(b) && bytes.ContainsRune(b, '\n') {
		return append(hujson.Extra(nil), b...)
	}
	return hujson.Extra(" ")
}

func (e *jsonEntry) wrap(exe string, prefix []string) {
	arr := e.args.Value.(*hujson.Array)
	sep := separator(arr)
	ins := make([]hujson.Value, 0, len(prefix)+1+len(arr.Elements))
	for i, a := range prefix {
		v := hujson.Value{Value: jsonString(a)}
		if i == 0 {
			v.BeforeExtra = arr.Elements[0].BeforeExtra
		} else {
			v.BeforeExtra = append(hujson.Extra(nil), sep...)
		}
		ins = append(ins, v)
	}
	// The command's literal moves as written, so unwrapping restores its bytes.
	ins = append(ins, hujson.Value{BeforeExtra: append(hujson.Extra(nil), sep...), Value: e.cmd.Value})
	first := arr.Elements[0]
	first.BeforeExtra = append(hujson.Extra(nil), sep...)
	ins = append(ins, first)
	ins = append(ins, arr.Elements[1:]...)
	arr.Elements = ins
	e.cmd.Value = jsonString(exe)
}

// unwrap reverses wrap; ok is false when the entry is not in the wrapped form.
func (e *jsonEntry) unwrap() bool {
	if e.cmd == nil || e.args == nil || e.srv.Problem != "" {
		return false
	}
	if _, _, ok := e.srv.Unwrapped(); !ok {
		return false
	}
	arr := e.args.Value.(*hujson.Array)
	k := -1
	for i := range arr.Elements {
		if s, _ := litString(&arr.Elements[i]); s == "--" {
			k = i
			break
		}
	}
	if k < 0 || k+1 >= len(arr.Elements) {
		return false
	}
	lead := arr.Elements[0].BeforeExtra
	e.cmd.Value = arr.Elements[k+1].Value
	rest := append([]hujson.Value(nil), arr.Elements[k+2:]...)
	if len(rest) > 0 {
		rest[0].BeforeExtra = lead
	} else {
		arr.AfterExtra = append(append(hujson.Extra(nil), lead...), arr.AfterExtra...)
	}
	arr.Elements = rest
	return true
}

func editJSON(data []byte, tables [][]string, op Op, w Wrap, only func(Server) bool) ([]byte, []Change, error) {
	doc, err := parseJSON(data, tables)
	if err != nil {
		return nil, nil, err
	}
	if len(doc.entries) == 0 {
		return data, nil, nil
	}
	if !bytes.Equal(doc.root.Pack(), data) {
		return nil, nil, errNotEditable
	}
	var changes []Change
	for i, e := range doc.entries {
		if only != nil && !only(e.srv) {
			continue
		}
		before := e.srv
		switch {
		case op == OpFix && before.Kind() == KindRemote && !before.Caged():
			if ok, _ := before.Cageable(); !ok {
				continue
			}
			orig := e.original()
			e.fixRemote(w)
			changes = append(changes, Change{Before: before, After: e.reread(), Original: orig, idx: i})
			continue
		case op == OpUnwrap && before.RemoteCaged():
			if w.Original == nil || before.Problem != "" {
				continue
			}
			orig := w.Original(before)
			if orig == "" || !e.restore(orig) {
				continue
			}
			changes = append(changes, Change{Before: before, After: e.reread(), Original: orig, idx: i})
			continue
		}
		switch op {
		case OpFix:
			if ok, _ := e.srv.Cageable(); !ok || e.cmd == nil || e.args == nil {
				continue
			}
			prefix := w.Args(before)
			e.wrap(w.Exe, prefix)
			after := before
			after.Command = w.Exe
			after.Args = append(prefix, append([]string{before.Command}, before.Args...)...)
			changes = append(changes, Change{Before: before, After: after, idx: i})
		case OpUnwrap:
			cmd, args, why := before.Restorable()
			ok := why == ""
			if !ok || !e.unwrap() {
				continue
			}
			after := before
			after.Command, after.Args = cmd, append([]string(nil), args...)
			changes = append(changes, Change{Before: before, After: after, idx: i})
		}
	}
	if len(changes) == 0 {
		return data, nil, nil
	}
	return doc.root.Pack(), changes, nil
}
