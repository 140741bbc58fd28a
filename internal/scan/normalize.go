package scan

import (
	"encoding/binary"
	"slices"
	"sort"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normText is one string prepared for the phrase rules, with a map back to
// the raw bytes so that a snippet shows what the server actually sent.
type normText struct {
	raw   string
	norm  []byte   // NFKC-style compatibility mapping, invisibles removed, confusables mapped, case kept
	lower []byte   // norm with ASCII letters lowered: same byte offsets as norm
	segs  []rawSeg // the map back to raw offsets, in norm order (rawSpan)

	// What the raw checks have to look at in raw: special is a character
	// the raw rules are about (control, invisible, bidi, tag, variation
	// selector, private use, C1, invalid UTF-8) or a run of 12 or more
	// spaces, newlines and tabs (padding); lookalike a letter of another
	// script that looks like a Latin one (the mixed-script check), or any
	// of the special characters outside ASCII. Plain text, most of what
	// servers send, skips the raw checks.
	special, lookalike bool

	ascii asciiIndex // where norm (and lower) has bytes outside ASCII
}

// rawSeg maps the bytes of norm from at up to the next segment's at. A run
// (copied ASCII) maps byte at+x to the raw byte start+x, the last one to
// [start+x, end) (a run of whitespace after it may widen it); any other
// segment maps each of its bytes to the raw character [start, end) that
// produced it. One segment per run instead of two offsets per byte: writing
// those was a quarter of normalizing.
type rawSeg struct {
	at, start, end int32
	run            bool
}

// plainByte reports whether s[j] goes on a run of printable ASCII and
// single spaces.
func plainByte(s string, j int) bool {
	return s[j] > ' ' && s[j] < 0x7f || s[j] == ' ' && s[j-1] != ' '
}

// load64 reads s[i:i+8] as a little-endian word (the compiler makes it one
// load).
func load64(s string, i int) uint64 {
	s = s[i : i+8] // one bounds check, not eight
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// lower64 lowers the letters of eight bytes of printable ASCII: a byte
// from 'A' to 'Z' gets 0x20 added. Bytes below 0x80 do not carry: the top
// bit of a byte of x+(0x80-'A') is set from 'A' on, of x+(0x80-'Z'-1) past
// 'Z'.
func lower64(x uint64) uint64 {
	up := (x + (0x80-'A')*ones) &^ (x + (0x80-'Z'-1)*ones) & highs
	return x | up>>2
}

// invisible reports characters that render as nothing (or nearly nothing)
// and so can split a word or carry text a person never sees.
func invisible(r rune) bool {
	switch {
	case r == 0x00AD, r == 0x034F, r == 0x061C, r == 0x115F, r == 0x1160, r == 0x17B4, r == 0x17B5,
		r == 0x180E, r == 0x3164, r == 0xFEFF, r == 0xFFA0:
		return true
	case r >= 0x200B && r <= 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2060 && r <= 0x206F:
		return true
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF:
		return true
	case r >= 0xE0000 && r <= 0xE007F:
		return true
	}
	return false
}

// tagASCII returns the ASCII character a Unicode tag character stands for.
func tagASCII(r rune) (byte, bool) {
	if r >= 0xE0020 && r <= 0xE007E {
		return byte(r - 0xE0000), true
	}
	return 0, false
}

// confusable maps letters of other scripts that look like Latin letters, so
// that "ignоre" with a Cyrillic о reads as "ignore" to the phrase rules.
var confusable = map[rune]rune{
	// Cyrillic
	'а': 'a', 'в': 'b', 'е': 'e', 'к': 'k', 'м': 'm', 'н': 'h', 'о': 'o', 'р': 'p', 'с': 'c', 'т': 't',
	'у': 'y', 'х': 'x', 'ѕ': 's', 'і': 'i', 'ј': 'j', 'ԁ': 'd', 'һ': 'h', 'ԛ': 'q', 'ԝ': 'w', 'ү': 'y',
	'ɡ': 'g', 'ո': 'n', 'ս': 'u', 'ց': 'g', 'օ': 'o', 'ӏ': 'l',
	'А': 'A', 'В': 'B', 'Е': 'E', 'К': 'K', 'М': 'M', 'Н': 'H', 'О': 'O', 'Р': 'P', 'С': 'C', 'Т': 'T',
	'У': 'Y', 'Х': 'X', 'Ѕ': 'S', 'І': 'I', 'Ј': 'J', 'Ԁ': 'D', 'Һ': 'H', 'Ԛ': 'Q', 'Ԝ': 'W', 'Ү': 'Y',
	// Greek
	'α': 'a', 'ε': 'e', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p', 'τ': 't', 'υ': 'u', 'χ': 'x',
	'Α': 'A', 'Β': 'B', 'Ε': 'E', 'Ζ': 'Z', 'Η': 'H', 'Ι': 'I', 'Κ': 'K', 'Μ': 'M', 'Ν': 'N', 'Ο': 'O',
	'Ρ': 'P', 'Τ': 'T', 'Υ': 'Y', 'Χ': 'X',
	// Latin look-alikes outside ASCII that NFKC keeps
	'ı': 'i', 'ȷ': 'j', 'ℓ': 'l', 'ǀ': 'l',
}

// styledLetter maps the enclosed Latin capitals that have no compatibility
// decomposition (negative circled U+1F150-1F169, negative squared
// U+1F170-1F189) to the letters they show: "🅢🅔🅝🅓" is "SEND" to a
// model.
func styledLetter(r rune) (byte, bool) {
	switch {
	case r >= 0x1F150 && r <= 0x1F169:
		return byte('A' + r - 0x1F150), true
	case r >= 0x1F170 && r <= 0x1F189:
		return byte('A' + r - 0x1F170), true
	}
	return 0, false
}

// normalize prepares s for the phrase rules. Per character: invisible
// characters are dropped, tag characters become the ASCII they encode (so a
// hidden message is read, not skipped), every other character gets its
// compatibility decomposition (NFKD, which includes NFKC's mapping of
// full-width, mathematical and ligature forms) with combining marks dropped,
// then confusables are mapped and all whitespace becomes a space (newlines
// stay); a run of whitespace becomes one (a newline if it holds one). Working per character keeps the map to raw offsets exact. For an
// identifier (a tool or property name), "_", "-", "." and a lower-to-upper
// case change also separate words, so ignore_previous_instructions and
// ignorePreviousInstructions read as the phrase they spell.
func normalize(s string, nt *normText, ident bool) {
	nt.raw = s
	if cap(nt.norm) < len(s) {
		n := len(s) + len(s)/4 + 16
		nt.norm, nt.lower = make([]byte, 0, n), make([]byte, 0, n)
	}
	b, lb := nt.norm[:0], nt.lower[:0]
	segs := nt.segs[:0]
	wide, wideAll := nt.ascii.wide[:0], true
	emit := func(c byte, i, j int) {
		if (c == ' ' || c == '\n') && len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\n') {
			// A run of whitespace reads as one separator: a newline if it
			// holds one, else a space. Rules (and their literal gates)
			// rely on never seeing two in a row.
			if c == '\n' {
				b[len(b)-1], lb[len(lb)-1] = '\n', '\n'
			}
			// The separator now reaches to j: the end of a run's last
			// byte, or of a segment of its own.
			last := &segs[len(segs)-1]
			if !last.run && int(last.at) < len(b)-1 {
				segs = append(segs, rawSeg{at: int32(len(b) - 1), start: last.start, end: int32(j)})
			} else {
				last.end = int32(j)
			}
			return
		}
		if n := len(segs); n == 0 || segs[n-1].run || segs[n-1].start != int32(i) || segs[n-1].end != int32(j) {
			segs = append(segs, rawSeg{at: int32(len(b)), start: int32(i), end: int32(j)})
		}
		if c >= utf8.RuneSelf {
			if len(wide) < maxWide {
				wide = append(wide, int32(len(b)))
			} else {
				wideAll = false
			}
		}
		b = append(b, c)
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		lb = append(lb, c)
	}
	emitRune := func(r rune, i, j int) {
		if r < utf8.RuneSelf {
			emit(byte(r), i, j)
			return
		}
		var buf [4]byte
		n := utf8.EncodeRune(buf[:], r)
		for k := 0; k < n; k++ {
			emit(buf[k], i, j)
		}
	}
	var dec []byte
	// What the raw checks need (rawNeedsBytes reads the same byte by
	// byte): blank is the length of the current run of spaces, newlines
	// and tabs in s.
	blank, special, lookalike := 0, false, false
	for i := 0; i < len(s); {
		c := s[i]
		if c > ' ' && c < 0x7f && !ident {
			// A run of printable ASCII and single spaces, most of any
			// text: the same as emit byte by byte, without its
			// whitespace bookkeeping, copied and lowered as a whole. It
			// holds nothing the raw checks look for, and no two blanks
			// in a row.
			k := len(b)
			if cap(b)-k < len(s)-i || cap(lb)-k < len(s)-i {
				b, lb = slices.Grow(b, len(s)-i), slices.Grow(lb, len(s)-i)
			}
			j := copyPlain(b[k:k+len(s)-i], lb[k:k+len(s)-i], s, i)
			segs = append(segs, rawSeg{at: int32(k), start: int32(i), end: int32(j), run: true})
			b, lb = b[:k+j-i], lb[:k+j-i]
			blank = 0
			if s[j-1] == ' ' {
				blank = 1
			}
			i = j
			continue
		}
		if c < utf8.RuneSelf {
			if c == ' ' || c == '\n' || c == '\t' {
				if blank++; blank >= 12 {
					special = true // padding
				}
			} else {
				blank = 0
				if c < 0x20 || c == 0x7f {
					special = true
				}
			}
			switch {
			case c == '\n':
				emit(c, i, i+1)
			case ident && (c == '_' || c == '-' || c == '.'):
				emit(' ', i, i+1)
			case ident && c >= 'A' && c <= 'Z' && i > 0 && s[i-1] >= 'a' && s[i-1] <= 'z':
				emit(' ', i, i+1)
				emit(c, i, i+1)
			case c == '\t' || c == '\r' || c == '\v' || c == '\f':
				emit(' ', i, i+1)
			case c < 0x20 || c == 0x7f:
				// control characters (ANSI escapes) are dropped here and
				// reported by the raw rules.
			default:
				emit(c, i, i+1)
			}
			i++
			continue
		}
		blank = 0
		r, n := utf8.DecodeRuneInString(s[i:])
		j := i + n
		if r == utf8.RuneError && n == 1 {
			special, lookalike = true, true
			i = j
			continue
		}
		if t, ok := tagASCII(r); ok {
			special, lookalike = true, true // a tag character is invisible
			emit(t, i, j)
			i = j
			continue
		}
		if invisible(r) {
			special, lookalike = true, true
			i = j
			continue
		}
		if r < 0xa0 || privateUse(r) || r == utf8.RuneError {
			// (r >= 0x80: a rune, not a byte)
			special, lookalike = true, true
		}
		if m, ok := confusable[r]; ok {
			lookalike = true
			emit(byte(m), i, j)
			i = j
			continue
		}
		if m, ok := styledLetter(r); ok {
			lookalike = true
			emit(m, i, j)
			i = j
			continue
		}
		if r == 0x2028 || r == 0x2029 || r == 0x85 {
			emit('\n', i, j)
			i = j
			continue
		}
		if unicode.IsSpace(r) {
			emit(' ', i, j)
			i = j
			continue
		}
		dec = norm.NFKD.AppendString(dec[:0], s[i:j])
		for k := 0; k < len(dec); {
			d, dn := utf8.DecodeRune(dec[k:])
			k += dn
			if unicode.Is(unicode.Mn, d) || invisible(d) {
				continue
			}
			if m, ok := confusable[d]; ok {
				d = m
			} else if unicode.IsSpace(d) {
				d = ' '
			}
			emitRune(d, i, j)
		}
		i = j
	}
	nt.norm, nt.lower = b, lb
	nt.segs = segs
	nt.special, nt.lookalike = special, lookalike
	nt.ascii = asciiIndex{wide: wide, known: wideAll}
}

// maxWide bounds asciiIndex.wide: a text with more bytes outside ASCII is
// counted out byte by byte, as before the index.
const maxWide = 1 << 12

// asciiIndex says where the bytes outside ASCII of a normalized text are,
// for counting characters out around literal hits (backChars,
// forwardChars): with known, wide holds every offset of such a byte, in
// order; without, nothing is known (too many) and the text itself is read.
type asciiIndex struct {
	wide  []int32
	known bool
}

// only reports whether s[lo:hi] holds only ASCII (s is the text x indexes,
// or another with the same bytes outside ASCII at the same offsets).
func (x *asciiIndex) only(s []byte, lo, hi int) bool {
	if !x.known {
		return asciiOnly(s[lo:hi])
	}
	w := x.wide
	k := sort.Search(len(w), func(k int) bool { return int(w[k]) >= lo })
	return k == len(w) || int(w[k]) >= hi
}

// copyPlain copies the run of printable ASCII and single spaces that starts
// at s[i] (a printable byte, not a space) into dst, and lowered into ldst
// (both at least len(s)-i long), eight bytes a step while it lasts, and
// returns where the run ends: the same as testing (plainByte) and copying
// byte by byte (TestWordPassesAsBytes).
func copyPlain(dst, ldst []byte, s string, i int) int {
	c := s[i]
	dst[0], ldst[0] = c, lowerByte(c)
	n, j := 1, i+1
	for j+8 <= len(s) {
		x := load64(s, j)
		if !printable(x) {
			break
		}
		// No two spaces in a row, also across the previous byte.
		sp := ^nonSpaces(x) & highs
		if sp&(sp<<8) != 0 || sp&0x80 != 0 && s[j-1] == ' ' {
			break
		}
		// (n+8 <= j+8-i <= len(s)-i: the words fit.)
		binary.LittleEndian.PutUint64(dst[n:], x)
		binary.LittleEndian.PutUint64(ldst[n:], lower64(x))
		n, j = n+8, j+8
	}
	for j < len(s) && plainByte(s, j) {
		dst[n], ldst[n] = s[j], lowerByte(s[j])
		n, j = n+1, j+1
	}
	return j
}

func lowerByte(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// rawSpan maps a byte span of the normalized text back to the raw text.
func (nt *normText) rawSpan(a, b int) (int, int) {
	if a >= b || a >= len(nt.norm) {
		return 0, 0
	}
	start, _ := nt.rawByte(a)
	_, end := nt.rawByte(b - 1)
	return start, end
}

// rawByte is the raw span that byte k of the normalized text stands for.
func (nt *normText) rawByte(k int) (int, int) {
	segs := nt.segs
	i := sort.Search(len(segs), func(i int) bool { return int(segs[i].at) > k }) - 1
	sg := segs[i]
	if !sg.run {
		return int(sg.start), int(sg.end)
	}
	x := int(sg.start) + k - int(sg.at)
	if i+1 < len(segs) && k == int(segs[i+1].at)-1 || i+1 == len(segs) && k == len(nt.norm)-1 {
		return x, int(sg.end) // the run's last byte
	}
	return x, x + 1
}

func privateUse(r rune) bool {
	return (r >= 0xE000 && r <= 0xF8FF) || (r >= 0xF0000 && r <= 0xFFFFD) || (r >= 0x100000 && r <= 0x10FFFD)
}
