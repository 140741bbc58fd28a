package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpcage/mcpcage/internal/clients"
	"github.com/mcpcage/mcpcage/internal/home"
	"github.com/mcpcage/mcpcage/internal/launch"
	"github.com/mcpcage/mcpcage/known"
)

// fixWrap is how --fix cages the entries of a file: besides --name and
// --env,
//   - the state directory when it is not the default one, because clients
//     built on the SDKs start servers with only a few variables (MCPCAGE_HOME
//     is not among them) and the session would then keep its pins where
//     `mcpcage diff` and `approve` do not look;
//   - the project folder, read-only, for a project's entries: clients start
//     them in the project, and project servers read their configuration
//     there;
//   - the folder of a well-known server's store (known/servers.json) when its
//     variable names a host file, read-write: the store must outlive the
//     session;
//   - --allow-host for each host a well-known server needs (its hosts in
//     known/servers.json), and no other: the plan names them and the
//     prompt asks for them before anything is written.
func fixWrap(opts *ProtectOptions) func(*fileReport) clients.Wrap {
	var homeFlag []string
	if dir := os.Getenv("MCPCAGE_HOME"); dir != "" {
		abs, err := filepath.Abs(dir)
		def, derr := home.Default()
		if err == nil && (derr != nil || filepath.Clean(def) != abs) {
			homeFlag = []string{"--home=" + abs}
		}
	}
	return func(r *fileReport) clients.Wrap {
		return clients.Wrap{Exe: opts.Exe, Flags: func(s clients.Server) []string {
			fl := append([]string(nil), homeFlag...)
			if d := projectDirOf(opts, r, s); d != "" {
				fl = append(fl, "--mount="+d)
			}
			for _, st := range storesOf(opts, r, s) {
				if st.mount != "" {
					fl = append(fl, "--mount="+st.mount+":rw")
				}
			}
			return append(fl, knownHostFlags(s)...)
		}}
	}
}

// projectDirOf is the project folder of a project's entry (a project file, or
// Claude Code's projects["/path"]), when it exists; "" for a user entry.
func projectDirOf(opts *ProtectOptions, r *fileReport, s clients.Server) string {
	d := ""
	switch {
	case r.File.Scope == "project":
		d = opts.ProjectDir
	case strings.HasPrefix(s.Scope(), "project ") && len(s.Where) > 1:
		d = s.Where[1]
	}
	if d == "" || !filepath.IsAbs(d) {
		return ""
	}
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
		return ""
	}
	return filepath.Clean(d)
}

// store is a well-known server's store as the entry sets it.
type store struct {
	known.State
	value string // the host path the entry's variable names, "" when not set
	mount string // the folder --fix mounts read-write for it, "" for none
	lost  string // why the store would not outlive the session, "" when it does
}

