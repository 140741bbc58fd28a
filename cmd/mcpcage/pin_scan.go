package main

import (
	"encoding/json"
	"io"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpcage/mcpcage/internal/pin"
	"github.com/mcpcage/mcpcage/internal/scan"
)

// scanForPins lets diff and the lock message show the scanner's findings in
// what changed, with the same rules `mcpcage protect --inspect` uses.
type scanForPins struct{}

func init() {
	pinScan = scanForPins{}
	pinHighFindings = func(k pin.Kind, item []byte, list []jsontext.Value) int {
		return scan.Count(scanForPins{}.Item(k, item, list), scan.High)
	}
	pinFlagged = func(k pin.Kind, item []byte, list []jsontext.Value) bool {
		return scan.Count(scanForPins{}.Item(k, item, list), scan.Medium) > 0
	}
}

var scanKinds = map[pin.Kind]string{
	pin.Tools: "tool", pin.Prompts: "prompt", pin.Resources: "resource",
	pin.Templates: "resourceTemplate", pin.Instructions: "instructions",
}

func (scanForPins) Item(k pin.Kind, item []byte, list []jsontext.Value) []scan.Finding {
	siblings := make([]json.RawMessage, 0, len(list))
	for _, it := range list {
		siblings = append(siblings, json.RawMessage(it))
	}
	// Tools of the other caged servers too (scan.go): orders about them count.
	siblings = append(siblings, cagedTools()...)
	return scan.Item(scanKinds[k], item, siblings)
}

func (scanForPins) Format(w io.Writer, indent string, fs []scan.Finding) error {
	return scan.Format(w, indent, fs)
}

func (scanForPins) Summary(name string, fs []scan.Finding) string { return scan.Summary(name, fs) }
