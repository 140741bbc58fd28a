// Package untrusted renders text that came from outside mcpcage (a server's
// names, descriptions, errors, stderr and notifications, a client's
// configuration, a planted project file, a record read back from the audit
// log) for a person at a terminal.
//
// The contract: the rendered form is valid UTF-8 in which every character is
// one a person can see. Nothing in it can move the cursor, change colours,
// set a window title, reorder text (bidirectional controls), hide text
// (zero-width, tag and format characters) or, in Line, start a new line. What
// was escaped stays visible, so hidden text is shown, never interpreted:
//
//	a rune that must not reach the terminal   <U+XXXX>   (U+202E is <U+202E>)
//	a run of Unicode tag characters           <tags:TEXT> (the ASCII they spell)
//	a byte that is not valid UTF-8            <0xXX>     (a raw C1 byte 0x9B is <0x9B>)
//
// Escaped are every rune of category Cc (C0 and C1 controls, DEL) and Cf
// (format: zero-width, bidirectional controls, soft hyphen, tags), private-use
// runes, every space but U+0020, line and paragraph separators, variation
// selectors, blank-looking letters (Hangul fillers, U+3164) and U+FFFD.
//
// Every command that prints a string it did not write itself goes through
// Text or Line; there is no second escaping function in the tree. Output for
// programs (--json) goes through JSON, which writes the same runes as
// \uXXXX escapes: still the same JSON value, and nothing a terminal acts on.
package untrusted

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Line renders s for one line of output: newlines and tabs are escaped too,
// so a name or a stderr line cannot forge further lines.
func Line(s string) string { return render(s, false) }

// Text renders s where it may span lines (a description, instructions):
// newline and tab stay as they are, everything else is escaped as in Line.
func Text(s string) string { return render(s, true) }

// Bytes is Line for bytes as they arrived (a server's stderr line).
func Bytes(b []byte) string { return render(string(b), false) }

func render(s string, multiline bool) string {
	if clean(s, multiline) {
		return s
	}
	var sb strings.Builder
	sb.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&sb, "<0x%02X>", s[i])
		case isTag(r):
			sb.WriteString("<tags:")
			for i < len(s) {
				r, n = utf8.DecodeRuneInString(s[i:])
				if !isTag(r) {
					break
				}
				if r >= 0xE0020 && r <= 0xE007E {
					sb.WriteByte(byte(r - 0xE0000))
				} else {
					fmt.Fprintf(&sb, "<U+%04X>", r)
				}
				i += n
			}
			sb.WriteString(">")
			continue
		case escape(r, multiline):
			fmt.Fprintf(&sb, "<U+%04X>", r)
		default:
			sb.WriteString(s[i : i+n])
		}
		i += n
	}
	return sb.String()
}

// clean is the fast path: plain printable ASCII needs no work.
func clean(s string, multiline bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c < 0x7f || multiline && (c == '\n' || c == '\t') {
			continue
		}
		return false
	}
	return true
}

func isTag(r rune) bool { return r >= 0xE0000 && r <= 0xE007F }

// escape reports whether r must not reach a terminal as itself.
func escape(r rune, multiline bool) bool {
	switch {
	case r == ' ':
		return false
	case r == '\n' || r == '\t':
		return !multiline
	case r == utf8.RuneError:
		return true
	case unicode.Is(unicode.Cc, r), unicode.Is(unicode.Cf, r), unicode.Is(unicode.Co, r):
		return true
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF: // variation selectors
		return true
	case r == 0x034F, r == 0x115F, r == 0x1160, r == 0x17B4, r == 0x17B5, r == 0x180E,
		r == 0x2800, r == 0x3164, r == 0xFFA0:
		return true // marks and letters that draw nothing
	}
	// Everything unprintable left: other spaces (Zs), U+2028/U+2029, unassigned.
	return !unicode.IsPrint(r)
}

// JSON returns the JSON text b with every rune Line would escape written as a
// \uXXXX escape (a surrogate pair above U+FFFF) and every byte that is not
// valid UTF-8 as \ufffd, which is what a decoder reads it as. Encoders leave
// C1 controls, DEL and format runes such as U+202E raw, and a terminal
// acts on them. In valid JSON such runes can only stand inside strings, so
// the value b decodes to is unchanged.
func JSON(b []byte) []byte {
	if jsonClean(b) {
		return b
	}
	out := make([]byte, 0, len(b)+32)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			out = append(out, `\ufffd`...)
		case r < 0x80 && r != 0x7f:
			out = append(out, b[i])
		case r == 0x7f || escape(r, false) || isTag(r):
			if r > 0xffff {
				hi, lo := utf16.EncodeRune(r)
				out = fmt.Appendf(out, `\u%04x\u%04x`, hi, lo)
			} else {
				out = fmt.Appendf(out, `\u%04x`, r)
			}
		default:
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}

// jsonClean is JSON's fast path: ASCII without DEL needs no work.
func jsonClean(b []byte) bool {
	for _, c := range b {
		if c >= 0x7f {
			return false
		}
	}
	return true
}

// Fprintf is fmt.Fprintf for a line of output whose format is mcpcage's own
// and whose arguments are not: every string, byte slice, error and Stringer
// argument is rendered with Line before formatting; numbers pass as they are.
// Line is idempotent, so an argument already rendered is left unchanged.
func Fprintf(w io.Writer, format string, args ...any) (int, error) {
	return fmt.Fprintf(w, format, lineArgs(args)...)
}

// Sprintf is Fprintf into a string.
func Sprintf(format string, args ...any) string {
	return fmt.Sprintf(format, lineArgs(args)...)
}

func lineArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = Line(v)
		case []byte:
			out[i] = Bytes(v)
		case error:
			out[i] = Line(v.Error())
		case fmt.Stringer:
			out[i] = Line(v.String())
		default:
			out[i] = a
		}
	}
	return out
}
