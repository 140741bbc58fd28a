package scan

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mcpcage/mcpcage/rules"
)

// A Set compiled from the embedded rules finds what the package's own
// scan finds, item for item.
func TestSetMatchesEmbedded(t *testing.T) {
	set, err := Compile(rules.Files)
	if err != nil {
		t.Fatal(err)
	}
	var tools []familyAttack
	for _, part := range []string{"written", "heldout"} {
		tools = append(tools, readJSONL[familyAttack](t, "testdata/families/attacks-"+part+".jsonl")...)
		for _, b := range readJSONL[familyBenign](t, "testdata/families/benign-"+part+".jsonl") {
			tools = append(tools, familyAttack{Server: b.Server, Tool: b.Tool})
		}
	}
	for _, a := range tools {
		want := ToolsFrom(Origin{Package: a.Server}, []json.RawMessage{a.Tool}, nil)[0]
		got := set.ToolsFrom(Origin{Package: a.Server}, []json.RawMessage{a.Tool}, nil)[0]
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the set found %v, the package %v", itemName(a.Tool), got, want)
		}
	}
}
