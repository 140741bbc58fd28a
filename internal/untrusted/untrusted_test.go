package untrusted

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestLine(t *testing.T) {
	for in, want := range map[string]string{
		"plain text. ok!":                 "plain text. ok!",
		"é ü 漢字 😀":                        "é ü 漢字 😀",
		"a\u200bb":                        "a<U+200B>b",
		"x\u202ey":                        "x<U+202E>y",
		"\u2066iso\u2069":                 "<U+2066>iso<U+2069>",
		"esc\x1b[31m":                     "esc<U+001B>[31m",
		"csi\u009b2J osc\u009d0;t":        "csi<U+009B>2J osc<U+009D>0;t",
		"raw\x9b2J\x9d":                   "raw<0x9B>2J<0x9D>",
		"bad\xffbyte":                     "bad<0xFF>byte",
		"del\x7f":                         "del<U+007F>",
		"nb\u00a0sp":                      "nb<U+00A0>sp",
		"ls\u2028ps\u2029":                "ls<U+2028>ps<U+2029>",
		"soft\u00adhy":                    "soft<U+00AD>hy",
		"bom\ufeff":                       "bom<U+FEFF>",
		"vs\ufe0f":                        "vs<U+FE0F>",
		"pua\ue000":                       "pua<U+E000>",
		"fill\u3164":                      "fill<U+3164>",
		"fffd\ufffd":                      "fffd<U+FFFD>",
		"line\nnext\ttab\r":               "line<U+000A>next<U+0009>tab<U+000D>",
		"a\U000E0068\U000E0069!":          "a<tags:hi>!",
		"t\U000E0001\U000E0041\U000E007F": "t<tags:<U+E0001>A<U+E007F>>",
	} {
		if got := Line(in); got != want {
			t.Errorf("Line(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTextKeepsLines(t *testing.T) {
	if got := Text("a\nb\tc\u200b\r\x1b"); got != "a\nb\tc<U+200B><U+000D><U+001B>" {
		t.Errorf("Text: %q", got)
	}
	if got := Bytes([]byte("err\x9b\n")); got != "err<0x9B><U+000A>" {
		t.Errorf("Bytes: %q", got)
	}
}

// Every rune of category Cc and Cf is escaped, whatever block it is in.
func TestEveryControlAndFormatRune(t *testing.T) {
	for _, table := range []*unicode.RangeTable{unicode.Cc, unicode.Cf} {
		for _, r16 := range table.R16 {
			for r := rune(r16.Lo); r <= rune(r16.Hi); r += rune(r16.Stride) {
				checkEscaped(t, r)
			}
		}
		for _, r32 := range table.R32 {
			for r := rune(r32.Lo); r <= rune(r32.Hi); r += rune(r32.Stride) {
				checkEscaped(t, r)
			}
		}
	}
}

func checkEscaped(t *testing.T, r rune) {
	t.Helper()
	got := Line(string(r))
	if got == string(r) {
		t.Errorf("%U passed through", r)
	}
	for _, c := range got {
		if !unicode.IsPrint(c) {
			t.Errorf("%U rendered as %q, which holds %U", r, got, c)
		}
	}
}

func TestRenderedIsPrintable(t *testing.T) {
	for b := 0; b < 256; b++ {
		for _, s := range []string{string([]byte{byte(b)}), string(rune(b)), "x" + string(rune(0x2000+b))} {
			v := Line(s)
			if !utf8.ValidString(v) {
				t.Fatalf("invalid UTF-8 from %q", s)
			}
			for _, r := range v {
				if !unicode.IsPrint(r) {
					t.Fatalf("%U left in Line(%q) = %q", r, s, v)
				}
			}
		}
	}
}

func TestFprintfRendersArguments(t *testing.T) {
	var b strings.Builder
	_, _ = Fprintf(&b, "%s: %v (%d)\n", "n\u202eame\n[forged]", errors.New("e\x1b[2J"), 3)
	if got, want := b.String(), "n<U+202E>ame<U+000A>[forged]: e<U+001B>[2J (3)\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if s := Line("a\u200b\n"); Line(s) != s {
		t.Errorf("Line is not idempotent on %q", s)
	}
}

// JSON escapes what Line would, as \uXXXX, and the value stays the same.
func TestJSON(t *testing.T) {
	v := map[string]string{"name": "a\u009b31mb\u202ec\x1bd\x7fe\U000E0041f\u00e9g\u2028h"}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	got := JSON(raw)
	want := `{"name":"a\u009b31mb\u202ec\u001bd\u007fe\udb40\udc41f` + "\u00e9" + `g\u2028h"}`
	if string(got) != want {
		t.Errorf("JSON(%s)\n got %s\nwant %s", raw, got, want)
	}
	var back map[string]string
	if err := json.Unmarshal(got, &back); err != nil || back["name"] != v["name"] {
		t.Errorf("decoded %q, %v; want %q", back["name"], err, v["name"])
	}
	if again := JSON(got); string(again) != string(got) {
		t.Errorf("not idempotent: %s", again)
	}
	if got := JSON([]byte("{\"a\":\"\xff\"}")); string(got) != `{"a":"\ufffd"}` {
		t.Errorf("invalid byte: %s", got)
	}
}
