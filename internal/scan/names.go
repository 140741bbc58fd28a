package scan

import (
	"fmt"
	"strings"
)

// Origin says which server offers a list of tools, in the user's words: the
// package (or command line, or image) they chose and the name it is caged
// under. Either may be empty; with both empty the server is unknown. The
// name a server gives itself in its initialize result is not used: a server
// that wants to pass for GitHub's would simply call itself so.
type Origin struct {
	Package string
	Name    string
}

func (o Origin) known() bool { return o.Package != "" || o.Name != "" }

// knownServer is one entry of a rule file's "known_tools": a well-known
// server, the words by which an offering server is taken to be it (or one
// of its kind: a GitLab server offers GitHub's tool names too), and its
// tools' names.
type knownServer struct {
	Server string   `json:"server"`
	Origin []string `json:"origin"`
	Tools  []string `json:"tools"`
}

// knownTools is the table the known-name and lookalike-name checks judge a
// tool's name by, keyed by the name folded (foldName).
type knownTools struct {
	servers []knownServer
	byName  map[string][]int // folded name -> indexes in servers
	names   []string         // folded names, for the look-alike search
}

func (k *knownTools) add(entries []knownServer) error {
	if k.byName == nil {
		k.byName = map[string][]int{}
	}
	for _, e := range entries {
		if e.Server == "" || len(e.Origin) == 0 || len(e.Tools) == 0 {
			return fmt.Errorf("an entry needs a server, origin words and tools")
		}
		for i, w := range e.Origin {
			if w == "" || w != strings.ToLower(w) {
				return fmt.Errorf("%s: origin word %q must be non-empty lower case", e.Server, w)
			}
			e.Origin[i] = w
		}
		idx := len(k.servers)
		k.servers = append(k.servers, e)
		for _, t := range e.Tools {
			f := foldName(t)
			if f == "" {
				return fmt.Errorf("%s: tool name %q", e.Server, t)
			}
			if _, ok := k.byName[f]; !ok {
				k.names = append(k.names, f)
			}
			k.byName[f] = append(k.byName[f], idx)
		}
	}
	return nil
}

// foldName reads a tool name the way a model reads it: case, separators
// ("read_file", "read-file", "readFile", "READ.FILE") and look-alike letters
// of other scripts do not matter.
func foldName(name string) string {
	src := []byte(name)
	for i := 0; i < len(name); i++ {
		if name[i] >= 0x80 {
			// Other scripts and compatibility forms: read as the phrase
			// rules read them. Most names are plain ASCII and skip this.
			var nt normText
			normalize(name, &nt, false)
			src = nt.lower
			break
		}
	}
	b := make([]byte, 0, len(src))
	for _, c := range src {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			b = append(b, c)
		case c == '_' || c == '-' || c == '.' || c == ' ' || c == '/':
		default:
			return "" // not a tool name the table can hold
		}
	}
	return string(b)
}

// offeredBy reports whether the origin is one of the servers of entries:
// one of their origin words is in its package or caged name.
func (k *knownTools) offeredBy(entries []int, o Origin) bool {
	ids := strings.ToLower(o.Package + " " + o.Name)
	for _, i := range entries {
		for _, w := range k.servers[i].Origin {
			if strings.Contains(ids, w) {
				return true
			}
		}
	}
	return false
}

// minLookalike is the shortest folded name the look-alike search compares:
// among short names ("git_add", "git_ad") one edit is ordinary variation.
const minLookalike = 8

// lookalike returns the known folded name one edit away from f (a letter
// changed, added, dropped, or two neighbours swapped), or "" when there is
// none. A plural or singular of a known name ("read_files") is not one.
func (k *knownTools) lookalike(f string) string {
	if len(f) < minLookalike || k.byName[f+"s"] != nil || k.byName[f+"es"] != nil ||
		k.byName[strings.TrimSuffix(f, "s")] != nil || k.byName[strings.TrimSuffix(f, "es")] != nil {
		return ""
	}
	for _, n := range k.names {
		// One edit changes the length by one at most; a plural is not one.
		if d := len(f) - len(n); d < -1 || d > 1 || pluralOf(f, n) || pluralOf(n, f) {
			continue
		}
		if oneEdit(f, n) {
			return n
		}
	}
	return ""
}

// pluralOf reports whether a is b with an s added.
func pluralOf(a, b string) bool { return len(a) == len(b)+1 && a[len(b)] == 's' && a[:len(b)] == b }

// lookAlikeChars are the pairs of characters a reader takes for each other
// in a name. Only these count as a changed letter: any letter changed gives
// real words ("search_notes", "search_nodes").
var lookAlikeChars = map[[2]byte]bool{
	{'i', 'l'}: true, {'i', '1'}: true, {'l', '1'}: true, {'i', 'j'}: true, {'o', '0'}: true,
	{'s', '5'}: true, {'e', '3'}: true, {'a', '4'}: true, {'u', 'v'}: true, {'g', 'q'}: true,
	{'b', '6'}: true, {'z', '2'}: true, {'t', '7'}: true,
}

func lookAlike(x, y byte) bool { return lookAlikeChars[[2]byte{x, y}] || lookAlikeChars[[2]byte{y, x}] }

// oneEdit reports whether a and b differ by one letter added or dropped,
// two neighbours swapped, or one letter changed for one that looks like it.
func oneEdit(a, b string) bool {
	if len(a) < len(b) {
		a, b = b, a
	}
	switch len(a) - len(b) {
	case 0:
		i := 0
		for i < len(a) && a[i] == b[i] {
			i++
		}
		if i == len(a) {
			return false
		}
		if a[i+1:] == b[i+1:] {
			return lookAlike(a[i], b[i])
		}
		return i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
	case 1:
		i := 0
		for i < len(b) && a[i] == b[i] {
			i++
		}
		return a[i+1:] == b[i:]
	}
	return false
}

// checkName judges the tool's own name against the table of well-known
// tools. A name that is a well-known tool's, offered by a server that is
// not that one (or one of its kind), is reported (known-name); so is a name
// one letter away from a well-known one, whoever offers it (lookalike-name):
// the origin words are loose ("mail" is in many a package's name), and an
// honest server spells its own tools right. With no origin known, only
// look-alikes are reported: an exact name says nothing without knowing who
// offers it.
func (sc *scanner) checkName(name string, o Origin) {
	k := &sc.set.known
	f := foldName(name)
	if f == "" {
		return
	}
	sc.pb = append(sc.pb[:0], "name"...)
	sc.pok = false
	if entries, ok := k.byName[f]; ok {
		if o.known() && !k.offeredBy(entries, o) {
			sc.add(sc.set.checks["known-name"], name+" (a tool of "+k.servers[entries[0]].Server+")")
		}
		return
	}
	if n := k.lookalike(f); n != "" {
		sc.add(sc.set.checks["lookalike-name"], name+" (like "+k.servers[k.byName[n][0]].Tools[indexFolded(k.servers[k.byName[n][0]].Tools, n)]+")")
	}
}

func indexFolded(tools []string, f string) int {
	for i, t := range tools {
		if foldName(t) == f {
			return i
		}
	}
	return 0
}
