//go:build !unix

package clients

import "os"

// openConfig opens a configuration file for reading; only a regular file
// is kept.
func openConfig(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if err := keepRegular(f); err != nil {
		return nil, err
	}
	return f, nil
}
