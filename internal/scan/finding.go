package scan

import (
	"fmt"
	"strings"
)

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
	Severity    Severity `json:"severity"` // "low", "medium" or "high"
	Path        string   `json:"path"`     // JSON path in the item, e.g. "description", "inputSchema.properties.x.description"
	Snippet     string   `json:"snippet"`  // the matched text, invisible characters made visible (<U+200B>)
	Explanation string   `json:"explanation"`
}

// MarshalText writes "low", "medium" or "high".
func (s Severity) MarshalText() ([]byte, error) {
	if s < Low || s > High {
		return nil, fmt.Errorf("scan: invalid severity %d", int(s))
	}
	return []byte(strings.ToLower(s.String())), nil
}

// UnmarshalText reads "low", "medium" or "high".
func (s *Severity) UnmarshalText(b []byte) error {
	v, err := parseSeverity(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}
