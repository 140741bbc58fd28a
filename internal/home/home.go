// Package home locates mcpcage's state directory.
//
// Everything mcpcage keeps (pins, the audit log and its keys, the package
// cache, each server's private HOME) lives under one directory: $MCPCAGE_HOME,
// or ~/.mcpcage when it is unset. It is created with mode 0700.
package home

import (
	"crypto/sha256"
	"encoding/hex"
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

// ServerHome returns the private HOME of the server called name that runs
// identity (launch.Identity), creating it (0700). The first identity to run
// under a name owns servers/NAME/home, and servers/NAME/identity records
// which one that is; any other identity under the same name gets a HOME of
// its own, servers/NAME/others/HASH/home, so another publisher's package
// given an existing name never reads what the first one left there (tokens,
// caches). legacyOwner is the identity that owns a HOME made before
// identities were recorded (from the pins' approved launch); "" gives it to
// identity.
func ServerHome(name, identity, legacyOwner string) (string, error) {
	dir, err := Sub("servers", name)
	if err != nil {
		return "", err
	}
	idFile := filepath.Join(dir, "identity")
	owner, err := os.ReadFile(idFile)
	if errors.Is(err, os.ErrNotExist) {
		claim := identity
		if _, serr := os.Stat(filepath.Join(dir, "home")); serr == nil && legacyOwner != "" {
			claim = legacyOwner
		}
		f, cerr := os.OpenFile(idFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		switch {
		case cerr == nil:
			_, werr := f.WriteString(claim + "\n")
			if cerr := f.Close(); werr == nil {
				werr = cerr
			}
			if werr != nil {
				os.Remove(idFile)
				return "", fmt.Errorf("cannot record who owns %s: %w", dir, werr)
			}
			owner = []byte(claim + "\n")
		case errors.Is(cerr, os.ErrExist):
			// Another session claimed it first: read its claim.
			owner, err = os.ReadFile(idFile)
		default:
			return "", fmt.Errorf("cannot record who owns %s: %w", dir, cerr)
		}
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("cannot read %s: %w", idFile, err)
	}
	if string(owner) == identity+"\n" {
		return filepath.Join(dir, "home"), nil
	}
	sum := sha256.Sum256([]byte(identity))
	return filepath.Join(dir, "others", hex.EncodeToString(sum[:8]), "home"), nil
}
