package pin

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/gofrs/flock"

	"github.com/mcpcage/mcpcage/internal/atomicfile"
	"github.com/mcpcage/mcpcage/internal/launch"
)

// Format is the value of "format" in every pin file this version writes and
// the only one it reads.
const Format = "mcpcage-pins/1"

// MaxFileSize bounds a pin file; a larger one is refused, not truncated.
const MaxFileSize = 64 << 20

// Kind names one list that is pinned. Its string is the member name used in
// list results and in pin files.
type Kind string

const (
	Tools        Kind = "tools"
	Prompts      Kind = "prompts"
	Resources    Kind = "resources"
	Templates    Kind = "resourceTemplates"
	Instructions Kind = "instructions"
)

// Kinds lists every kind in the order pins, diffs and messages show them.
var Kinds = []Kind{Instructions, Tools, Prompts, Resources, Templates}

// Noun is how a person calls one item of the kind.
func (k Kind) Noun() string {
	switch k {
	case Tools:
		return "tool"
	case Prompts:
		return "prompt"
	case Resources:
		return "resource"
	case Templates:
		return "resource template"
	}
	return "instructions"
}

// keyField is the member that identifies an item of the kind.
func (k Kind) keyField() string {
	switch k {
	case Resources:
		return "uri"
	case Templates:
		return "uriTemplate"
	}
	return "name"
}

// Snapshot is one state of a server: each list as the server sent it. A nil
// list was never seen (or, in a pending snapshot, is not pending); an empty
// one is a list with no items.
type Snapshot struct {
	Time         time.Time        `json:"time"`
	Launch       launch.Launch    `json:"launch"`
	Instructions *string          `json:"instructions,omitempty"`
	Tools        []jsontext.Value `json:"tools,omitempty"`
	Prompts      []jsontext.Value `json:"prompts,omitempty"`
	Resources    []jsontext.Value `json:"resources,omitempty"`
	Templates    []jsontext.Value `json:"resourceTemplates,omitempty"`
	// Contexts are the names of the tools the server listed to clients of
	// each set of capabilities (a ContextKey): servers offer some tools only
	// to clients that can sample, elicit or give roots. A tool approved in
	// one context and absent in another is no change.
	Contexts map[string][]string `json:"contexts,omitempty"`
	// SeenWith is, for a pending set, the context of the list that made it.
	SeenWith *string `json:"seen_with,omitempty"`
}

// List returns the items of one kind (nil when absent). Instructions are one
// item, a JSON string.
func (s *Snapshot) List(k Kind) []jsontext.Value {
	if s == nil {
		return nil
	}
	switch k {
	case Tools:
		return s.Tools
	case Prompts:
		return s.Prompts
	case Resources:
		return s.Resources
	case Templates:
		return s.Templates
	}
	if s.Instructions == nil {
		return nil
	}
	v, _ := jsontext.AppendQuote(nil, *s.Instructions)
	return []jsontext.Value{v}
}

// Has reports whether the snapshot holds a list of kind k.
func (s *Snapshot) Has(k Kind) bool {
	if s == nil {
		return false
	}
	if k == Instructions {
		return s.Instructions != nil
	}
	return s.List(k) != nil
}

// Set replaces one list. items must not be nil for a present list.
func (s *Snapshot) Set(k Kind, items []jsontext.Value) {
	switch k {
	case Tools:
		s.Tools = items
	case Prompts:
		s.Prompts = items
	case Resources:
		s.Resources = items
	case Templates:
		s.Templates = items
	case Instructions:
		if items == nil {
			s.Instructions = nil
			return
		}
		var str string
		if len(items) == 1 {
			_ = json.Unmarshal(items[0], &str)
		}
		s.Instructions = &str
	}
}

func (s *Snapshot) empty() bool {
	for _, k := range Kinds {
		if s.Has(k) {
			return false
		}
	}
	return true
}

// File is the content of one server's pin file.
type File struct {
	Format   string    `json:"format"`
	Server   string    `json:"server"`
	Approved *Snapshot `json:"approved,omitempty"`
	Pending  *Snapshot `json:"pending,omitempty"`
}

