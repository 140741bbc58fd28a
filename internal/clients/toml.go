package clients

import (
	"fmt"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// Codex's config.toml is read with a TOML decoder for values, and edited by
// text at byte offsets found by a small scanner, so everything else in the
// file keeps its bytes. Only the common form is edited: a [mcp_servers.NAME]
// table with `command = "..."` and `args = [...]` keys; other forms are
// read and reported but left for the person to edit.

type span struct{ start, end int }

type tomlEntry struct {
	srv      Server
	remote   *tomlSpans // a remote entry's table (Server.URL set)
	cmd      span
	args     span // from '[' to ']' inclusive
	elems    []span
	hasCmd   bool
	hasArgs  bool
	editable bool
}

type tomlDoc struct {
	data    []byte
	entries []*tomlEntry
}

func parseTOML(data []byte) (*tomlDoc, error) {
	if err := checkNesting(data, TOML); err != nil {
		return nil, err
	}
	var raw map[string]any
	md, err := toml.Decode(string(data), &raw)
	if err != nil {
		return nil, fmt.Errorf("not valid TOML: %s", firstLine(err.Error()))
	}
	doc := &tomlDoc{data: data}
	servers, _ := raw["mcp_servers"].(map[string]any)
	var order []string
	seen := map[string]bool{}
	envOrder := map[string][]string{}
	hdrOrder := map[string][]string{}
	for _, k := range md.Keys() {
		if len(k) >= 2 && k[0] == "mcp_servers" && !seen[k[1]] {
			if _, ok := servers[k[1]].(map[string]any); ok {
				seen[k[1]] = true
				order = append(order, k[1])
			}
		}
		if len(k) == 4 && k[0] == "mcp_servers" && k[2] == "env" {
			envOrder[k[1]] = append(envOrder[k[1]], k[3])
		}
		if len(k) == 4 && k[0] == "mcp_servers" && k[2] == "http_headers" {
			hdrOrder[k[1]] = append(hdrOrder[k[1]], k[3])
		}
	}
	spans := scanTOML(data)
	for _, name := range order {
		m := servers[name].(map[string]any)
		e := &tomlEntry{srv: Server{Name: name, Where: []string{"mcp_servers", name}}}
		s := &e.srv
		if c, ok := m["command"]; ok {
			if str, ok := c.(string); ok {
				s.Command, s.HasCommand = str, true
			} else {
				s.Problem = "its command is not a string"
			}
		}
		if a, ok := m["args"]; ok {
			list, ok := a.([]any)
			if !ok {
				s.Problem = "its args are not a list"
			}
			for _, x := range list {
				str, ok := x.(string)
				if !ok {
					s.Problem = "its args are not all strings"
				}
				s.Args = append(s.Args, str)
			}
		}
		s.Env = tomlVars(m["env"], envOrder[name])
		if ev, ok := m["env_vars"].([]any); ok {
			for _, x := range ev {
				if str, ok := x.(string); ok {
					s.PassEnv = append(s.PassEnv, str)
				}
			}
		}
		if u, ok := m["url"].(string); ok {
			s.URL = u
		}
		s.Headers = tomlVars(m["http_headers"], hdrOrder[name])
		// Codex's other ways of giving a remote server a header: from a
		// variable of its own environment.
		if v, ok := m["bearer_token_env_var"].(string); ok {
			s.Headers = append(s.Headers, Var{Name: "Authorization", Value: "Bearer ${" + v + "}"})
			s.PassEnv = append(s.PassEnv, v)
		}
		for _, h := range tomlVars(m["env_http_headers"], nil) {
			s.Headers = append(s.Headers, Var{Name: h.Name, Value: "${" + h.Value + "}"})
			s.PassEnv = append(s.PassEnv, h.Value)
		}
		if b, ok := m["enabled"].(bool); ok && !b {
			s.Disabled = true
		}
		if sp, ok := spans[name]; ok && s.URL != "" {
			// A remote entry is rewritten whole: a table of its own, each
			// key once, nothing nested under it.
			e.remote = sp
			if !sp.ok || sp.sub || sp.keys["url"].end == 0 {
				s.Problem = "it is not written as one [mcp_servers.NAME] table with its keys in it; edit it by hand"
			}
		} else if ok {
			e.cmd, e.hasCmd = sp.cmd, sp.hasCmd
			e.args, e.elems, e.hasArgs = sp.args, sp.elems, sp.hasArgs
			e.editable = sp.ok && sp.hasCmd == s.HasCommand && len(sp.elems) == len(s.Args)
		}
		if s.URL == "" && !e.editable && s.Problem == "" && s.HasCommand {
			s.Problem = "it is not written as a [mcp_servers.NAME] table with command and args keys; edit it by hand"
		}
		doc.entries = append(doc.entries, e)
	}
	return doc, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func tomlVars(v any, order []string) []Var {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	var names []string
	seen := map[string]bool{}
	for _, n := range order {
		if _, ok := m[n]; ok && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	var rest []string
	for n := range m {
		if !seen[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	var out []Var
	for _, n := range append(names, rest...) {
		val, ok := m[n].(string)
		if !ok {
			val = fmt.Sprint(m[n])
		}
		out = append(out, Var{Name: n, Value: val})
	}
	return out
}

func (d *tomlDoc) servers() []Server {
	out := make([]Server, 0, len(d.entries))
	for _, e := range d.entries {
		out = append(out, e.srv)
	}
	return out
}

// tomlString encodes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

type replacement struct {
	span
	text string
}

func editTOML(data []byte, op Op, w Wrap, only func(Server) bool) ([]byte, []Change, error) {
	doc, err := parseTOML(data)
	if err != nil {
		return nil, nil, err
	}
	var reps []replacement
	var changes []Change
	for i, e := range doc.entries {
		if only != nil && !only(e.srv) {
			continue
		}
		before := e.srv
		switch {
		case op == OpFix && e.remote != nil && before.Kind() == KindRemote && !before.Caged():
			if ok, _ := before.Cageable(); !ok {
				continue
			}
			reps = append(reps, tomlFixRemote(data, e.remote, before, w)...)
			changes = append(changes, Change{Before: before, Original: string(data[e.remote.body.start:e.remote.body.end]), idx: i})
			continue
		case op == OpUnwrap && before.RemoteCaged():
			sp := tomlTable(data, before.Name)
			orig := ""
			if w.Original != nil {
				orig = w.Original(before)
			}
			if orig == "" || sp == nil || before.Problem != "" {
				continue
			}
			reps = append(reps, replacement{sp.body, orig})
			changes = append(changes, Change{Before: before, Original: orig, idx: i})
			continue
		}
		if !e.editable || !e.hasCmd || !e.hasArgs {
			continue
		}
		switch op {
		case OpFix:
			if ok, _ := e.srv.Cageable(); !ok || len(e.elems) == 0 {
				continue
			}
			sep := " "
			if len(e.elems) > 1 {
				between := string(data[e.elems[0].end:e.elems[1].start])
				if _, after, ok := strings.Cut(between, ","); ok && after != "" && isSpace([]byte(after)) {
					sep = after
				}
			} else if lead := string(data[e.args.start+1 : e.elems[0].start]); lead != "" && isSpace([]byte(lead)) && strings.Contains(lead, "\n") {
				sep = lead
			}
			prefix := w.Args(before)
			var b strings.Builder
			for _, a := range prefix {
				b.WriteString(tomlString(a))
				b.WriteString("," + sep)
			}
			b.Write(data[e.cmd.start:e.cmd.end])
			b.WriteString("," + sep)
			reps = append(reps,
				replacement{span{e.elems[0].start, e.elems[0].start}, b.String()},
				replacement{e.cmd, tomlString(w.Exe)})
			after := before
			after.Command = w.Exe
			after.Args = append(prefix, append([]string{before.Command}, before.Args...)...)
			changes = append(changes, Change{Before: before, After: after, idx: i})
		case OpUnwrap:
			cmd, args, why := before.Restorable()
			ok := why == ""
			if !ok {
				continue
			}
			k := -1
			for i, a := range before.Args {
				if a == "--" {
					k = i
					break
				}
			}
			if k < 0 || k+1 >= len(e.elems) {
				continue
			}
			end := e.args.end - 1 // the ']'
			if k+2 < len(e.elems) {
				end = e.elems[k+2].start
			}
			reps = append(reps,
				replacement{span{e.elems[0].start, end}, ""},
				replacement{e.cmd, string(data[e.elems[k+1].start:e.elems[k+1].end])})
			after := before
			after.Command, after.Args = cmd, append([]string(nil), args...)
			changes = append(changes, Change{Before: before, After: after, idx: i})
		}
	}
	if len(changes) == 0 {
		return data, nil, nil
	}
	sort.Slice(reps, func(i, j int) bool { return reps[i].start > reps[j].start })
	out := append([]byte(nil), data...)
	for _, r := range reps {
		out = append(out[:r.start:r.start], append([]byte(r.text), out[r.end:]...)...)
	}
	// A remote entry changed whole: what it is now is what the file says.
	for k := range changes {
		if changes[k].Original == "" {
			continue
		}
		doc2, err := parseTOML(out)
		if err != nil || changes[k].idx >= len(doc2.entries) {
			return nil, nil, fmt.Errorf("%w: the rewritten remote entry does not parse", ErrCheck)
		}
		changes[k].After = doc2.entries[changes[k].idx].srv
	}
	return out, changes, nil
}

// tomlTable is the spans of the table [mcp_servers.NAME] as data has it now.
func tomlTable(data []byte, name string) *tomlSpans {
	sp := scanTOML(data)[name]
	if sp == nil || !sp.ok || sp.sub || sp.body.end == 0 {
		return nil
	}
	return sp
}

// tomlFixRemote rewrites a remote entry's table in place: its url line
// becomes command and args (and env, env_vars when a header needs them),
// the lines of http_headers, env_http_headers and bearer_token_env_var go;
// every other line stays.
func tomlFixRemote(data []byte, sp *tomlSpans, s Server, w Wrap) []replacement {
	args, env := remoteWrap(s, w, false)
	var b strings.Builder
	b.WriteString("command = " + tomlString(w.Exe) + "\n")
	b.WriteString("args = [")
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(tomlString(a))
	}
	b.WriteString("]\n")
	if len(env) > 0 {
		keys := make([]string, 0, len(env))
		for k := range env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString("env = { ")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(k + " = " + tomlString(env[k]))
		}
		b.WriteString(" }\n")
	}
	if len(s.PassEnv) > 0 {
		b.WriteString("env_vars = [")
		for i, v := range s.PassEnv {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(tomlString(v))
		}
		b.WriteString("]\n")
	}
	line := func(k string) span {
		ks := sp.keys[k]
		end := ks.end
		if end < len(data) && data[end-1] != '\n' {
			// The last line of the file, without its newline.
			end = len(data)
		}
		return span{ks.start, end}
	}
	reps := []replacement{{line("url"), b.String()}}
	for _, k := range []string{"http_headers", "env_http_headers", "bearer_token_env_var", "type", "command", "args", "env", "env_vars"} {
		if _, ok := sp.keys[k]; ok {
			reps = append(reps, replacement{line(k), ""})
		}
	}
	return reps
}

// tomlSpans are where one server's command and args are in the text.
type tomlSpans struct {
	cmd, args       span
	elems           []span
	hasCmd, hasArgs bool
	ok              bool
	// keys are the lines of the table's keys (from the key to the end of
	// its line); body is the table after its header line, up to the next
	// header; sub says a table of its own nests under it.
	keys map[string]span
	body span
	sub  bool
}

// scanTOML finds, for each [mcp_servers.NAME] table, the byte spans of its
// command value and args array. It understands enough TOML to skip every
// other construct; on anything it does not understand it stops, and the
// entries it did not reach are not editable.
func scanTOML(data []byte) (out map[string]*tomlSpans) {
	out = map[string]*tomlSpans{}
	sc := &tscan{b: data}
	var table []string
	tableOK := false
	var open *tomlSpans              // the server table whose body is being read
	defer func() { _ = recover() }() // a scanner bug must never take mcpcage down
	for {
		sc.skipBlank()
		if sc.eof() {
			if open != nil {
				open.body.end = len(data)
			}
			return out
		}
		switch sc.b[sc.i] {
		case '[':
			if open != nil {
				// The body ends at the start of this header's line.
				open.body.end = lineStart(data, sc.i)
				open = nil
			}
			if sc.peek(1) == '[' {
				sc.i += 2
				if _, ok := sc.keyPath(']'); !ok || !sc.expect("]]") {
					return out
				}
				table, tableOK = nil, false
			} else {
				sc.i++
				k, ok := sc.keyPath(']')
				if !ok || !sc.expect("]") {
					return out
				}
				table, tableOK = k, true
			}
			if !sc.endOfLine() {
				return out
			}
			if tableOK && len(table) == 2 && table[0] == "mcp_servers" {
				sp := out[table[1]]
				if sp == nil {
					sp = &tomlSpans{ok: true}
					out[table[1]] = sp
				}
				sp.body = span{sc.i, sc.i}
				open = sp
			}
			if tableOK && len(table) > 2 && table[0] == "mcp_servers" {
				if sp := out[table[1]]; sp != nil {
					sp.sub = true
				}
			}
		default:
			keyStart := sc.i
			k, ok := sc.keyPath('=')
			if !ok || !sc.expect("=") {
				return out
			}
			sc.skipSpace()
			start := sc.i
			var elems []span
			if !sc.value(&elems, true) {
				return out
			}
			vs := span{start, sc.i}
			if !sc.endOfLine() {
				return out
			}
			if tableOK && len(table) == 2 && table[0] == "mcp_servers" && len(k) == 1 {
				sp := out[table[1]]
				if sp == nil {
					sp = &tomlSpans{ok: true}
					out[table[1]] = sp
				}
				if sp.keys == nil {
					sp.keys = map[string]span{}
				}
				if _, dup := sp.keys[k[0]]; dup {
					sp.ok = false
				}
				sp.keys[k[0]] = span{keyStart, sc.i}
				switch k[0] {
				case "command":
					if sp.hasCmd || (data[start] != '"' && data[start] != '\'') {
						sp.ok = false
					}
					sp.cmd, sp.hasCmd = vs, true
				case "args":
					if sp.hasArgs || data[start] != '[' {
						sp.ok = false
					}
					sp.args, sp.elems, sp.hasArgs = vs, elems, true
				}
			}
		}
	}
}

// lineStart is the start of the line holding data[i].
func lineStart(data []byte, i int) int {
	for i > 0 && data[i-1] != '\n' {
		i--
	}
	return i
}

type tscan struct {
	b []byte
	i int
}

func (s *tscan) eof() bool { return s.i >= len(s.b) }

func (s *tscan) peek(n int) byte {
	if s.i+n < len(s.b) {
		return s.b[s.i+n]
	}
	return 0
}

func (s *tscan) expect(t string) bool {
	s.skipSpace()
	if strings.HasPrefix(string(s.b[s.i:]), t) {
		s.i += len(t)
		return true
	}
	return false
}

func (s *tscan) skipSpace() {
	for !s.eof() && (s.b[s.i] == ' ' || s.b[s.i] == '\t') {
		s.i++
	}
}

func (s *tscan) skipComment() {
	if !s.eof() && s.b[s.i] == '#' {
		for !s.eof() && s.b[s.i] != '\n' {
			s.i++
		}
	}
}

// skipBlank skips whitespace, newlines and comments.
func (s *tscan) skipBlank() {
	for !s.eof() {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		case '#':
			s.skipComment()
		default:
			return
		}
	}
}

func (s *tscan) endOfLine() bool {
	s.skipSpace()
	s.skipComment()
	if s.eof() {
		return true
	}
	if s.b[s.i] == '\r' {
		s.i++
	}
	if !s.eof() && s.b[s.i] == '\n' {
		s.i++
		return true
	}
	return false
}

func isBare(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// keyPath reads a dotted key up to (not including) the terminator.
func (s *tscan) keyPath(term byte) ([]string, bool) {
	var parts []string
	for {
		s.skipSpace()
		if s.eof() {
			return nil, false
		}
		c := s.b[s.i]
		switch {
		case c == '"' || c == '\'':
			start := s.i
			if !s.str() {
				return nil, false
			}
			k, ok := decodeTOMLString(string(s.b[start:s.i]))
			if !ok {
				return nil, false
			}
			parts = append(parts, k)
		case isBare(c):
			start := s.i
			for !s.eof() && isBare(s.b[s.i]) {
				s.i++
			}
			parts = append(parts, string(s.b[start:s.i]))
		default:
			return nil, false
		}
		s.skipSpace()
		if s.eof() {
			return nil, false
		}
		if s.b[s.i] == '.' {
			s.i++
			continue
		}
		return parts, s.b[s.i] == term
	}
}

// decodeTOMLString decodes one string literal with the real decoder.
func decodeTOMLString(lit string) (string, bool) {
	var v struct{ V string }
	if _, err := toml.Decode("V = "+lit, &v); err != nil {
		return "", false
	}
	return v.V, true
}

// str skips a string of any of the four kinds.
func (s *tscan) str() bool {
	q := s.b[s.i]
	if s.peek(1) == q && s.peek(2) == q {
		s.i += 3
		for !s.eof() {
			if q == '"' && s.b[s.i] == '\\' {
				s.i += 2
				continue
			}
			if s.b[s.i] == q && s.peek(1) == q && s.peek(2) == q {
				s.i += 3
				// Up to two more quotes may belong to the content.
				for n := 0; n < 2 && !s.eof() && s.b[s.i] == q; n++ {
					s.i++
				}
				return true
			}
			s.i++
		}
		return false
	}
	s.i++
	for !s.eof() {
		c := s.b[s.i]
		switch {
		case c == '\n':
			return false
		case q == '"' && c == '\\':
			s.i += 2
			continue
		case c == q:
			s.i++
			return true
		}
		s.i++
	}
	return false
}

// value skips one value; for a top-level array it records element spans.
func (s *tscan) value(elems *[]span, record bool) bool {
	if s.eof() {
		return false
	}
	switch c := s.b[s.i]; c {
	case '"', '\'':
		return s.str()
	case '[':
		s.i++
		for {
			s.skipBlank()
			if s.eof() {
				return false
			}
			if s.b[s.i] == ']' {
				s.i++
				return true
			}
			start := s.i
			if !s.value(nil, false) {
				return false
			}
			if record {
				*elems = append(*elems, span{start, s.i})
			}
			s.skipBlank()
			if s.eof() {
				return false
			}
			if s.b[s.i] == ',' {
				s.i++
				continue
			}
			if s.b[s.i] != ']' {
				return false
			}
		}
	case '{':
		s.i++
		for {
			s.skipSpace()
			if s.eof() {
				return false
			}
			if s.b[s.i] == '}' {
				s.i++
				return true
			}
			if _, ok := s.keyPath('='); !ok || !s.expect("=") {
				return false
			}
			s.skipSpace()
			if !s.value(nil, false) {
				return false
			}
			s.skipSpace()
			if s.eof() {
				return false
			}
			if s.b[s.i] == ',' {
				s.i++
				continue
			}
			if s.b[s.i] != '}' {
				return false
			}
		}
	default:
		start := s.i
		for !s.eof() {
			c := s.b[s.i]
			if c == ',' || c == ']' || c == '}' || c == '\n' || c == '\r' || c == '#' {
				break
			}
			// A date-time may have a space between date and time.
			if c == ' ' || c == '\t' {
				if s.i-start == 10 && s.i+1 < len(s.b) && s.b[s.i+1] >= '0' && s.b[s.i+1] <= '9' {
					s.i++
					continue
				}
				break
			}
			s.i++
		}
		return s.i > start
	}
}