func storesOf(opts *ProtectOptions, r *fileReport, s clients.Server) []store {
	k, ok := knownOf(s)
	if !ok {
		return nil
	}
	userHome := opts.Layout.Home
	var out []store
	for _, st := range k.State {
		o := store{State: st}
		for _, v := range s.Env {
			if v.Name != st.Env {
				continue
			}
			p, _ := launch.ExpandPath(v.Value, userHome, projectDirOf(opts, r, s))
			if !filepath.IsAbs(p) {
				o.lost = fmt.Sprintf("%s=%s is not a host path mcpcage can show the server", st.Env, v.Value)
				break
			}
			o.value = p
			dir := filepath.Dir(p)
			switch fi, err := os.Stat(dir); {
			case err != nil || !fi.IsDir():
				o.lost = fmt.Sprintf("%s names %s, whose folder does not exist here", st.Env, p)
			case dir == "/" || dir == "/tmp" || dir == filepath.Clean(os.TempDir()):
				o.lost = fmt.Sprintf("%s names %s: the cage has its own /tmp, emptied when the session ends", st.Env, p)
			default:
				o.mount = dir
			}
		}
		out = append(out, o)
	}
	return out
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// covered says whether one of the folders dirs holds p.
func covered(dirs []string, p string) bool {
	for _, d := range dirs {
		if rel, err := filepath.Rel(d, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

// cageNotes says, for an entry about to be caged, what changes for its
// server: what it sees of your files and how, what it keeps, what it loses.
func cageNotes(opts *ProtectOptions, r *fileReport, c clients.Change) []string {
	s := c.Before
	var notes []string
	userHome := opts.Layout.Home
	proj := projectDirOf(opts, r, s)
	after := c.After
	flags := after.CageFlags()
	_, inner, _ := after.Unwrapped()

	// Paths written relative to a home or a folder.
	// A user entry's "." is wherever the client starts it: known only then.
	dir := proj
	if dir == "" {
		dir = clientDir
	}
	_, mapped := launch.ExpandArgs(inner, userHome, dir)
	for _, m := range mapped {
		if proj == "" && !strings.HasPrefix(m.From, "~") {
			notes = append(notes, fmt.Sprintf("%s %q is the folder the client starts the server in, shown read-only", m.Where, m.From))
			continue
		}
		notes = append(notes, fmt.Sprintf("%s %q is %s, shown read-only at that path", m.Where, m.From, m.To))
	}
	// Folders it will see: the plan run makes of the caged entry.
	var ro, rw []string
	if p, err := entryPlan(opts, r, after); err != nil {
		notes = append(notes, "! mcpcage run would refuse it: "+errText(err))
	} else {
		for _, m := range p.Mounts {
			if m.Writable {
				rw = append(rw, m.Target)
			} else {
				ro = append(ro, m.Target)
			}
		}
		notes = append(notes, p.Notes...)
	}
	stores := storesOf(opts, r, s)
	isStore := map[string]bool{}
	for _, st := range stores {
		isStore[st.Env] = true
	}
	for _, v := range s.Env {
		if isStore[v.Name] {
			continue
		}
		p, ok := launch.ExpandPath(v.Value, userHome, proj)
		if !ok && !filepath.IsAbs(v.Value) {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			notes = append(notes, fmt.Sprintf("env %s names the host path %s: shown read-only at that path", v.Name, p))
		} else if dir := filepath.Dir(p); dir != "/" && isDir(dir) && !covered(rw, p) {
			notes = append(notes, fmt.Sprintf("! env %s names %s, which does not exist yet: the caged server will not start, since it would create it where you never see it; add --mount=%s:rw to its args before --, or point %s at a file that exists", v.Name, p, dir, v.Name))
		} else {
			notes = append(notes, fmt.Sprintf("env %s names %s, which does not exist here: the server sees the cage's own disk there", v.Name, p))
		}
	}
	if proj != "" {
		notes = append(notes, fmt.Sprintf("project folder %s shown read-only; the server starts in it when the client starts it there", proj))
	}
	if len(ro) > 0 {
		notes = append(notes, fmt.Sprintf("read-only in the cage: %s; to let it change one, add --mount=PATH:rw to its args before --", strings.Join(dedupe(ro), ", ")))
	}
	if len(rw) > 0 {
		notes = append(notes, "read-write: "+strings.Join(dedupe(rw), ", "))
	}
	// What it keeps.
	name := clients.CageName(s.Name)
	if name == "" {
		if pc, err := launch.ParseCommand(append([]string{s.Command}, s.Args...)); err == nil {
			name = pc.Name()
		}
	}
	for _, st := range stores {
		switch {
		case st.lost != "":
			notes = append(notes, fmt.Sprintf("! %s (%s) would be lost: %s; the caged server will not start while it does not exist (mcpcage run refuses a store it would lose); unset it to keep it in the server's private HOME, or point it at a folder of yours", st.Env, st.What, st.lost))
		case st.value != "":
			notes = append(notes, fmt.Sprintf("%s (%s) stays at %s: its folder is shown read-write", st.Env, st.What, st.value))
		default:
			notes = append(notes, fmt.Sprintf("%s (%s) is set to %s in its private HOME, kept across sessions", st.Env, st.What, tilde(opts.Layout, filepath.Join(privateHome(name), st.Default))))
		}
	}
	k, _ := knownOf(s)
	if k.Writes != "" {
		notes = append(notes, "it writes "+k.Writes)
	}
	notes = append(notes, fmt.Sprintf("kept across sessions: its private HOME %s; anything else it writes is lost when the session ends", tilde(opts.Layout, privateHome(name))))
	// The network.
	var hosts []string
	for _, f := range flags {
		if h, ok := strings.CutPrefix(f, "--allow-host="); ok {
			hosts = append(hosts, h)
		}
	}
	switch {
	case len(hosts) > 0:
		notes = append(notes, fmt.Sprintf("! network: %s only, because %s (--allow-host in its args; take it out to keep the server offline)", strings.Join(hosts, ", "), k.Network))
	case !slices.Contains(flags, "--allow-net") && !slices.Contains(flags, "--allow-host"):
		notes = append(notes, networkNote(k, s.Env))
	}
	return notes
}

// knownHostFlags are the --allow-host flags --fix writes for a well-known
// server: the hosts known/servers.json lists for it, none for any other.
func knownHostFlags(s clients.Server) []string {
	k, _ := knownOf(s)
	var fl []string
	for _, h := range k.Hosts {
		fl = append(fl, "--allow-host="+h)
	}
	return fl
}

// networkNote says what a caged server without the network will miss: the
// exact --allow-host list of a well-known server, --allow-net for one that
// reaches anywhere, and for others a hint when its env holds an API key.
func networkNote(k known.Server, env []clients.Var) string {
	switch {
	case len(k.Hosts) > 0:
		var fl []string
		for _, h := range k.Hosts {
			fl = append(fl, "--allow-host "+h)
		}
		return fmt.Sprintf("! no network, and %s: add %s to its args before -- (that host only; --allow-net would open everything)", k.Network, strings.Join(fl, " "))
	case k.Network != "":
		return fmt.Sprintf("! no network, and %s: add --allow-net to its args before -- if you trust it with the network", k.Network)
	}
	var keys []string
	for _, v := range env {
		u := strings.ToUpper(v.Name)
		if strings.HasSuffix(u, "_API_KEY") || strings.HasSuffix(u, "_TOKEN") || strings.HasSuffix(u, "_KEY") || strings.HasSuffix(u, "_SECRET") {
			keys = append(keys, v.Name)
		}
	}
	if len(keys) > 0 {
		slices.Sort(keys)
		return fmt.Sprintf("! no network, but its env holds %s: an API key usually means a remote service; add --allow-host HOST for the service's API host to its args before --", strings.Join(keys, ", "))
	}
	return "no network (add --allow-host HOST to its args before -- for each host it needs, or --allow-net for all)"
}

// clientDir stands for the directory a client starts a user entry's server
// in; it exists nowhere, so nothing under it is taken for a folder to show.
const clientDir = "/\x00client"

func knownOf(s clients.Server) (known.Server, bool) {
	pc, err := launch.ParseCommand(append([]string{s.Command}, s.Args...))
	if err != nil {
		return known.Server{}, false
	}
	return known.Lookup(pc.Kind, pc.Package)
}

// privateHome is where a server's private HOME is kept on the host.
func privateHome(name string) string {
	dir, err := home.Dir()
	if err != nil {
		dir = "$MCPCAGE_HOME"
	}
	return filepath.Join(dir, "servers", name, "home")
}

func dedupe(ss []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
