//go:build !unix

package clients

import (
	"fmt"
	"os"
)

// openConfig opens a configuration file for reading; only a regular file
// is kept.
func openConfig(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("not a regular file (%s); not read", fi.Mode().Type())
	}
	return f, nil
}
