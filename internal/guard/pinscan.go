package guard

import (
	"encoding/json"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpcage/mcpcage/internal/pin"
	"github.com/mcpcage/mcpcage/internal/scan"
)

var scanKinds = map[pin.Kind]string{
	pin.Tools: "tool", pin.Prompts: "prompt", pin.Resources: "resource",
	pin.Templates: "resourceTemplate", pin.Instructions: "instructions",
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
	return scan.Item(scanKinds[k], item, siblings)
}
