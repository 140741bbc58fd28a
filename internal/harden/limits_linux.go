package harden

import "golang.org/x/sys/unix"

// noFile is NoFile, or this process's own hard limit when lower.
func noFile() int64 {
	var r unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &r) == nil && r.Max < NoFile {
		return int64(r.Max)
	}
	return NoFile
}

// processLimit is this process's hard limit on processes; 0 when unknown or
// unlimited.
func processLimit() int64 {
	var r unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NPROC, &r) != nil || r.Max == ^uint64(0) || r.Max > 1<<30 {
		return 0
	}
	return int64(r.Max)
}
