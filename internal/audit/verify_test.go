package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type testLog struct {
	opts Options
	dir  string
}

func newTestLog(t testing.TB, mod func(*Options)) *testLog {
	t.Helper()
	root := t.TempDir()
	opts := Options{Dir: filepath.Join(root, "audit"), KeyDir: filepath.Join(root, "keys")}
	if mod != nil {
		mod(&opts)
	}
	return &testLog{opts: opts, dir: opts.Dir}
}

func (tl *testLog) write(t testing.TB, n int) {
	t.Helper()
	l, err := Open(tl.opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := l.Append("call", map[string]any{"server": "demo", "tool": "add_note", "n": i}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func (tl *testLog) verify(t testing.TB) *Report {
	t.Helper()
	r, err := Verify(VerifyOptions{Dir: tl.opts.Dir, KeyDir: tl.opts.KeyDir, Anchor: tl.opts.Anchor})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (tl *testLog) path(idx int) string { return filepath.Join(tl.dir, FileName(idx)) }

func readLines(t testing.TB, p string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(b, []byte("\n"))[:bytes.Count(b, []byte("\n"))]
}

func writeLines(t testing.TB, p string, lines [][]byte) {
	t.Helper()
	if err := os.WriteFile(p, bytes.Join(lines, nil), 0o600); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyIntact(t *testing.T) {
	tl := newTestLog(t, nil)
	tl.write(t, 10)
	r := tl.verify(t)
	if !r.OK || r.Records != 10 || r.Problem != nil || r.Checkpoint == nil || r.Checkpoint.Records != 10 {
		t.Fatalf("intact log: %+v problem %v", r, r.Problem)
	}
}

// TestVerifyTamper edits a 10-record log in every way the issue lists and
// checks that verify names the right kind of damage at the right line.
func TestVerifyTamper(t *testing.T) {
	cases := []struct {
		name   string
		anchor bool
		tamper func(t *testing.T, tl *testLog)
		ok     bool // the honest limits: what verify cannot see
		kind   string
		line   int
		msg    string
	}{
		{
			name: "edit one byte of a middle record",
			tamper: func(t *testing.T, tl *testLog) {
				lines := readLines(t, tl.path(1))
				lines[4] = bytes.Replace(lines[4], []byte(`"demo"`), []byte(`"demx"`), 1)
				writeLines(t, tl.path(1), lines)
			},
			kind: Modified, line: 5, msg: "record 5 was changed",
		},
		{
			name: "edit the mac of a record",
			tamper: func(t *testing.T, tl *testLog) {
				lines := readLines(t, tl.path(1))
				i := len(lines[6]) - 4
				lines[6][i] ^= 1
				writeLines(t, tl.path(1), lines)
			},
			kind: Modified, line: 7, msg: "record 7 was changed",
		},
		{
			name: "delete one",
			tamper: func(t *testing.T, tl *testLog) {
				lines := readLines(t, tl.path(1))
				writeLines(t, tl.path(1), append(lines[:4:4], lines[5:]...))
			},
			kind: Deleted, line: 5, msg: "record 5 is missing",
		},
		{
			name: "delete three",
			tamper: func(t *testing.T, tl *testLog) {
				lines := readLines(t, tl.path(1))
				writeLines(t, tl.path(1), append(lines[:2:2], lines[5:]...))
			},
			kind: Deleted, line: 3, msg: "records 3 to 5 are missing",
		},
		{
			name: "insert one forged record",
			tamper: func(t *testing.T, tl *testLog) {
				lines := readLines(t, tl.path(1))
				forged := bytes.Replace(lines[3], []byte(`"add_note"`), []byte(`"del_note"`), 1)
				writeLines(t, tl.path(1), append(lines[:4:4], append([][]byte{forged}, lines[4:]...)...))
			},
			kind: Inserted, line: 5, msg: "not a record of this log",
		},
		{
			name: "insert a copy of a real record",
			tamper: func(t *testing.T, tl *testLog) {
				lines := readLines(t, tl.path(1))
				writeLines(t, tl.path(1), append(lines[:6:6], append([][]byte{lines[1]}, lines[6:]...)...))
			},
			kind: Inserted, line: 7, msg: "repeats record 2",
		},
		{
			name: "swap two",
			tamper: func(t *testing.T, tl *testLog) {
				lines := readLines(t, tl.path(1))
				lines[4], lines[5] = lines[5], lines[4]
				writeLines(t, tl.path(1), lines)
			},
			kind: Reordered, line: 5, msg: "record 6 comes before record 5: records were swapped",
		},
		{
			name: "swap two far apart",
			tamper: func(t *testing.T, tl *testLog) {
				lines := readLines(t, tl.path(1))
				lines[2], lines[7] = lines[7], lines[2]
				writeLines(t, tl.path(1), lines)
			},
			kind: Reordered, line: 3, msg: "record 8 comes before record 3",
		},
		{
			name: "insert a copy of a later record",
			tamper: func(t *testing.T, tl *testLog) {
				lines := readLines(t, tl.path(1))
				writeLines(t, tl.path(1), append(lines[:3:3], append([][]byte{lines[8]}, lines[3:]...)...))
			},
			kind: Inserted, line: 4, msg: "copy of record 9, which comes again later",
		},
		{
			name: "delete the first record",
			tamper: func(t *testing.T, tl *testLog) {
				lines := readLines(t, tl.path(1))
				writeLines(t, tl.path(1), lines[1:])
			},
			kind: Deleted, line: 1, msg: "record 1 is missing",
		},
		{
			name: "truncate the tail",
			tamper: func(t *testing.T, tl *testLog) {
				lines := readLines(t, tl.path(1))
				writeLines(t, tl.path(1), lines[:7])
			},
			kind: Truncated, line: 7, msg: "the last 3 records were cut off",
		},
		{
			name: "truncate the tail in the middle of a line",
			tamper: func(t *testing.T, tl *testLog) {
				b, _ := os.ReadFile(tl.path(1))
				if err := os.WriteFile(tl.path(1), b[:len(b)-40], 0o600); err != nil {
					t.Fatal(err)
				}
			},
			kind: Truncated, line: 9, msg: "the last record was cut off",
		},
		{
			name: "drop the checkpoint",
			tamper: func(t *testing.T, tl *testLog) {
				if err := os.Remove(filepath.Join(tl.dir, CheckpointName)); err != nil {
					t.Fatal(err)
				}
			},
			kind: CheckpointMissing, msg: "checkpoint is gone",
		},
		{
			name: "forge the checkpoint",
			tamper: func(t *testing.T, tl *testLog) {
				p := filepath.Join(tl.dir, CheckpointName)
				b, _ := os.ReadFile(p)
				b = bytes.Replace(b, []byte("records 10"), []byte("records 7"), 1)
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
			},
			kind: CheckpointInvalid, msg: "signature does not verify",
		},
		{
			name:   "replace log and checkpoint with an older pair, anchor set",
			anchor: true,
			tamper: restoreOlderPair,
			kind:   RolledBack, line: 10, msg: "replaced by an older copy",
		},
		{
			// Without an anchor both files are all there is; an older pair
			// is a consistent log. This row keeps the limit in sight.
			name:   "replace log and checkpoint with an older pair, no anchor",
			tamper: restoreOlderPair,
			ok:     true,
		},
		{
			name: "rewrite the whole chain without the key",
			tamper: func(t *testing.T, tl *testLog) {
				lines := readLines(t, tl.path(1))
				m := newMAC([]byte("not the key, but a good guess....."))
				prev := GenesisPrev
				for i, l := range lines {
					r, err := ParseLine(bytes.TrimSuffix(l, []byte("\n")))
					if err != nil {
						t.Fatal(err)
					}
					fields := bytes.Replace(r.Fields, []byte(`"add_note"`), []byte(`"read_file"`), 1)
					nl, err := encodeLine(m, r.Seq, r.Time, prev, r.Kind, fields)
					if err != nil {
						t.Fatal(err)
					}
					lines[i] = nl
					prev = LineHash(nl[:len(nl)-1])
				}
				writeLines(t, tl.path(1), lines)
			},
			kind: Rewritten, line: 1, msg: "rewritten by someone without the key",
		},
		{
			name: "torn last line after a crash",
			tamper: func(t *testing.T, tl *testLog) {
				f, err := os.OpenFile(tl.path(1), os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.WriteString(`{"v":1,"seq":11,"time":"2026-`)
				f.Close()
			},
			ok: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tl := newTestLog(t, func(o *Options) {
				if tc.anchor {
					o.Anchor = filepath.Join(filepath.Dir(o.Dir), "elsewhere", "anchor")
				}
			})
			tl.write(t, 10)
			if r := tl.verify(t); !r.OK {
				t.Fatalf("before tampering: %v", r.Problem)
			}
			tc.tamper(t, tl)
			r := tl.verify(t)
			if tc.ok {
				if !r.OK {
					t.Fatalf("want ok, got %v", r.Problem)
				}
				return
			}
			if r.OK || r.Problem == nil {
				t.Fatalf("tampering not detected: %+v", r)
			}
			p := r.Problem
			if p.Kind != tc.kind || p.Line != tc.line || !strings.Contains(p.Message, tc.msg) {
				t.Fatalf("got %q at line %d: %s\nwant %q at line %d: ...%s...", p.Kind, p.Line, p.Message, tc.kind, tc.line, tc.msg)
			}
			t.Logf("%s", p)
		})
	}
}

// restoreOlderPair saves the log and checkpoint after 10 records, lets 5 more
// be written, then puts the saved pair back.
func restoreOlderPair(t *testing.T, tl *testLog) {
	saved := t.TempDir()
	copyFile(t, tl.path(1), filepath.Join(saved, "log"))
	copyFile(t, filepath.Join(tl.dir, CheckpointName), filepath.Join(saved, "cp"))
	tl.write(t, 5)
	copyFile(t, filepath.Join(saved, "log"), tl.path(1))
	copyFile(t, filepath.Join(saved, "cp"), filepath.Join(tl.dir, CheckpointName))
}

func TestVerifyTornTail(t *testing.T) {
	tl := newTestLog(t, nil)
	tl.write(t, 3)
	f, _ := os.OpenFile(tl.path(1), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"v":1,"seq":4,"ti`)
	f.Close()
	r := tl.verify(t)
	if !r.OK || r.Torn == nil || r.Torn.Line != 4 || r.Torn.Bytes != 18 {
		t.Fatalf("torn tail: %+v %+v", r, r.Torn)
	}
	// The next writer cuts it, says so, and the chain goes on.
	tl.write(t, 2)
	r = tl.verify(t)
	if !r.OK || r.Torn != nil || r.Records != 6 || len(r.Recoveries) != 1 || r.Recoveries[0].TornBytes != 18 || r.Recoveries[0].Seq != 4 {
		t.Fatalf("after recovery: %+v problem %v", r, r.Problem)
	}
}

func TestRotation(t *testing.T) {
	tl := newTestLog(t, func(o *Options) { o.MaxFileSize = 2000 })
	tl.write(t, 40)
	files, _ := Files(tl.dir)
	if len(files) < 3 {
		t.Fatalf("no rotation: %v", files)
	}
	r := tl.verify(t)
	if !r.OK || r.Records != 40 || len(r.Files) != len(files) {
		t.Fatalf("rotated log: %+v %v", r, r.Problem)
	}
	for _, f := range files {
		st, _ := os.Stat(tl.path(f))
		if st.Size() > 2000 {
			t.Fatalf("%s is %d bytes", FileName(f), st.Size())
		}
	}
	// Deleting a whole old file breaks the chain at the next file.
	if err := os.Remove(tl.path(2)); err != nil {
		t.Fatal(err)
	}
	r = tl.verify(t)
	if r.OK || r.Problem.Kind != Deleted || r.Problem.File != FileName(2) {
		t.Fatalf("deleted file: %+v", r.Problem)
	}
	// Swapping across a file boundary is still a reorder.
	tl2 := newTestLog(t, func(o *Options) { o.MaxFileSize = 2000 })
	tl2.write(t, 40)
	a, b := readLines(t, tl2.path(1)), readLines(t, tl2.path(2))
	a[len(a)-1], b[0] = b[0], a[len(a)-1]
	writeLines(t, tl2.path(1), a)
	writeLines(t, tl2.path(2), b)
	r = tl2.verify(t)
	if r.OK || r.Problem.Kind != Reordered || r.Problem.File != FileName(1) || r.Problem.Line != len(a) {
		t.Fatalf("swap across files: %+v", r.Problem)
	}
}

func TestAnchorRefusesToGoBack(t *testing.T) {
	var warned []error
	tl := newTestLog(t, func(o *Options) {
		o.Anchor = filepath.Join(filepath.Dir(o.Dir), "usb", "anchor")
		o.Warn = func(err error) { warned = append(warned, err) }
	})
	tl.write(t, 10)
	restoreOlderPair(t, tl)
	before, _ := os.ReadFile(tl.opts.Anchor)
	// A writer on the rolled-back log must not paper over the evidence,
	// even once it has more records than the anchor.
	tl.write(t, 10)
	after, _ := os.ReadFile(tl.opts.Anchor)
	if !bytes.Equal(before, after) || len(warned) == 0 {
		t.Fatalf("anchor overwritten after a rollback (warnings %v)", warned)
	}
	r := tl.verify(t)
	if r.OK || r.Problem.Kind != RolledBack {
		t.Fatalf("want rolled back, got %+v", r.Problem)
	}
	t.Log(r.Problem)
}

func TestAnchorCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "piped")
	tl := newTestLog(t, func(o *Options) { o.AnchorCommand = "cat >> " + out })
	tl.write(t, 3)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// record 1 and Close each sign a checkpoint.
	if bytes.Count(b, []byte(checkpointHeader)) != 2 || !bytes.Contains(b, []byte("records 3\n")) {
		t.Fatalf("anchor command got:\n%s", b)
	}
}

func TestParseLineRoundTrip(t *testing.T) {
	m := newMAC(make([]byte, 32))
	now := time.Date(2026, 11, 29, 10, 0, 0, 5, time.UTC)
	line, err := encodeLine(m, 42, now, GenesisPrev, "session_start", []byte(`{"server":"demo"}`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseLine(line[:len(line)-1])
	if err != nil {
		t.Fatal(err)
	}
	if r.Seq != 42 || !r.Time.Equal(now) || r.Kind != "session_start" || string(r.Fields) != `{"server":"demo"}` {
		t.Fatalf("%+v", r)
	}
	for _, bad := range []string{"", "{}", string(line[:len(line)-2]), strings.Replace(string(line[:len(line)-1]), `"seq":42`, `"seq":042`, 1)} {
		if _, err := ParseLine([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
