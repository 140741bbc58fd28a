package audit

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mcpcage/mcpcage/internal/atomicfile"
	"golang.org/x/mod/sumdb/note"
)

const checkpointHeader = "mcpcage audit checkpoint v1"

// Checkpoint is the signed statement "the log had Records records and the
// last one hashed to Head".
type Checkpoint struct {
	Records uint64    `json:"records"`
	Head    string    `json:"head"` // LineHash of record number Records
	Time    time.Time `json:"time"`
}

// text is the note text of the checkpoint (see the package doc).
func (c *Checkpoint) text() string {
	return fmt.Sprintf("%s\nrecords %d\nhead %s\ntime %s\n", checkpointHeader, c.Records, c.Head, c.Time.UTC().Format(time.RFC3339))
}

// signCheckpoint returns the signed note bytes.
func signCheckpoint(c *Checkpoint, k *Keys) ([]byte, error) {
	s, err := note.NewSigner(k.Signer)
	if err != nil {
		return nil, err
	}
	return note.Sign(&note.Note{Text: c.text()}, s)
}

// errBadSignature marks a checkpoint whose signature does not verify under
// the log's public key.
var errBadSignature = errors.New("signature does not verify with the audit public key")

// OpenCheckpoint verifies a signed checkpoint with the public key and parses it.
func OpenCheckpoint(msg []byte, publicKey string) (*Checkpoint, error) {
	v, err := note.NewVerifier(publicKey)
	if err != nil {
		return nil, err
	}
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		var unk *note.UnverifiedNoteError
		if errors.As(err, &unk) {
			return nil, errBadSignature
		}
		var bad *note.InvalidSignatureError
		if errors.As(err, &bad) {
			return nil, errBadSignature
		}
		return nil, fmt.Errorf("not a signed checkpoint: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(n.Text, "\n"), "\n")
	if len(lines) != 4 || lines[0] != checkpointHeader {
		return nil, errors.New("not an mcpcage audit checkpoint")
	}
	c := &Checkpoint{}
	rs, ok1 := strings.CutPrefix(lines[1], "records ")
	hd, ok2 := strings.CutPrefix(lines[2], "head ")
	ts, ok3 := strings.CutPrefix(lines[3], "time ")
	if !ok1 || !ok2 || !ok3 {
		return nil, errors.New("malformed checkpoint")
	}
	if c.Records, err = strconv.ParseUint(rs, 10, 64); err != nil {
		return nil, errors.New("malformed checkpoint record count")
	}
	if len(hd) != 64 || !isLowerHex([]byte(hd)) {
		return nil, errors.New("malformed checkpoint head")
	}
	c.Head = hd
	if c.Time, err = time.Parse(time.RFC3339, ts); err != nil {
		return nil, errors.New("malformed checkpoint time")
	}
	return c, nil
}

// ErrAnchorAhead is returned when the anchor holds a checkpoint that the log
// does not reach: the log (with its checkpoint) was rolled back or replaced.
var ErrAnchorAhead = errors.New("the anchor holds a newer checkpoint than the log")

// anchorFile copies the checkpoint to the anchor path, unless the anchor
// already holds a checkpoint the log does not extend (more records, or a
// different record at its position): then the anchor is left as it is, as
// evidence, and ErrAnchorAhead is returned. hashAt finds the hash of a
// record of the log.
func anchorFile(path string, c *Checkpoint, signed []byte, k *Keys, hashAt func(seq uint64) (string, error)) error {
	if old, err := os.ReadFile(path); err == nil {
		oc, err := OpenCheckpoint(old, k.Public)
		if err != nil {
			// Signed by another key, or damaged: the log's key was
			// replaced (perhaps with the whole log). Keep the evidence.
			return fmt.Errorf("%w (anchor %s: %v; if you reset the audit log on purpose, move the old anchor away)", ErrAnchorAhead, path, err)
		}
		if oc.Records > c.Records {
			return fmt.Errorf("%w (anchor %s: %d records, log: %d): run `mcpcage audit verify`", ErrAnchorAhead, path, oc.Records, c.Records)
		}
		if oc.Records > 0 {
			if h, err := hashAt(oc.Records); err != nil || h != oc.Head {
				return fmt.Errorf("%w (anchor %s: record %d of the log is not the one it signed): run `mcpcage audit verify`", ErrAnchorAhead, path, oc.Records)
			}
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, signed, 0o644)
}

// anchorCommand pipes the signed checkpoint to the user's command through sh.
// The checkpoint holds counts and hashes only, nothing secret.
func anchorCommand(cmdline string, signed []byte) error {
	cmd := exec.Command("/bin/sh", "-c", cmdline)
	cmd.Stdin = strings.NewReader(string(signed))
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("anchor command: %w", err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("anchor command: %w", err)
		}
		return nil
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return errors.New("anchor command: no answer within 10s")
	}
}
