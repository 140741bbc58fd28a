//go:build !unix

package clients

import (
	"io/fs"

	"github.com/mcpcage/mcpcage/internal/atomicfile"
)

// ownerToKeep: a file's owner is not changed by rewriting it here.
func ownerToKeep(fs.FileInfo) *atomicfile.Owner { return nil }
