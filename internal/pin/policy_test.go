package pin

import "testing"

func TestListParams(t *testing.T) {
	for _, c := range []struct{ version, cursor, want string }{
		{"2025-06-18", "", `{}`},
		{"2025-06-18", "p\"2", `{"cursor":"p\"2"}`},
		{"2026-07-28", "", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`},
		{"2026-07-28", "c", `{"cursor":"c","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`},
	} {
		if got := string(listParams(c.version, c.cursor)); got != c.want {
			t.Errorf("listParams(%q, %q) = %s, want %s", c.version, c.cursor, got, c.want)
		}
	}
}

func TestFilterHides(t *testing.T) {
	ro := []byte(`{"name":"a","annotations":{"readOnlyHint":true}}`)
	rw := []byte(`{"name":"b","annotations":{"readOnlyHint":false}}`)
	none := []byte(`{"name":"c"}`)
	f := Filter{ReadOnly: true}
	if f.Hides("a", ro) || !f.Hides("b", rw) || !f.Hides("c", none) || !f.Hides("x", nil) {
		t.Error("--read-only-tools")
	}
	f = Filter{Allow: []string{"a"}, Deny: []string{"a"}}
	if !f.Hides("a", ro) {
		t.Error("deny must win over allow")
	}
	f = Filter{Allow: []string{"a"}}
	if f.Hides("a", ro) || !f.Hides("b", rw) {
		t.Error("--tools")
	}
}
