package fuzz

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/mcpcage/mcpcage/internal/egress"
)

// FuzzGatewayEvents: any bytes as the egress gateway's output. The reader
// never stops before the end of its input: every line is a ready line, an
// event or a lost line; every event it hands on is valid UTF-8 and fits on
// one line of the bound, whatever the line said.
func FuzzGatewayEvents(f *testing.F) {
	f.Add([]byte(`{"ready":"/egress"}` + "\n" + `{"host":"a.test","port":443,"verdict":"allowed","via":"sni","phase":"open"}` + "\n"))
	f.Add([]byte(`{"ready":"/egress"}` + "\n" + string(bytes.Repeat([]byte("x"), 5000)) + "\n" + `{"verdict":"refused","reason":"\u0001"}`))
	f.Add([]byte("\n\n{}\n{\"verdict\":1}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		lines := bytes.Count(b, []byte("\n")) + 1
		seen := 0
		err := egress.ReadEvents(bytes.NewReader(b), egress.EventSink{
			Ready: func(string) { seen++ },
			Event: func(e egress.Event) {
				seen++
				for _, s := range []string{e.Host, e.Reason, e.Addr, e.Verdict, e.Via, e.Phase} {
					if !utf8.ValidString(s) {
						t.Fatalf("an event field is not UTF-8: %q", s)
					}
				}
				if j, _ := json.Marshal(e); len(j) > egress.MaxEventLine {
					t.Fatalf("an event of %d bytes", len(j))
				}
			},
			Lost: func() { seen++ },
		})
		if err != nil {
			t.Fatalf("ReadEvents: %v", err)
		}
		if seen > lines {
			t.Fatalf("%d lines, %d handed on", lines, seen)
		}
	})
}
