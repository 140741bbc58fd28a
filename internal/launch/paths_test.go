package launch

import (
	"reflect"
	"testing"
)

func TestExpandArgs(t *testing.T) {
	args := []string{"-y", "~", "~/notes", "--root=~/src", ".", "..", "./data", "../up", "docs", "/abs", "~ana", "--flag", "stdio", "x~/y"}
	got, mapped := ExpandArgs(args, "/home/me", "/work/proj")
	want := []string{"-y", "/home/me", "/home/me/notes", "--root=/home/me/src", "/work/proj", "/work", "/work/proj/data", "/work/up", "docs", "/abs", "~ana", "--flag", "stdio", "x~/y"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ExpandArgs:\n got %q\nwant %q", got, want)
	}
	if len(mapped) != 7 || mapped[2] != (Mapped{Where: "argument 4", From: "~/src", To: "/home/me/src"}) {
		t.Errorf("mapped: %+v", mapped)
	}
	if args[1] != "~" {
		t.Error("ExpandArgs changed its input")
	}
	// Without a home or a directory, nothing is guessed.
	got, mapped = ExpandArgs([]string{"~/x", "."}, "", "")
	if !reflect.DeepEqual(got, []string{"~/x", "."}) || mapped != nil {
		t.Errorf("without home and dir: %q %v", got, mapped)
	}
}
