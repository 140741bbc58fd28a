package main

import (
	"runtime/debug"
	"testing"
)

// TestSessionGCPercent: a session runs the collector at sessionGCPercent,
// and a GOGC the user set wins.
func TestSessionGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	tuneSessionGC()
	if got := debug.SetGCPercent(100); got != sessionGCPercent {
		t.Errorf("without GOGC: the collector's target is %d, want %d", got, sessionGCPercent)
	}
	t.Setenv("GOGC", "200")
	tuneSessionGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC=200: tuneSessionGC changed the target to %d", got)
	}
}
