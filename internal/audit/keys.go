package audit

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpcage/mcpcage/internal/atomicfile"
	"golang.org/x/mod/sumdb/note"
)

// KeyName is the signer name in checkpoint notes.
const KeyName = "mcpcage-audit"

const keyHeader = "mcpcage-audit-key v1"

// Keys are the secrets of one audit log. They live outside the log directory
// (keys/audit.key, mode 0600) so that whoever can write the log cannot, by
// that alone, rewrite it undetected.
type Keys struct {
	MAC    []byte // 32 bytes: the records' HMAC-SHA256 key
	Args   []byte // 32 bytes: the argument fingerprints' HMAC-SHA256 key
	Signer string // note private key (ed25519) for checkpoints
	Public string // note verifier key matching Signer
}

// KeyPath and PublicKeyPath are where the keys live in a key directory.
func KeyPath(keyDir string) string       { return filepath.Join(keyDir, "audit.key") }
func PublicKeyPath(keyDir string) string { return filepath.Join(keyDir, "audit.pub") }

// ErrNoKey is returned by LoadKeys when the key file does not exist.
var ErrNoKey = errors.New("no audit key")

// LoadKeys reads the key file in keyDir.
func LoadKeys(keyDir string) (*Keys, error) {
	p := KeyPath(keyDir)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w at %s", ErrNoKey, p)
	}
	if err != nil {
		return nil, err
	}
	k, err := parseKeys(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return k, nil
}

func parseKeys(b []byte) (*Keys, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	k := &Keys{}
	first := true
	for sc.Scan() {
		line := sc.Text()
		if first {
			if line != keyHeader {
				return nil, errors.New("not an mcpcage audit key file")
			}
			first = false
			continue
		}
		name, val, ok := strings.Cut(line, ": ")
		if !ok {
			return nil, errors.New("malformed key file line")
		}
		switch name {
		case "mac-key", "arg-key":
			v, err := hex.DecodeString(val)
			if err != nil || len(v) != 32 {
				return nil, fmt.Errorf("malformed %s", name)
			}
			if name == "mac-key" {
				k.MAC = v
			} else {
				k.Args = v
			}
		case "signer":
			s, err := note.NewSigner(val)
			if err != nil {
				return nil, errors.New("malformed signer key")
			}
			if s.Name() != KeyName {
				return nil, errors.New("signer key has the wrong name")
			}
			k.Signer = val
		case "verifier":
			if _, err := note.NewVerifier(val); err != nil {
				return nil, errors.New("malformed verifier key")
			}
			k.Public = val
		}
	}
	if k.MAC == nil || k.Args == nil || k.Signer == "" || k.Public == "" {
		return nil, errors.New("key file is incomplete")
	}
	return k, nil
}

// LoadOrCreateKeys reads the key file, creating a fresh one (0600, with the
// public key beside it) when none exists. Concurrent creators race on an
// exclusive create; the loser reads the winner's file.
func LoadOrCreateKeys(keyDir string) (*Keys, error) {
	k, err := LoadKeys(keyDir)
	if !errors.Is(err, ErrNoKey) {
		return k, err
	}
	if err := os.MkdirAll(keyDir, 0o700); err != nil {
		return nil, err
	}
	k = &Keys{MAC: make([]byte, 32), Args: make([]byte, 32)}
	if _, err := rand.Read(k.MAC); err != nil {
		return nil, err
	}
	if _, err := rand.Read(k.Args); err != nil {
		return nil, err
	}
	skey, vkey, err := note.GenerateKey(rand.Reader, KeyName)
	if err != nil {
		return nil, err
	}
	k.Signer, k.Public = skey, vkey
	text := fmt.Sprintf("%s\nmac-key: %x\narg-key: %x\nsigner: %s\nverifier: %s\n", keyHeader, k.MAC, k.Args, skey, vkey)
	tmp, err := os.CreateTemp(keyDir, ".audit.key.*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(text); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	// A hard link fails when the name exists, so two first runs at once
	// cannot end up with two logs' worth of different keys.
	if err := os.Link(tmp.Name(), KeyPath(keyDir)); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return LoadKeys(keyDir)
		}
		return nil, err
	}
	_ = os.WriteFile(PublicKeyPath(keyDir), []byte(vkey+"\n"), 0o644)
	atomicfile.SyncDir(keyDir)
	return k, nil
}
