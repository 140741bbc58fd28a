// Package home locates mcpcage's state directory.
//
// Everything mcpcage keeps (pins, the audit log and its keys, the package
// cache, each server's private HOME) lives under one directory: $MCPCAGE_HOME,
// or ~/.mcpcage when it is unset. It is created with mode 0700.
package home

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Dir returns the state directory, creating it (0700) when missing.
func Dir() (string, error) {
	dir := os.Getenv("MCPCAGE_HOME")
	if dir == "" {
		h, err := os.UserHomeDir()
		if err != nil || h == "" {
			return "", errors.New("cannot find the home directory: set MCPCAGE_HOME")
		}
		dir = filepath.Join(h, ".mcpcage")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("MCPCAGE_HOME %q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", fmt.Errorf("cannot create %s: %w", abs, err)
	}
	return abs, nil
}

// Sub returns a subdirectory of the state directory, creating it (0700).
func Sub(parts ...string) (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(append([]string{dir}, parts...)...)
	if err := os.MkdirAll(p, 0o700); err != nil {
		return "", fmt.Errorf("cannot create %s: %w", p, err)
	}
	return p, nil
}
