package audit

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// fingerprintTag separates argument fingerprints from every other use of the
// key; the "raw" variant is for arguments that cannot be canonicalized, so the
// two can never collide.
const (
	fingerprintTag    = "mcpcage-audit-args-v1"
	fingerprintRawTag = "mcpcage-audit-args-raw-v1"
)

// canonBufs are the buffers Fingerprint canonicalizes arguments in: one
// made per call is as large as the arguments and garbage at once (21 of
// the 185 MB a session of 300 calls of 64 KiB allocated).
var canonBufs = sync.Pool{New: func() any { return new([]byte) }}

// putCanonBuf keeps a buffer for the next call unless it is too large to
// keep for a rare call.
func putCanonBuf(buf *[]byte) {
	if cap(*buf) <= 1<<20 {
		canonBufs.Put(buf)
	}
}

// Fingerprint returns the argument fingerprint of one tools/call:
//
//	HMAC-SHA256(args-key, tag 0x00 || u32be(len(server)) || server ||
//	            u32be(len(tool)) || tool || JCS(arguments))
//
// hex encoded, where JCS is RFC 8785 canonical JSON and absent arguments
// count as {}. A keyed MAC, not a hash: arguments are often guessable (a path,
// a yes/no), and a plain hash of them could be reversed by trying guesses.
// The same arguments to the same tool of the same server give the same
// fingerprint on this machine, so repeated calls can be matched up without
// the values ever being stored.
func Fingerprint(key []byte, server, tool string, arguments []byte) string {
	tag := fingerprintTag
	canon := []byte("{}")
	if len(arguments) > 0 {
		buf := canonBufs.Get().(*[]byte)
		defer putCanonBuf(buf)
		v := jsontext.Value(append((*buf)[:0], arguments...))
		if err := v.Canonicalize(); err == nil {
			canon = v
		} else {
			tag, canon = fingerprintRawTag, arguments
		}
		*buf = v[:0]
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(tag))
	m.Write([]byte{0})
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(server)))
	m.Write(n[:])
	m.Write([]byte(server))
	binary.BigEndian.PutUint32(n[:], uint32(len(tool)))
	m.Write(n[:])
	m.Write([]byte(tool))
	m.Write(canon)
	return hex.EncodeToString(m.Sum(nil))
}
