//go:build !unix

package audit

import "github.com/gofrs/flock"

// writeLock is the log's lock file; gofrs/flock opens it on each Lock and
// closes it on each Unlock.
type writeLock struct{ *flock.Flock }

func newWriteLock(path string) *writeLock {
	return &writeLock{flock.New(path, flock.SetPermissions(0o600))}
}
