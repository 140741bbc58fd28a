package secrets

import (
	"bytes"
	"encoding/base64"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normalize appends to dst what a server may read s as, one step of
// decoding away: format characters (Unicode Cf: zero-width spaces and
// joiners, the BOM, soft hyphens) dropped, compatibility forms folded
// (NFKC: fullwidth letters are ASCII ones), and the escapes %XX, \xXX and
// \uXXXX decoded. changed is false, and dst unchanged, when s has none of
// them (plain ASCII without '%' or '\' is not copied).
func normalize(dst, s []byte) (out []byte, changed bool) {
	plain := true
	for _, c := range s {
		if c >= utf8.RuneSelf || c == '%' || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		return dst, false
	}
	start := len(dst)
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			dst = append(dst, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 3
			continue
		case c == '\\' && i+3 < len(s) && (s[i+1] == 'x' || s[i+1] == 'X') && isHex(s[i+2]) && isHex(s[i+3]):
			dst = append(dst, unhex(s[i+2])<<4|unhex(s[i+3]))
			i += 4
			continue
		case c == '\\' && i+5 < len(s) && s[i+1] == 'u' && isHex(s[i+2]) && isHex(s[i+3]) && isHex(s[i+4]) && isHex(s[i+5]):
			r := rune(unhex(s[i+2]))<<12 | rune(unhex(s[i+3]))<<8 | rune(unhex(s[i+4]))<<4 | rune(unhex(s[i+5]))
			if !unicode.Is(unicode.Cf, r) {
				dst = utf8.AppendRune(dst, r)
			}
			i += 6
			continue
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(s[i:])
			if r != utf8.RuneError && unicode.Is(unicode.Cf, r) {
				i += n
				continue
			}
			dst = append(dst, s[i:i+n]...)
			i += n
			continue
		}
		dst = append(dst, c)
		i++
	}
	// Fold what is left (fullwidth, ligatures, circled letters) into its
	// plain form; ASCII is its own fold.
	body := dst[start:]
	if !asciiOnly(body) {
		folded := norm.NFKC.Bytes(body)
		dst = append(dst[:start], folded...)
	}
	return dst, true
}

func asciiOnly(s []byte) bool {
	for _, c := range s {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// keyBodyMin is the length of a base64 run read for the start of a key: 44
// characters decode to 33 bytes, more than any prefix keyDER looks at.
const keyBodyMin = 44

// keyBody reports whether s holds the body of a private key without its
// PEM header: a run of base64 whose start decodes to the start of a DER
// private key (PKCS#1 RSA or DSA, PKCS#8, SEC1 EC) or of an OpenSSH key.
// Public keys and certificates start otherwise and are not reported. A DER
// SEQUENCE encodes to a run that starts with 'M', an OpenSSH key to one
// that starts with "b3BlbnNzaC1rZXktdjE": only runs that start so are
// decoded.
func keyBody(s []byte) bool {
	if i := bytes.Index(s, []byte("b3BlbnNzaC1rZXktdjE")); i >= 0 && keyRun(s, i) {
		return true
	}
	for from := 0; ; {
		j := bytes.IndexByte(s[from:], 'M')
		if j < 0 {
			return false
		}
		i := from + j
		if keyRun(s, i) {
			return true
		}
		from = i + 1
	}
}

// keyRun reports whether a base64 run starts at s[i] and its first
// keyBodyMin characters decode to the start of a private key.
func keyRun(s []byte, i int) bool {
	if i+keyBodyMin > len(s) || i > 0 && isBase64(s[i-1]) {
		return false
	}
	for _, c := range s[i : i+keyBodyMin] {
		if !isBase64(c) {
			return false
		}
	}
	var dec [33]byte
	n, err := base64.StdEncoding.Decode(dec[:], s[i:i+keyBodyMin])
	return err == nil && keyDER(dec[:n])
}

func isBase64(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/'
}

// keyDER reports the start of a private key's encoding: "openssh-key-v1\0",
// or a DER SEQUENCE whose first member is a version INTEGER 0 followed by
// an INTEGER (PKCS#1 RSA, DSA) or a SEQUENCE (PKCS#8), or version 1
// followed by an OCTET STRING (SEC1 EC) or a SEQUENCE (PKCS#8 v2).
func keyDER(b []byte) bool {
	if len(b) >= 15 && string(b[:15]) == "openssh-key-v1\x00" {
		return true
	}
	if len(b) < 8 || b[0] != 0x30 {
		return false
	}
	i := 2
	switch {
	case b[1] < 0x80:
	case b[1] == 0x81:
		i = 3
	case b[1] == 0x82:
		i = 4
	default:
		return false
	}
	if len(b) < i+4 || b[i] != 0x02 || b[i+1] != 0x01 {
		return false
	}
	v, next := b[i+2], b[i+3]
	return v == 0 && (next == 0x02 || next == 0x30) || v == 1 && (next == 0x04 || next == 0x30)
}
