package main

import (
	"fmt"
	"io"
)

// inspectResultJSON is what `protect --inspect` learned of one server.
type inspectResultJSON struct {
	Error string `json:"error,omitempty"`
}

func inspectAll(opts *ProtectOptions, reports []*fileReport, rep *reportJSON) {
	for fi := range rep.Files {
		for si := range rep.Files[fi].Servers {
			s := &rep.Files[fi].Servers[si]
			if s.Cageable || s.Caged {
				s.Inspect = &inspectResultJSON{Error: "not available yet"}
			}
		}
	}
}

func printInspect(w io.Writer, r *inspectResultJSON) {
	if r.Error != "" {
		fmt.Fprintf(w, "      inspect: %s\n", r.Error)
	}
}
