//go:build unix && !linux

package clients

import "os"

// specialFS: other systems have no procfs of this kind under a project;
// the regular-file check is what guards them.
func specialFS(*os.File) string { return "" }
