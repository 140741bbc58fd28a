package clients

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/mcpcage/mcpcage/internal/atomicfile"
)

// MaxFileSize is the largest configuration file read: a client's file is
// never near it, and a larger one is not read at all.
const MaxFileSize = 64 << 20

// ReadFile reads a configuration file, refusing one over MaxFileSize and
// anything but a regular file of an ordinary file system (openConfig): no
// read blocks.
func ReadFile(path string) ([]byte, error) {
	f, err := openConfig(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("larger than %d MB; not read", MaxFileSize>>20)
	}
	return b, nil
}

// keepRegular keeps f only if it is a regular file, closing it otherwise.
func keepRegular(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("not a regular file (%s); not read", fi.Mode().Type())
	}
	return nil
}

// ErrChanged means a file changed between reading it for the plan and
// writing it. Clients rewrite their files on their own (Claude Code rewrites
// ~/.claude.json often), and writing over such a change would lose it.
var ErrChanged = errors.New("changed since it was read")

// BackupSuffix starts the name of every backup: FILE.mcpcage-backup-<UTC time>,
// with -2, -3, ... added when that name is taken.
const BackupSuffix = ".mcpcage-backup-"

// Write replaces the content of path, which was before when the plan was
// made, with after. It follows a symbolic link to the real file, keeps the
// file's mode and, where it can differ from the writer's (mcpcage run as
// root on a user's file), its owner and group, for the backup too, leaves a backup of before next to it (never overwriting an
// older backup), writes a temporary file in the same directory and renames it
// into place, reading the file once more just before the rename. If the file
// no longer holds before, nothing is written and the error wraps ErrChanged.
//
// beforeRename, when not nil, runs just before that last read; tests use it
// to change the file at the worst moment.
func Write(path string, before, after []byte, now time.Time, beforeRename func()) (backup string, err error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	mode := fi.Mode().Perm()
	owner := ownerToKeep(fi)
	if cur, err := os.ReadFile(real); err != nil {
		return "", err
	} else if !bytes.Equal(cur, before) {
		return "", fmt.Errorf("%s %w", path, ErrChanged)
	}
	backup, err = writeBackup(real, before, mode, owner, now)
	if err != nil {
		return "", err
	}
	err = atomicfile.WriteOwned(real, after, mode, owner, func() error {
		if beforeRename != nil {
			beforeRename()
		}
		if cur, err := os.ReadFile(real); err != nil {
			return err
		} else if !bytes.Equal(cur, before) {
			return fmt.Errorf("%s %w", path, ErrChanged)
		}
		return nil
	})
	if err != nil {
		_ = os.Remove(backup)
		return "", err
	}
	return backup, nil
}

func writeBackup(real string, data []byte, mode fs.FileMode, owner *atomicfile.Owner, now time.Time) (string, error) {
	base := real + BackupSuffix + now.UTC().Format("20060102T150405Z")
	for n := 1; n < 1000; n++ {
		name := base
		if n > 1 {
			name += "-" + strconv.Itoa(n)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("cannot write a backup next to %s: %w", real, err)
		}
		if owner != nil {
			err = f.Chown(owner.UID, owner.GID)
		}
		if err == nil {
			_, err = f.Write(data)
		}
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(name)
			return "", fmt.Errorf("cannot write a backup next to %s: %w", real, err)
		}
		return name, nil
	}
	return "", fmt.Errorf("too many backups next to %s; remove old ones", real)
}

// Ledger remembers which entries mcpcage caged, so that an entry someone
// changed back can be shown as "uncaged (was caged)". It is a JSON file:
//
//	{"caged":[{"file":"/abs/real/path","where":["mcpServers","name"],
//	           "inner":["npx","-y","pkg"]}, ...]}
//
// sorted by file, then by where. `protect --fix` adds the entries it cages,
// with the command line it wrapped ("inner"; absent in ledgers written
// before it was recorded), and `unwrap` restores only those, and only while
// the command inside the cage is still that one.
type Ledger struct {
	path  string
	Caged []LedgerEntry `json:"caged"`
}

// LedgerEntry is one caged entry.
type LedgerEntry struct {
	File  string   `json:"file"`
	Where []string `json:"where"`
	Inner []string `json:"inner,omitempty"`
	// A remote entry --fix replaced: the args it wrote, and the entry's
	// object as it was written (unwrap puts it back byte for byte).
	Wrote    []string `json:"wrote,omitempty"`
	Original string   `json:"original,omitempty"`
}

// OpenLedger reads the ledger at path; a missing file is an empty ledger.
func OpenLedger(path string) (*Ledger, error) {
	l := &Ledger{path: path}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, l); err != nil {
		return nil, fmt.Errorf("%s is damaged (%v); remove it", path, err)
	}
	return l, nil
}

func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// Has reports whether the entry at where in file was caged by mcpcage.
func (l *Ledger) Has(file string, where []string) bool {
	f, k := realPath(file), key(where)
	for _, e := range l.Caged {
		if e.File == f && key(e.Where) == k {
			return true
		}
	}
	return false
}

// Wrapped returns the command line --fix wrapped in the entry at where in
// file (nil for an entry recorded before command lines were), and ok=false
// when --fix did not cage that entry.
func (l *Ledger) Wrapped(file string, where []string) (inner []string, ok bool) {
	f, k := realPath(file), key(where)
	for _, e := range l.Caged {
		if e.File == f && key(e.Where) == k {
			return e.Inner, true
		}
	}
	return nil, false
}

// Record records an entry --fix caged around the command line inner.
func (l *Ledger) Record(file string, where []string, inner []string) {
	l.Set(file, where, true)
	f, k := realPath(file), key(where)
	for i, e := range l.Caged {
		if e.File == f && key(e.Where) == k {
			l.Caged[i].Inner = append([]string(nil), inner...)
		}
	}
}

// RecordRemote records a remote entry --fix replaced with wrote, and its
// object as it was.
func (l *Ledger) RecordRemote(file string, where []string, wrote []string, original string) {
	l.Set(file, where, true)
	f, k := realPath(file), key(where)
	for i, e := range l.Caged {
		if e.File == f && key(e.Where) == k {
			l.Caged[i].Wrote, l.Caged[i].Original = append([]string(nil), wrote...), original
		}
	}
}

// Remote is what RecordRemote recorded for the entry ("" when nothing).
func (l *Ledger) Remote(file string, where []string) (wrote []string, original string) {
	f, k := realPath(file), key(where)
	for _, e := range l.Caged {
		if e.File == f && key(e.Where) == k {
			return e.Wrote, e.Original
		}
	}
	return nil, ""
}

// Set records (caged) or forgets (not caged) an entry.
func (l *Ledger) Set(file string, where []string, caged bool) {
	f, k := realPath(file), key(where)
	out := l.Caged[:0]
	for _, e := range l.Caged {
		if !(e.File == f && key(e.Where) == k) {
			out = append(out, e)
		}
	}
	if caged {
		out = append(out, LedgerEntry{File: f, Where: append([]string(nil), where...)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return key(out[i].Where) < key(out[j].Where)
	})
	l.Caged = out
}

// Save writes the ledger atomically, readable by the user only.
func (l *Ledger) Save() error {
	if l.Caged == nil {
		l.Caged = []LedgerEntry{}
	}
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(l.path, append(b, '\n'), 0o600)
}
