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
	"os/user"
	"path/filepath"
)

// User returns the user's home directory: $HOME, or the account's when a
// client started mcpcage with an empty environment (SDK clients pass only a
// few variables, some none).
func User() (string, error) {
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return h, nil
	}
	u, err := user.Current()
	if err != nil || u.HomeDir == "" {
		return "", errors.New("cannot find the home directory: set HOME")
	}
	return u.HomeDir, nil
}

// Default is the state directory when MCPCAGE_HOME is unset: ~/.mcpcage.
func Default() (string, error) {
	h, err := User()
	if err != nil {
		return "", errors.New("cannot find the home directory: set MCPCAGE_HOME")
	}
	return filepath.Join(h, ".mcpcage"), nil
}

// Dir returns the state directory, creating it (0700) when missing.
func Dir() (string, error) {
	dir := os.Getenv("MCPCAGE_HOME")
	if dir == "" {
		d, err := Default()
		if err != nil {
			return "", err
		}
		dir = d
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
