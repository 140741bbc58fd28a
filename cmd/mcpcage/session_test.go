package main

import "testing"

// Two `mcpcage run` commands in one process keep their own flags: nothing of
// a session's chain lives in package state.
func TestRunCmdBuiltTwice(t *testing.T) {
	io := &IOStreams{}
	a, b := newRunCmd(io), newRunCmd(io)
	if err := a.Flags().Parse([]string{"--block-results", "high", "--tools", "x", "--strict"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Flags().Parse([]string{"--deny-tools", "y"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, flag, want string
	}{
		{"a", "block-results", "high"}, {"a", "tools", "[x]"}, {"a", "strict", "true"}, {"a", "deny-tools", "[]"},
		{"b", "block-results", ""}, {"b", "tools", "[]"}, {"b", "strict", "false"}, {"b", "deny-tools", "[y]"},
	} {
		cmd := a
		if c.name == "b" {
			cmd = b
		}
		if got := cmd.Flags().Lookup(c.flag).Value.String(); got != c.want {
			t.Errorf("%s --%s = %q, want %q", c.name, c.flag, got, c.want)
		}
	}
}
