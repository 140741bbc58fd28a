// Package scan looks for signs of hidden instructions in everything an MCP
// server shows the model, with fixed local rules (rules/).
package scan

// Severity ranks a finding.
type Severity int

const (
	Low Severity = iota + 1
	Medium
	High
)

func (s Severity) String() string {
	switch s {
	case Low:
		return "LOW"
	case Medium:
		return "MEDIUM"
	case High:
		return "HIGH"
	}
	return "UNKNOWN"
}

// Finding is one sign of hidden instructions.
type Finding struct {
	Rule        string   `json:"rule"`     // e.g. "conceal-from-user"
	Category    string   `json:"category"` // e.g. "concealment"
	Severity    Severity `json:"-"`
	Path        string   `json:"path"`    // JSON path in the item, e.g. "description", "inputSchema.properties.x.description"
	Snippet     string   `json:"snippet"` // the matched text, invisible characters made visible (<U+200B>)
	Explanation string   `json:"explanation"`
}
