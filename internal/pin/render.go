package pin

import (
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/sergi/go-diff/diffmatchpatch"

	"github.com/mcpcage/mcpcage/internal/untrusted"
)

// FieldText is how diff shows one member's value: a string as its text, cut
// into lines after each sentence so that a change lands on the sentence it
// touches; anything else as indented canonical JSON. Either way invisible
// characters are made Visible.
func FieldText(v []byte) string {
	c, err := Canonical(v)
	if err != nil || len(c) == 0 {
		return untrusted.Text(string(v))
	}
	if c[0] == '"' {
		var s string
		if json.Unmarshal(c, &s) == nil {
			return splitSentences(untrusted.Text(s))
		}
	}
	val := jsontext.Value(c)
	if err := val.Indent(jsontext.WithIndent("  ")); err != nil {
		return untrusted.Text(string(c))
	}
	return untrusted.Text(string(val))
}

func splitSentences(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte(s[i])
		if (s[i] == '.' || s[i] == '!' || s[i] == '?' || s[i] == ':') && i+1 < len(s) && s[i+1] == ' ' {
			b.WriteByte('\n')
			i++ // the space moves to the line break
		}
	}
	return b.String()
}

// DiffLine is one line of a unified diff: Op is ' ', '-' or '+'; a line with
// Op '@' stands for unchanged lines left out.
type DiffLine struct {
	Op   byte
	Text string
}

// Unified diffs two texts line by line (github.com/sergi/go-diff), keeping
// context lines of unchanged text around each change.
func Unified(old, cur string, context int) []DiffLine {
	dmp := diffmatchpatch.New()
	a, b, lines := dmp.DiffLinesToChars(old, cur)
	diffs := dmp.DiffCharsToLines(dmp.DiffMain(a, b, false), lines)
	var all []DiffLine
	for _, d := range diffs {
		op := byte(' ')
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			op = '-'
		case diffmatchpatch.DiffInsert:
			op = '+'
		}
		text := strings.TrimSuffix(d.Text, "\n")
		for _, l := range strings.Split(text, "\n") {
			all = append(all, DiffLine{Op: op, Text: l})
		}
	}
	keep := make([]bool, len(all))
	for i, l := range all {
		if l.Op == ' ' {
			continue
		}
		for j := max(0, i-context); j <= min(len(all)-1, i+context); j++ {
			keep[j] = true
		}
	}
	var out []DiffLine
	skipped := false
	for i, l := range all {
		if !keep[i] {
			skipped = true
			continue
		}
		if skipped {
			out = append(out, DiffLine{Op: '@', Text: "..."})
		}
		skipped = false
		out = append(out, l)
	}
	if skipped {
		out = append(out, DiffLine{Op: '@', Text: "..."})
	}
	return out
}

// FieldValues returns a changed member's value before and after, nil where
// the member is absent. The field "" stands for the whole item when it is not
// an object (instructions).
func (c Change) FieldValues(field string) (old, cur []byte) {
	get := func(v jsontext.Value) []byte {
		if v == nil {
			return nil
		}
		cv, err := CanonicalItem(c.Kind, v)
		if err != nil {
			return v
		}
		return members(cv)[field]
	}
	return get(c.Old), get(c.New)
}
