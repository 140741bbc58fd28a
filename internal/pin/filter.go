package pin

import "github.com/go-json-experiment/json"

// Filter hides tools from the client: hidden tools vanish from tools/list and
// calling them gets "Unknown tool". Filters do not change what is pinned: the
// pins hold the server's whole catalog, whatever flags a session used.
type Filter struct {
	Allow    []string // when not empty, only these tools
	Deny     []string
	ReadOnly bool // only tools annotated readOnlyHint: true
}

// Hides reports whether the tool (its raw definition, nil when unknown) is
// filtered out.
func (f Filter) Hides(name string, def []byte) bool {
	if len(f.Allow) > 0 && !contains(f.Allow, name) {
		return true
	}
	if contains(f.Deny, name) {
		return true
	}
	if f.ReadOnly {
		var t struct {
			Annotations struct {
				ReadOnlyHint *bool `json:"readOnlyHint"`
			} `json:"annotations"`
		}
		if def == nil || json.Unmarshal(def, &t) != nil || t.Annotations.ReadOnlyHint == nil || !*t.Annotations.ReadOnlyHint {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
