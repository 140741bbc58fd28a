package main

import (
	"strings"
	"testing"
)

// TestHandBanner: a person who starts `mcpcage run` on a terminal is told,
// in one line on stderr, what runs and that it waits for a client; a client
// (stdin or stderr not a terminal) gets nothing extra.
func TestHandBanner(t *testing.T) {
	for _, tc := range []struct {
		in, err bool
		want    bool
	}{{true, true, true}, {false, true, false}, {true, false, false}} {
		var b strings.Builder
		handBanner(&IOStreams{InTTY: tc.in, ErrTTY: tc.err, ErrOut: &b}, "everything", []string{"npx", "-y", "@modelcontextprotocol/server-everything"}, "")
		got := b.String()
		if !tc.want {
			if got != "" {
				t.Errorf("stdin tty %v, stderr tty %v: %q", tc.in, tc.err, got)
			}
			continue
		}
		if want := `mcpcage: running "everything" (npx -y @modelcontextprotocol/server-everything) in a cage; it speaks MCP on stdin/stdout and waits for a client`; !strings.HasPrefix(got, want) || strings.Count(got, "\n") != 1 {
			t.Errorf("banner %q, want one line starting %q", got, want)
		}
	}
}
