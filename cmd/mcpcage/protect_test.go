package main

import (
	"os"
)

func scriptProtect() {
	// mcpcage-tty behaves as if stdin were a terminal, so scripts can answer
	// the confirmation prompt.
	scriptCommands["mcpcage-tty"] = func() {
		s := systemStreams()
		s.InTTY = true
		os.Exit(run(s, os.Args[1:], Hooks{}))
	}
	// mcpcage-race changes each file just before mcpcage renames its new
	// version into place, as a client rewriting its config at that moment.
	scriptCommands["mcpcage-race"] = func() {
		os.Exit(run(systemStreams(), os.Args[1:], Hooks{BeforeRename: func(path string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				panic(err)
			}
			f.WriteString("\n")
			f.Close()
		}}))
	}
}
