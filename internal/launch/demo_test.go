package launch

import (
	"os"
	"regexp"
	"testing"
)

// TestDemoNameIsDerived: `make demo` names its server by the default name;
// when the naming rule changes, the demo must follow it (it once asked
// `mcpcage diff` for a name no session had).
func TestDemoNameIsDerived(t *testing.T) {
	b, err := os.ReadFile("../../examples/demo.sh")
	if err != nil {
		t.Fatal(err)
	}
	pkg := regexp.MustCompile(`(?m)^PKG=(\S+)$`).FindSubmatch(b)
	name := regexp.MustCompile(`(?m)^NAME=(\S+)$`).FindSubmatch(b)
	if pkg == nil || name == nil {
		t.Fatal("examples/demo.sh sets no PKG= or NAME= line")
	}
	if want := DeriveName("npx", string(pkg[1]), ""); string(name[1]) != want {
		t.Errorf("examples/demo.sh: NAME=%s, but mcpcage names %s %q", name[1], pkg[1], want)
	}
}
