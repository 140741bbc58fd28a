package main

import (
	"fmt"
	"net"
	"os"
)

func scriptDockerErrors() {
	// stale-socket PATH leaves a unix socket at PATH that nobody listens on,
	// as an engine that stopped leaves its socket behind.
	scriptCommands["stale-socket"] = func() {
		l, err := net.Listen("unix", os.Args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		l.Close()
		os.Exit(0)
	}
}
