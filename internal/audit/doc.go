// Package audit keeps mcpcage's tamper-evident audit log: JSON Lines records,
// each holding the SHA-256 of the line before it and an HMAC over its own
// bytes, with a signed checkpoint (an ed25519 note) that pins the end of the
// log and, optionally, an anchor kept elsewhere that pins it against rollback.
//
// # What it promises
//
// Verify recomputes every hash and MAC from the exact bytes on disk (nothing
// is re-encoded) and names the first bad record: file, line and what is
// wrong (modified, deleted, inserted, reordered, truncated, rewritten,
// forked, rolled back, checkpoint missing or invalid). A torn last line left
// by a crash is reported as torn, not as tampering.
//
// It does not promise anything against someone who holds the key file: with
// it, any history can be written anew. Without an anchor, replacing both the
// log and its checkpoint with an older pair of the same log is not seen.
// Records written after the last checkpoint (at most CheckpointEvery-1, plus
// those of sessions still running) can be cut off unseen. See docs/audit.md.
//
// # Files
//
//	$MCPCAGE_HOME/audit/log-000001.jsonl   records; a new file (000002, ...)
//	                                      starts when the next line would
//	                                      pass Options.MaxFileSize (64 MiB)
//	$MCPCAGE_HOME/audit/checkpoint         the latest signed checkpoint
//	$MCPCAGE_HOME/audit/lock               flock(2) held across head-read + append
//	$MCPCAGE_HOME/keys/audit.key           the keys, mode 0600 (below)
//	$MCPCAGE_HOME/keys/audit.pub           the checkpoint verifier key
//
// No file is ever deleted by mcpcage; the chain runs through all files in
// index order, and a missing file is reported as deleted records.
//
// # Record lines, byte for byte
//
// Each line is exactly
//
//	{"v":1,"seq":SEQ,"time":"TIME","prev":"PREV","kind":"KIND","fields":FIELDS,"mac":"MAC"}\n
//
// with the members in this order and no other whitespace, where
//
//	SEQ     decimal, no leading zeros; 1 for the first record of the log,
//	        then +1 per record across all files
//	TIME    UTC, layout 2006-01-02T15:04:05.000000000Z (always 30 bytes)
//	PREV    64 lowercase hex: SHA-256 of the previous line's bytes from its
//	        "{" to its final "}" (the newline excluded); 64 "0" for seq 1
//	KIND    [a-z_]{1,32}: session_start, call, blocked, refused,
//	        session_end, recovery, and pin, drift, approve from the pin
//	        commands
//	FIELDS  one compact JSON object (no newline), the kind's fields
//	MAC     64 lowercase hex: HMAC-SHA256(mac-key, SHA-256(BODY))
//	BODY    the line's bytes from "{" up to, not including, `,"mac":"`
//
// The line's chain hash (the next record's PREV) is SHA-256 of the whole line
// without its newline. MACing SHA-256(BODY) instead of BODY lets a verifier
// hash each line once: the SHA-256 state after BODY gives the MAC's input and,
// continued over the remaining 74 bytes, the chain hash. A line is at most
// MaxLine (64 KiB) bytes.
//
// # Test vector
//
// With the test keys of testdata/vectors/keys (mac-key 00 01 .. 1f, arg-key
// 20 21 .. 3f), the first line of testdata/vectors/good_session.jsonl is
//
//	{"v":1,"seq":1,"time":"2026-01-02T03:04:06.500000000Z","prev":"0000000000000000000000000000000000000000000000000000000000000000","kind":"session_start","fields":{"launch":{"argc":0,"kind":"npx","package":"demo-notes","version":"1.0.0"},"mcpcage":"0.1.0","protocol":"2025-06-18","server":"demo-notes","session":"0011223344556677"},"mac":"fe3367def1d0eec2682544befe4c2ec2f214a8761d314c3958c46f6620c8b461"}
//
// Its MAC is fe3367def1d0eec2682544befe4c2ec2f214a8761d314c3958c46f6620c8b461 and
// its chain hash 54f004a9b2610a97952eb6a663d3911dcfeca55f27a4a2532f641ac4ec5233cd.
// The fingerprint of the arguments {"text":"hello"} to tool add_note of
// server demo-notes is 25109165529cc1f237ef276dfd3f6f6a6ef082bbd8610f0eca27807d82d3e2af.
//
// # Argument fingerprints
//
//	HMAC-SHA256(arg-key, "mcpcage-audit-args-v1" 0x00
//	            u32be(len(server)) server u32be(len(tool)) tool JCS(arguments))
//
// hex encoded; JCS is RFC 8785 canonical JSON, absent arguments count as {}.
// Arguments that cannot be canonicalized are MACed raw under the tag
// "mcpcage-audit-args-raw-v1". A keyed MAC because arguments are often
// guessable, and a plain hash of them could be reversed by trying guesses.
//
// # Checkpoint
//
// A golang.org/x/mod/sumdb/note signed by the ed25519 key named
// "mcpcage-audit", whose text is exactly
//
//	mcpcage audit checkpoint v1
//	records N
//	head HASH
//	time 2026-01-02T03:04:15Z
//
// (N the number of records, HASH the chain hash of record N, time UTC RFC
// 3339), each line ending in "\n". It is written (temp file, fsync, rename,
// fsync of the directory) after the first record, after every
// Options.CheckpointEvery (256) records and when a session's Log is closed,
// always under the lock with the head it names. The same bytes go to the
// anchor file, if set, and on the standard input of the anchor command, if
// set. An anchor file is never moved backwards: if it holds a checkpoint the
// log does not extend, it is left alone and a warning raised.
//
// # Key file
//
//	mcpcage-audit-key v1
//	mac-key: 64 hex
//	arg-key: 64 hex
//	signer: PRIVATE+KEY+mcpcage-audit+...   (note private key)
//	verifier: mcpcage-audit+...             (note verifier key)
//
// made at first use with crypto/rand, mode 0600, created by hard-linking a
// complete temporary file so that two first writers cannot both win.
//
// # Writers
//
// Any number of processes may append at once. Records are committed in
// groups: Add queues a record and returns; a commit takes every record
// queued so far, takes an exclusive flock on the lock file, finds the head,
// writes the new lines with one write(2), fsyncs the file once and only then
// releases the records' waiters (Pending.Wait; Append is Add and Wait).
// Records added while a commit writes and fsyncs share the next commit. The
// head is found with one fstat of the file the Log holds open while that
// file has the size the Log left it at and is not sealed; otherwise the
// directory is listed and the last line read. A full file is sealed (mode
// 0400) before the next file is made, so a writer that holds it open sees
// the rotation in that same fstat. If the last file ends in bytes with no
// newline (a write a crash cut short, never acknowledged), the next commit
// cuts them and first writes a recovery record naming the file, offset,
// length and SHA-256 of what was cut.
//
// Verify takes the same lock shared only while it reads the anchor, the
// checkpoint and the files' sizes, then checks exactly those bytes without
// it: a log that grows meanwhile is never reported as damaged, and writers
// wait at most for that snapshot.
package audit
