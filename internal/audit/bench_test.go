package audit

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// callFields is a typical tools/call record's fields, as the run extension
// writes them.
func callFields(i int) []byte {
	return []byte(fmt.Sprintf(`{"args":"bca5f40b31da5cb1cb92bb001fd69c1625e71f8e3c8668a4cfef87dba021d42f","by":"server","def":"6a2e1d743ecf381abb419383a5406afb40f678e636d3309f8e05bd9fe28678dd","dur_us":%d,"findings":0,"outcome":"ok","server":"demo-notes","session":"eb80f682e4015b91","tool":"add_note"}`, 100+i%900))
}

// writeSynthetic writes a valid n-record log (with rotation and a signed
// checkpoint) without fsync, to have something big to verify.
func writeSynthetic(tb testing.TB, opts Options, n int) {
	k, err := LoadOrCreateKeys(opts.KeyDir)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	m := newMAC(k.MAC)
	prev := GenesisPrev
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	idx, size := 1, int64(0)
	open := func() (*os.File, *bufio.Writer) {
		f, err := os.OpenFile(filepath.Join(opts.Dir, FileName(idx)), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			tb.Fatal(err)
		}
		return f, bufio.NewWriterSize(f, 1<<20)
	}
	f, w := open()
	for i := 1; i <= n; i++ {
		line, err := encodeLine(m, uint64(i), t0.Add(time.Duration(i)*time.Millisecond), prev, "call", callFields(i))
		if err != nil {
			tb.Fatal(err)
		}
		if size+int64(len(line)) > DefaultMaxFileSize {
			w.Flush()
			f.Close()
			idx++
			size = 0
			f, w = open()
		}
		w.Write(line)
		size += int64(len(line))
		prev = LineHash(line[:len(line)-1])
	}
	w.Flush()
	f.Close()
	signed, err := signCheckpoint(&Checkpoint{Records: uint64(n), Head: prev, Time: t0}, k)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(opts.Dir, CheckpointName), signed, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkAppend measures durable appends: lock, head check, write, fsync.
func BenchmarkAppend(b *testing.B) {
	tl := newTestLog(b, nil)
	l, err := Open(tl.opts)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	fields := callFields(1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Append("call", []byte(fields)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

var (
	bigLogOnce sync.Once
	bigLog     Options
	bigLogRoot string
)

const bigLogRecords = 1_000_000

// BenchmarkVerify1M verifies a 1,000,000-record log (about 380 MB in six
// files) per iteration. Run with -cpu 1 for the one-core figure.
func BenchmarkVerify1M(b *testing.B) {
	bigLogOnce.Do(func() {
		root, err := os.MkdirTemp("", "audit-bench-")
		if err != nil {
			b.Fatal(err)
		}
		bigLogRoot = root
		bigLog = Options{Dir: filepath.Join(root, "audit"), KeyDir: filepath.Join(root, "keys")}
		writeSynthetic(b, bigLog, bigLogRecords)
	})
	var size int64
	files, _ := Files(bigLog.Dir)
	for _, f := range files {
		st, _ := os.Stat(filepath.Join(bigLog.Dir, FileName(f)))
		size += st.Size()
	}
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := Verify(VerifyOptions{Dir: bigLog.Dir, KeyDir: bigLog.KeyDir})
		if err != nil {
			b.Fatal(err)
		}
		if !r.OK || r.Records != bigLogRecords {
			b.Fatalf("big log: %+v %v", r, r.Problem)
		}
	}
	b.ReportMetric(float64(bigLogRecords)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
