//go:build !linux

package harden

// noFile is NoFile: the engine runs in a Linux VM, whose limits are its own.
func noFile() int64 { return NoFile }

// processLimit is unknown here: the engine runs in a Linux VM, whose limits are its own.
func processLimit() int64 { return 0 }
