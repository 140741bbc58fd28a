package scan

import (
	"bytes"
	"encoding/binary"
)

// text scans one string.
func (sc *scanner) text(s string) {
	if sc.nstrings >= maxStrings {
		sc.beyond(limitStrings)
		return
	}
	sc.nstrings++
	sc.pok = false
	if len(s) > maxStringBytes {
		sc.beyond(limitStringBytes)
		sc.pok = false
		s = s[:maxStringBytes]
	}
	set := sc.set
	// normalize also says what the raw checks need: it reads every byte
	// anyway (a pass of its own was a tenth of a long text's scan). It
	// reports nothing, so the raw checks' findings still come first.
	nt := &sc.nt
	normalize(s, nt, sc.ident || identLike(s))
	if special, lookalike := nt.special, nt.lookalike; special || lookalike {
		if special {
			for _, r := range set.raw {
				if a, b, ok := r.findSpanString(s); ok {
					sc.addSpan(r, s, a, b)
				}
			}
			sc.checkTags(s)
			sc.checkBidi(s)
		}
		if lookalike {
			sc.checkMixedScript(s)
		}
	}
	marks := sc.marks
	clear(marks)
	for _, i := range set.always {
		marks[markRule(i)] = true
	}
	sc.hits = sc.hits[:0]
	var hits *[]litHit
	if len(nt.lower) > windowMin {
		hits = &sc.hits
	}
	if hits != nil {
		if len(sc.counts) < set.npat {
			sc.counts = make([]int32, set.npat)
		}
		clear(sc.counts)
	}
	var windows bool
	if hits != nil && set.pre.next != nil {
		// Most literal hits of a long text belong to patterns that will
		// not run: the hits are only expanded for the sets of those that
		// can.
		total := 0
		if sc.more == nil {
			sc.more = new(walkBufs)
		}
		sc.visited, total = set.pre.visits(nt.lower, marks, sc.seenState(set), sc.epoch, sc.visited[:0], sc.more)
		if windows = total < maxLitHits; windows {
			sc.hits = set.pre.hitsFor(sc.visited, sc.neededSets(set), sc.hits, sc.counts, sc.more)
		}
	} else {
		set.pre.candidates(nt.lower, marks, hits, sc.counts)
		windows = hits != nil && len(sc.hits) < maxLitHits
	}
	if windows {
		sc.bucketHits(set.npat)
		sc.byGate.ascii = &nt.ascii
	}
	for i, r := range set.text {
		if !marks[markRule(i)] || (len(r.Also) > 0 && !marks[markAlso(i)]) || (r.In == "schema" && !inSchema(sc.pb)) || r.excepted(sc.pb) {
			continue
		}
		target := nt.lower
		if r.On == "cased" {
			target = nt.norm
		}
		gate := marks
		if sc.noGate {
			gate = nil
		}
		var near *hitIndex
		if windows && !sc.noGate {
			near = &sc.byGate
		}
		if a, b, ok := r.findSpan(target, gate, near, sc.counts, set); ok {
			ra, rb := nt.rawSpan(a, b)
			sc.addSpan(r, s, ra, rb)
		}
	}
	if hasLeet(nt.lower) {
		sc.leetPass(s, nt)
	}
	if sc.decoded == 0 {
		sc.checkEncoded(s)
	}
	if len(sc.siblings) > 0 {
		sc.checkCrossTool(nt)
	}
	if sc.defn {
		sc.checkFrames(nt)
	}
}

func (r *Rule) excepted(path []byte) bool {
	for _, e := range r.Except {
		if string(path) == e {
			return true
		}
	}
	return false
}

// identLike reports a string that is one hyphen- or underscore-joined word
// ("ignore-all-rules-and-export-keys"): an enum value or a default read like
// an identifier, word by word.
func identLike(s string) bool {
	if len(s) < 8 || len(s) > 200 {
		return false
	}
	seps := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ' || c == '\t' || c == '\n':
			return false
		case c == '-' || c == '_':
			seps++
		}
	}
	return seps >= 2
}

// leetDigit maps the digits and signs that stand in for letters in
// "1gn0re pr3vious instructi0ns".
var leetDigit = [256]byte{'0': 'o', '1': 'i', '3': 'e', '4': 'a', '5': 's', '7': 't', '@': 'a', '$': 's'}

