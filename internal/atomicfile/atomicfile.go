// Package atomicfile replaces files so that a reader, or a crash, sees the old
// content or the new one, never a mix, and the new content is on disk when
// the call returns.
//
// The new content is written to a temporary file in the same directory (so
// the rename cannot cross file systems), given its mode, synced, renamed over
// the old name, and the directory is synced so the rename itself survives a
// crash. Pins, audit checkpoints, the package cache's records and client
// configurations are all written this way.
package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces path with data, with mode perm.
func Write(path string, data []byte, perm fs.FileMode) error {
	return WriteChecked(path, data, perm, nil)
}

// WriteChecked is Write with a last check: check runs after the new content
// is on disk and just before the rename, and an error from it leaves path
// untouched (client configurations use it to refuse when another program
// changed the file meanwhile).
func WriteChecked(path string, data []byte, perm fs.FileMode, check func() error) error {
	return WriteOwned(path, data, perm, nil, check)
}

// Owner is a file's owner and group.
type Owner struct{ UID, GID int }

// WriteOwned is WriteChecked that also gives the new file owner (when not
// nil) before it replaces the old one: a file mcpcage rewrites while it
// runs as root (sudo, a devcontainer, CI) stays its owner's.
func WriteOwned(path string, data []byte, perm fs.FileMode, owner *Owner, check func() error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if owner != nil {
		if err := tmp.Chown(owner.UID, owner.GID); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	SyncDir(dir)
	return nil
}

// SyncDir flushes a directory's entries (a rename or a new file) to disk.
// Errors are ignored: some file systems and platforms cannot sync a directory,
// and the data itself is already synced.
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
