package scan

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// Format writes findings one per line, in columns, each line starting with
// indent:
//
//	! HIGH    conceal-from-user  description: "Do not tell the user"       asks the model to hide something from you
//
// The columns are: "! ", the severity padded to 8, the rule id padded to the
// longest id plus 2, `path: "snippet"` padded to the longest plus 3, and the
// explanation. Snippets are already made visible (Visible), so nothing
// written here can drive a terminal.
func Format(w io.Writer, indent string, fs []Finding) error {
	ruleW, locW := 0, 0
	locs := make([]string, len(fs))
	for i, f := range fs {
		locs[i] = location(f)
		ruleW = max(ruleW, utf8.RuneCountInString(f.Rule))
		locW = max(locW, utf8.RuneCountInString(locs[i]))
	}
	for i, f := range fs {
		_, err := fmt.Fprintf(w, "%s! %s%s%s%s\n", indent,
			pad(f.Severity.String(), 8), pad(f.Rule, ruleW+2), pad(locs[i], locW+3), f.Explanation)
		if err != nil {
			return err
		}
	}
	return nil
}

// Summary is the closing line under a tool's findings, "" when none is high:
//
//	3 high-severity signs of hidden instructions in "add_note"
func Summary(name string, fs []Finding) string {
	n := Count(fs, High)
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%s in %s", HighCount(n), quote(untrusted.Line(name)))
}

// HighCount says "1 high-severity sign of hidden instructions" or "N ...signs...".
func HighCount(n int) string {
	if n == 1 {
		return "1 high-severity sign of hidden instructions"
	}
	return fmt.Sprintf("%d high-severity signs of hidden instructions", n)
}

func location(f Finding) string {
	return untrusted.Line(f.Path) + ": " + quote(f.Snippet)
}

func quote(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}

func pad(s string, w int) string {
	n := utf8.RuneCountInString(s)
	if n >= w {
		return s + " "
	}
	return s + strings.Repeat(" ", w-n)
}
