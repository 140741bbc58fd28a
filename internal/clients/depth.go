package clients

import "fmt"

// MaxNesting bounds how deep a configuration file's arrays and objects (or
// TOML arrays and inline tables) may nest. Client configurations are a few
// levels deep; a planted project file of millions of brackets would
// otherwise take the parsers, which recurse, past the stack.
const MaxNesting = 100

// checkNesting reports a file whose brackets nest deeper than MaxNesting,
// before any parser reads it: one pass over the bytes, no recursion.
// Brackets inside strings and comments do not count: JSON strings with
// escapes and JSONC comments (// and /* */); for TOML, basic and literal
// strings, their multi-line forms, and # comments. A file the scan
// misreads is at worst refused or parsed as before: the parser still
// judges its syntax.
func checkNesting(data []byte, f Format) error {
	depth, max := 0, 0
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '[' || c == '{':
			depth++
			if depth > max {
				max = depth
			}
			if depth > MaxNesting {
				return fmt.Errorf("nested deeper than %d levels; not read", MaxNesting)
			}
		case c == ']' || c == '}':
			if depth > 0 {
				depth--
			}
		case c == '"' && f == TOML && hasAt(data, i, `"""`):
			i = skipPast(data, i+3, `"""`, true)
		case c == '\'' && f == TOML && hasAt(data, i, `'''`):
			i = skipPast(data, i+3, `'''`, false)
		case c == '"':
			i = skipString(data, i+1, '"', true)
		case c == '\'' && f == TOML:
			i = skipString(data, i+1, '\'', false)
		case c == '#' && f == TOML:
			i = skipPast(data, i+1, "\n", false)
		case c == '/' && f == JSON && hasAt(data, i, "//"):
			i = skipPast(data, i+2, "\n", false)
		case c == '/' && f == JSON && hasAt(data, i, "/*"):
			i = skipPast(data, i+2, "*/", false)
		}
	}
	return nil
}

func hasAt(b []byte, i int, s string) bool {
	return len(b)-i >= len(s) && string(b[i:i+len(s)]) == s
}

// skipString returns the index of the quote that closes a string opened
// before i (a line break ends a one-line string too), or the last index.
func skipString(b []byte, i int, quote byte, escapes bool) int {
	for ; i < len(b); i++ {
		switch b[i] {
		case '\\':
			if escapes {
				i++
			}
		case quote, '\n':
			return i
		}
	}
	return len(b) - 1
}

// skipPast returns the index of the last byte of the first end at or
// after i, or the last index.
func skipPast(b []byte, i int, end string, escapes bool) int {
	for ; i < len(b); i++ {
		if escapes && b[i] == '\\' {
			i++
			continue
		}
		if hasAt(b, i, end) {
			return i + len(end) - 1
		}
	}
	return len(b) - 1
}