// Parse reads a pin file strictly: valid UTF-8 JSON, no duplicate or unknown
// members, names matched exactly, the current Format, every item an object
// with its identifying member, no item listed twice. A pin file is read as
// untrusted input: it may have been edited by hand or by anything else that
// can write to the home directory.
func Parse(b []byte) (*File, error) {
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("larger than %d bytes", MaxFileSize)
	}
	var f File
	if err := json.Unmarshal(b, &f, json.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("not a valid pin file: %v", err)
	}
	if f.Format != Format {
		return nil, fmt.Errorf("format %q, want %q", f.Format, Format)
	}
	if f.Server == "" {
		return nil, errors.New(`no "server" name`)
	}
	for _, s := range []*Snapshot{f.Approved, f.Pending} {
		if s == nil {
			continue
		}
		for _, k := range Kinds {
			if k == Instructions {
				continue
			}
			items := s.List(k)
			for i, it := range items {
				c := it.Clone()
				if err := c.Compact(); err != nil {
					return nil, err
				}
				items[i] = c
			}
			if _, err := index(k, items); err != nil {
				return nil, err
			}
		}
	}
	if f.Pending != nil && f.Pending.empty() {
		f.Pending = nil
	}
	return &f, nil
}

// Marshal returns the file's bytes: indented, each item on a line of its own
// exactly as the server sent it (insignificant whitespace removed).
func (f *File) Marshal() ([]byte, error) {
	var b bytes.Buffer
	str := func(s string) string {
		q, _ := jsontext.AppendQuote(nil, s)
		return string(q)
	}
	fmt.Fprintf(&b, "{\n  \"format\": %s,\n  \"server\": %s", str(Format), str(f.Server))
	for _, part := range []struct {
		name string
		s    *Snapshot
	}{{"approved", f.Approved}, {"pending", f.Pending}} {
		if part.s == nil {
			continue
		}
		s := part.s
		l, err := json.Marshal(s.Launch, json.Deterministic(true))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, ",\n  %q: {\n    \"time\": %s,\n    \"launch\": %s", part.name, str(s.Time.UTC().Format(time.RFC3339Nano)), l)
		if s.Instructions != nil {
			fmt.Fprintf(&b, ",\n    \"instructions\": %s", str(*s.Instructions))
		}
		for _, k := range Kinds[1:] {
			items := s.List(k)
			if items == nil {
				continue
			}
			if len(items) == 0 {
				fmt.Fprintf(&b, ",\n    %q: []", string(k))
				continue
			}
			fmt.Fprintf(&b, ",\n    %q: [", string(k))
			for i, it := range items {
				if i > 0 {
					b.WriteByte(',')
				}
				c := it.Clone()
				if err := c.Compact(); err != nil {
					return nil, err
				}
				b.WriteString("\n      ")
				b.Write(c)
			}
			b.WriteString("\n    ]")
		}
		if len(s.Contexts) > 0 {
			c, err := json.Marshal(s.Contexts, json.Deterministic(true))
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(&b, ",\n    \"contexts\": %s", c)
		}
		if s.SeenWith != nil {
			fmt.Fprintf(&b, ",\n    \"seen_with\": %s", str(*s.SeenWith))
		}
		b.WriteString("\n  }")
	}
	b.WriteString("\n}\n")
	if _, err := Parse(b.Bytes()); err != nil {
		return nil, fmt.Errorf("refusing to write an unreadable pin file: %w", err)
	}
	return b.Bytes(), nil
}

// Store is the pins directory, $MCPCAGE_HOME/pins.
type Store struct{ Dir string }

