package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpcage/mcpcage/internal/audit"
)

func scriptAudit() {
	// audit-edit FILE OLD NEW: replace the first OLD with NEW in FILE, as
	// someone editing the log by hand would (scripts have no sed).
	scriptCommands["audit-edit"] = func() {
		if len(os.Args) != 4 {
			fmt.Fprintln(os.Stderr, "usage: audit-edit FILE OLD NEW")
			os.Exit(2)
		}
		b, err := os.ReadFile(os.Args[1])
		if err != nil || !bytes.Contains(b, []byte(os.Args[2])) {
			fmt.Fprintln(os.Stderr, "audit-edit: no", os.Args[2], "in", os.Args[1], err)
			os.Exit(1)
		}
		b = bytes.Replace(b, []byte(os.Args[2]), []byte(os.Args[3]), 1)
		if err := os.WriteFile(os.Args[1], b, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

func scriptAudit2() {
	// audit-append FILE TEXT: append TEXT (no newline), as a crash in the
	// middle of a write leaves it.
	scriptCommands["audit-append"] = func() {
		f, err := os.OpenFile(os.Args[1], os.O_WRONLY|os.O_APPEND, 0)
		if err == nil {
			_, err = f.WriteString(os.Args[2])
			f.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

func TestAuditTailFollow(t *testing.T) {
	root := t.TempDir()
	opts := audit.Options{Dir: filepath.Join(root, "audit"), KeyDir: filepath.Join(root, "keys"), MaxFileSize: 600}
	l, err := audit.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < 3; i++ {
		if _, err := l.Append("call", map[string]any{"server": "old", "tool": "t"}); err != nil {
			t.Fatal(err)
		}
	}
	out := &syncBuffer{}
	io := &IOStreams{Out: out, ErrOut: out}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- auditTailRun(ctx, &AuditTailOptions{IO: io, Dir: opts.Dir, Lines: 2, Follow: true, Poll: 10 * time.Millisecond})
	}()
	for strings.Count(out.String(), "\n") < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	// New records, across several rotated files, show up in order.
	for i := 0; i < 6; i++ {
		if _, err := l.Append("call", map[string]any{"server": "new", "tool": fmt.Sprintf("tool%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "tool5") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if n := strings.Count(got, " old "); n != 2 {
		t.Fatalf("want the last 2 old records, got %d:\n%s", n, got)
	}
	last := -1
	for i := 0; i < 6; i++ {
		at := strings.Index(got, fmt.Sprintf(" tool%d ", i))
		if at < 0 || at < last {
			t.Fatalf("tool%d missing or out of order:\n%s", i, got)
		}
		last = at
	}
	if files, _ := audit.Files(opts.Dir); len(files) < 2 {
		t.Fatalf("no rotation happened: %v", files)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"90m":                  now.Add(-90 * time.Minute),
		"2026-11-28":           time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC),
		"2026-11-29T10:00:00Z": time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC),
	} {
		got, err := parseSince(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := parseSince("yesterday", now); err == nil {
		t.Error("parseSince accepted yesterday")
	}
}