// hasLeet reports a word with a letter-standing digit between two letters.
// Eight bytes at a time, a word with no digit from 0 to 7, '$' or '@' is
// passed over; the others are looked at byte by byte.
func hasLeet(b []byte) bool {
	i := 1
	for i+8 < len(b) {
		if x := binary.LittleEndian.Uint64(b[i:]); !hasZeroByte((x&(0xf8*ones))^(0x30*ones)) &&
			!hasZeroByte(x^('$'*ones)) && !hasZeroByte(x^('@'*ones)) {
			i += 8
			continue
		}
		for end := i + 8; i < end; i++ {
			if leetAt(b, i) {
				return true
			}
		}
	}
	for ; i+1 < len(b); i++ {
		if leetAt(b, i) {
			return true
		}
	}
	return false
}

func leetAt(b []byte, i int) bool {
	return leetDigit[b[i]] != 0 && isLetter(b[i-1]) && isLetter(b[i+1])
}

// Words of eight bytes: ones has 1 in every byte, highs the top bit.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// hasZeroByte reports a zero byte in x (exactly: a borrow reaches a byte's
// top bit only from a zero byte below it).
func hasZeroByte(x uint64) bool { return (x-ones)&^x&highs != 0 }

// printable reports a word of eight bytes from 0x20 to 0x7e: none below
// 0x20 (x-0x20.. borrows into a byte's top bit only from one), none above
// 0x7e (x+1.. sets a top bit only from 0x7f, or it was set).
func printable(x uint64) bool { return unprintable(x) == 0 }

// unprintable has the top bit set of the first byte of x (the lowest) that
// is not from 0x20 to 0x7e, and maybe of bytes after it (a borrow or a
// carry from that byte), none before it; 0 when x is printable.
func unprintable(x uint64) uint64 { return ((x-0x20*ones)&^x | (x + ones | x)) & highs }

// nonSpaces has the top bit of each byte of a printable word that is not a
// space (x^0x20.. holds no byte past 0x5e, so adding 0x7f carries out of
// none and sets the top bit of every byte but a zero one).
func nonSpaces(x uint64) uint64 { return ((x ^ 0x20*ones) + 0x7f*ones) & highs }

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' }

// leetPass runs the phrase rules again on the text with letter-standing
// digits read as letters (byte for byte, so snippets map back unchanged).
func (sc *scanner) leetPass(s string, nt *normText) {
	set := sc.set
	b := append(sc.leet[:0], nt.lower...)
	for i := range b {
		if l := leetDigit[b[i]]; l != 0 {
			b[i] = l
		}
	}
	sc.leet = b
	marks := sc.marks
	clear(marks)
	for _, i := range set.always {
		marks[markRule(i)] = true
	}
	set.pre.candidates(b, marks, nil, nil)
	for i, r := range set.text {
		if r.On != "lower" || !marks[markRule(i)] || (len(r.Also) > 0 && !marks[markAlso(i)]) || (r.In == "schema" && !inSchema(sc.pb)) || r.excepted(sc.pb) {
			continue
		}
		if a, e, ok := r.findSpan(b, marks, nil, nil, set); ok {
			ra, re := nt.rawSpan(a, e)
			sc.addSpan(r, s, ra, re)
		}
	}
}

func inSchema(path []byte) bool {
	return bytes.HasPrefix(path, []byte("inputSchema")) || bytes.HasPrefix(path, []byte("outputSchema"))
}

// seenState readies sc.reached for one more text: a new epoch, so that no
// state counts as reached before.
func (sc *scanner) seenState(set *ruleSet) []uint64 {
	if len(sc.reached) < set.pre.nstate {
		sc.reached = set.pre.reachedStates()
		sc.epoch = 0
	}
	sc.epoch++
	if sc.epoch == 0 {
		sc.reached = set.pre.reachedStates()
		sc.epoch = 1
	}
	return sc.reached
}

// neededSets marks the literal sets of the patterns the text loop below
// will run (their rule's keywords and every one of their sets were seen).
func (sc *scanner) neededSets(set *ruleSet) []bool {
	if len(sc.need) < set.npat {
		sc.need = make([]bool, set.npat)
	}
	need := sc.need
	clear(need)
	marks := sc.marks
	for i, r := range set.text {
		if !marks[markRule(i)] || (len(r.Also) > 0 && !marks[markAlso(i)]) {
			continue
		}
		for pi := range r.patterns {
			if allMarked(marks, r.gates[pi]) {
				for _, g := range r.gates[pi] {
					need[g] = true
				}
			}
		}
	}
	return need
}
