package clients

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tailscale/hujson"

	"github.com/mcpcage/mcpcage/internal/remote"
	"github.com/mcpcage/mcpcage/internal/secrets"
)

// remoteTransports are the entry types of a remote server that mcpcage
// run --url speaks ("" when the client has no type member).
var remoteTransports = map[string]bool{"": true, "http": true, "sse": true, "streamable-http": true, "streamableHttp": true}

// remoteCageable says whether a remote entry can be caged: mcpcage run
// --url in its place.
func (s Server) remoteCageable() (bool, string) {
	if s.Problem != "" {
		return false, s.Problem
	}
	if s.HasCommand || len(s.Args) > 0 {
		return false, "it has both a command and a URL; edit it by hand"
	}
	if !remoteTransports[s.Transport] {
		return false, fmt.Sprintf("its type %q is not a remote transport mcpcage speaks", s.Transport)
	}
	if _, err := remote.CheckURL(s.URL); err != nil {
		return false, err.Error()
	}
	if len(s.Env) > 0 || s.EnvFile != "" {
		return false, "a remote entry with an env block: cage it by hand with `mcpcage run --url`"
	}
	for _, h := range s.Headers {
		if strings.ContainsAny(h.Name, ": \t\r\n") || strings.ContainsAny(h.Value, "\r\n") {
			return false, fmt.Sprintf("its header %q cannot be passed on", h.Name)
		}
	}
	return true, ""
}

// RemoteCaged says whether a caged entry runs a remote server (run --url).
func (s Server) RemoteCaged() bool {
	if !s.Caged() {
		return false
	}
	for _, f := range s.CageFlags() {
		if f == "--url" || strings.HasPrefix(f, "--url=") {
			return true
		}
	}
	return false
}

// headerEnv is the variable of the entry's env block that carries a
// header's value: a secret, or a reference the client fills in.
func headerEnv(name string) string {
	var b strings.Builder
	b.WriteString("MCPCAGE_HEADER_")
	for _, r := range strings.ToUpper(name) {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// remoteWrap is the command line and env block that run a remote entry
// under mcpcage: its headers on the command line, a value that is a secret
// moved to the env block and named as ${VAR}; with refsInEnv (clients that
// fill in references in an env block: the JSON ones) a value holding a
// reference moves too, else it stays on the command line for mcpcage to
// fill in from the variables the client passes (Codex's env_vars).
func remoteWrap(s Server, w Wrap, refsInEnv bool) (args []string, env map[string]string) {
	args = []string{"run"}
	if n := CageName(s.Name); n != "" {
		args = append(args, "--name="+n)
	}
	if w.Flags != nil {
		for _, f := range w.Flags(s) {
			if strings.HasPrefix(f, "--home=") {
				args = append(args, f)
			}
		}
	}
	env = map[string]string{}
	args = append(args, "--url", urlWithRefs(s.URL, env))
	for _, h := range s.Headers {
		v := h.Value
		_, _, secret := secrets.Check(h.Name, v)
		ref := strings.Contains(v, "${")
		if secret || refsInEnv && ref || !ref && secrets.SecretName(h.Name) {
			k := headerEnv(h.Name)
			env[k] = v
			v = "${" + k + "}"
		}
		args = append(args, "--header", h.Name+": "+v)
	}
	return args, env
}

// urlWithRefs is u with each query value that is a secret moved to env
// and named as ${VAR} (run --url fills it in; the client's config keeps the
// value in the env block, as it keeps the others).
func urlWithRefs(u string, env map[string]string) string {
	base, q, ok := strings.Cut(u, "?")
	if !ok {
		return u
	}
	parts := strings.Split(q, "&")
	for i, kv := range parts {
		k, v, _ := strings.Cut(kv, "=")
		if _, _, secret := secrets.Check(k, v); secret {
			name := "MCPCAGE_QUERY_" + strings.TrimPrefix(headerEnv(k), "MCPCAGE_HEADER_")
			env[name] = v
			parts[i] = k + "=${" + name + "}"
		}
	}
	return base + "?" + strings.Join(parts, "&")
}

// fixRemote rewrites a remote entry's object in place: the members of its
// transport (url, serverUrl, httpUrl, headers) go, a type becomes stdio,
// and command, args and env are added; every other member stays as it was.
func (e *jsonEntry) fixRemote(w Wrap) {
	obj := e.val.Value.(*hujson.Object)
	args, env := remoteWrap(e.srv, w, true)
	indent := hujson.Extra(nil)
	kept := obj.Members[:0:0]
	for _, m := range obj.Members {
		name, _ := litString(&m.Name)
		if indent == nil {
			indent = append(hujson.Extra(nil), m.Name.BeforeExtra...)
		}
		switch name {
		case "url", "serverUrl", "httpUrl", "headers", "command", "args", "env":
			// (command and args are empty here, env too: remoteCageable)
			continue
		case "type":
			m.Value = hujson.Value{BeforeExtra: m.Value.BeforeExtra, Value: jsonString("stdio"), AfterExtra: m.Value.AfterExtra}
		}
		kept = append(kept, m)
	}
	if indent == nil {
		indent = hujson.Extra(" ")
	}
	member := func(name string, v hujson.ValueTrimmed) hujson.ObjectMember {
		return hujson.ObjectMember{Name: hujson.Value{BeforeExtra: append(hujson.Extra(nil), indent...), Value: jsonString(name)}, Value: hujson.Value{BeforeExtra: hujson.Extra(" "), Value: v}}
	}
	arr := &hujson.Array{}
	for i, a := range args {
		el := hujson.Value{Value: jsonString(a)}
		if i > 0 {
			el.BeforeExtra = hujson.Extra(" ")
		}
		arr.Elements = append(arr.Elements, el)
	}
	kept = append(kept, member("command", jsonString(w.Exe)), member("args", arr))
	if len(env) > 0 {
		keys := make([]string, 0, len(env))
		for k := range env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		eo := &hujson.Object{}
		for i, k := range keys {
			m := hujson.ObjectMember{Name: hujson.Value{Value: jsonString(k)}, Value: hujson.Value{BeforeExtra: hujson.Extra(" "), Value: jsonString(env[k])}}
			if i > 0 {
				m.Name.BeforeExtra = hujson.Extra(" ")
			}
			eo.Members = append(eo.Members, m)
		}
		kept = append(kept, member("env", eo))
	}
	obj.Members = kept
}

// original is the entry's object as written, for unwrap.
func (e *jsonEntry) original() string {
	v := hujson.Value{Value: e.val.Value}
	return string(v.Pack())
}

// restore puts back an entry's object as it was written (Change.Original).
func (e *jsonEntry) restore(orig string) bool {
	v, err := hujson.Parse([]byte(orig))
	if err != nil {
		return false
	}
	if _, ok := v.Value.(*hujson.Object); !ok {
		return false
	}
	e.val.Value = v.Value
	return true
}

// reread is the entry as the file now says, after an edit of its object.
func (e *jsonEntry) reread() Server {
	d := &jsonDoc{}
	d.entry(e.val, e.srv.Name, e.srv.Where)
	if len(d.entries) == 0 {
		return e.srv
	}
	return d.entries[0].srv
}