// FileName returns the file name that holds the pins of the server name:
// bytes outside [A-Za-z0-9_-] (and a leading dot) are written %XX, so that
// distinct names never share a file and no name can leave the directory.
func FileName(name string) (string, error) {
	if name == "" {
		return "", errors.New("a server name is empty")
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b.WriteByte(c)
		case c == '.' && i > 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	if b.Len() > 200 {
		return "", fmt.Errorf("server name %.40q... is too long (at most 200 bytes once escaped)", name)
	}
	return b.String() + ".json", nil
}

func (st Store) path(name string) (string, error) {
	fn, err := FileName(name)
	if err != nil {
		return "", err
	}
	return filepath.Join(st.Dir, fn), nil
}

// ErrNoPins is returned by Load when a server has no pin file.
var ErrNoPins = errors.New("no pins")

// Load reads the pin file of name. Files are replaced atomically, so reading
// needs no lock.
func (st Store) Load(name string) (*File, error) {
	p, err := st.path(name)
	if err != nil {
		return nil, err
	}
	return loadPath(p, name)
}

func loadPath(p, name string) (*File, error) {
	fh, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoPins
	}
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b, err := readAtMost(fh, MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	f, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if name != "" && f.Server != name {
		return nil, fmt.Errorf("%s: holds the pins of %q, not %q", p, f.Server, name)
	}
	return f, nil
}

func readAtMost(fh *os.File, n int64) ([]byte, error) {
	var b bytes.Buffer
	if _, err := b.ReadFrom(io.LimitReader(fh, n+1)); err != nil {
		return nil, err
	}
	if int64(b.Len()) > n {
		return nil, fmt.Errorf("larger than %d bytes", n)
	}
	return b.Bytes(), nil
}

// Update changes the pin file of name under an exclusive lock, so two
// sessions of one server never lose each other's writes. fn gets the current
// file (a fresh one when none exists) and reports whether it changed it; a
// changed file is written to a temporary file, synced, and renamed over the
// old one.
func (st Store) Update(name string, fn func(f *File) (bool, error)) (*File, error) {
	f, _, err := st.update(name, fn)
	return f, err
}

// update is Update that also returns the identity of the pin file as it is
// when the lock is released (nil when there is none), for unchanged.
func (st Store) update(name string, fn func(f *File) (bool, error)) (*File, os.FileInfo, error) {
	p, err := st.path(name)
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(st.Dir, 0o700); err != nil {
		return nil, nil, err
	}
	lk := flock.New(p+".lock", flock.SetPermissions(0o600))
	if err := lk.Lock(); err != nil {
		return nil, nil, fmt.Errorf("cannot lock the pins of %q: %w", name, err)
	}
	defer lk.Unlock()
	f, err := loadPath(p, name)
	if errors.Is(err, ErrNoPins) {
		f, err = &File{Format: Format, Server: name}, nil
	}
	if err != nil {
		return nil, nil, &FileError{Server: name, Err: err}
	}
	changed, err := fn(f)
	if err == nil && changed {
		if f.Pending != nil && f.Pending.empty() {
			f.Pending = nil
		}
		var b []byte
		if b, err = f.Marshal(); err == nil {
			err = atomicfile.Write(p, b, 0o600)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	fi, _ := os.Stat(p)
	return f, fi, nil
}

// unchanged reports whether the pin file of name is still the one fi
// describes. Every write replaces the file (a new inode), so the same file
// with the same size and time has not been written since.
func (st Store) unchanged(name string, fi os.FileInfo) bool {
	p, err := st.path(name)
	if err != nil || fi == nil {
		return false
	}
	now, err := os.Stat(p)
	return err == nil && os.SameFile(now, fi) && now.Size() == fi.Size() && now.ModTime().Equal(fi.ModTime())
}

// FileError is a pin file that exists but cannot be used.
type FileError struct {
	Server string
	Err    error
}

func (e *FileError) Error() string {
	return fmt.Sprintf("the pins of %q cannot be read (%v); see `mcpcage pins show %s`", e.Server, e.Err, e.Server)
}

func (e *FileError) Unwrap() error { return e.Err }

// Forget removes the pins of name; it reports whether there were any.
func (st Store) Forget(name string) (bool, error) {
	p, err := st.path(name)
	if err != nil {
		return false, err
	}
	lk := flock.New(p+".lock", flock.SetPermissions(0o600))
	if err := lk.Lock(); err != nil {
		return false, err
	}
	defer lk.Unlock()
	err = os.Remove(p)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// List reads every pin file, sorted by server name. A file that cannot be
// read is reported in errs and skipped.
func (st Store) List() (files []*File, errs []error) {
	ents, err := os.ReadDir(st.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, []error{err}
	}
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".json") || strings.HasPrefix(n, ".") {
			continue
		}
		f, err := loadPath(filepath.Join(st.Dir, n), "")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if want, _ := FileName(f.Server); want != n {
			errs = append(errs, fmt.Errorf("%s: holds the pins of %q under another name", filepath.Join(st.Dir, n), f.Server))
			continue
		}
		files = append(files, f)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Server < files[j].Server })
	return files, errs
}
