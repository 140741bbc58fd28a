package guard

import (
	"encoding/json"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpcage/mcpcage/internal/pin"
	"github.com/mcpcage/mcpcage/internal/scan"
)

// scanKind is the scanner's name for a kind of pinned item.
func scanKind(k pin.Kind) string {
	switch k {
	case pin.Tools:
		return "tool"
	case pin.Prompts:
		return "prompt"
	case pin.Resources:
		return "resource"
	case pin.Templates:
		return "resourceTemplate"
	case pin.Instructions:
		return "instructions"
	}
	return ""
}

// ScanItem scans one pinned item (a tool, prompt, ... as raw JSON;
// instructions as a JSON string) with the whole list it came in and the
// tools of the other caged servers as context: the lock message, `mcpcage
// diff` and `approve` show the same findings from it.
func ScanItem(k pin.Kind, item []byte, list []jsontext.Value, others []json.RawMessage) []scan.Finding {
	siblings := make([]json.RawMessage, 0, len(list)+len(others))
	for _, it := range list {
		siblings = append(siblings, json.RawMessage(it))
	}
	siblings = append(siblings, others...)
	return scan.Item(scanKind(k), item, siblings)
}
