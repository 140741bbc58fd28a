package scan

import (
	"encoding/binary"
	"sort"
)

// Long texts: a gated pattern runs only on windows of the text around the
// places where one of its required literals occurs, reaching as many
// characters to each side as its longest possible match (maxMatchLen; a window's start moves
// back to a line or word start). Every match contains such a literal, so a
// window holds every match that runs through it, except one with a single
// word longer than unboundedRun bytes past the word's start; a pattern with
// an unbounded gap that can hold a space (.*?) reads the whole text. The
// cost of the big patterns then follows the places that could match, not
// the length of the text.
const (
	windowMin = 256  // texts up to this length are scanned whole
	maxReach  = 2048 // patterns that can match more than this always read the whole text
)

// findSpan returns the span of the snippet of the rule's first match in s
// that no "unless" pattern vetoes. With marks, a pattern runs only when every
// one of its literal sets has a string in s (else it cannot match); with
// near, it runs only on windows around the hits of its rarest set.
func (r *Rule) findSpan(s []byte, marks []bool, near *hitIndex, counts []int32, set *ruleSet) (int, int, bool) {
	for pi := range r.patterns {
		gates := r.gates[pi]
		if marks != nil && (!allMarked(marks, gates) || !r.nearIn(pi, s)) {
			continue
		}
		if near != nil && len(gates) > 0 && r.reach[pi] <= maxReach && set != nil {
			g := gates[0]
			for _, h := range gates[1:] {
				if counts[h] < counts[g] {
					g = h
				}
			}
			if a, b, ok := r.findInWindows(pi, s, g, gates, near, set.before[g], set.after[g]); ok {
				return a, b, true
			}
			continue
		}
		if a, b, ok := r.matchIn(pi, s, 0); ok {
			return a, b, true
		}
	}
	return 0, 0, false
}

func allMarked(marks []bool, gates []int32) bool {
	for _, g := range gates {
		if !marks[markPattern(int(g))] {
			return false
		}
	}
	return true
}

// findInWindows runs pattern pi on the merged windows around the literal
// hits of set g, in text order: from before characters ahead of a hit's end
// to after characters past it. A match holding that hit lies inside its
// window and holds a literal of every other set of the pattern too, so a
// window where some set has no hit ending inside it is skipped: in long
// texts the common words of one set rarely come near the rare ones of
// another, and the regular expressions then read a fraction of the text.
func (r *Rule) findInWindows(pi int, s []byte, g int32, gates []int32, near *hitIndex, before, after int) (int, int, bool) {
	lo, hi := -1, -1
	flush := func() (int, int, bool) {
		if lo < 0 {
			return 0, 0, false
		}
		return r.matchIn(pi, s[lo:hi], lo)
	}
	var cur winCursor
	for _, end := range near.of(g) {
		a, b, ok := r.window(pi, s, g, gates, near, before, after, int(end), &cur)
		if !ok {
			continue
		}
		if lo >= 0 && a <= hi {
			hi = max(hi, b)
			continue
		}
		if x, y, ok := flush(); ok {
			return x, y, true
		}
		lo, hi = a, b
	}
	return flush()
}

// window returns the window of pattern pi around a hit of set g ending at
// end, s[a:b], and whether to read it: every other set of gates has a hit
// ending inside it, and it holds a character of each punctuation set. It
// is windowStart(backChars), forwardChars and allWithin, asked of the hits
// of one set in text order (TestWindowsAsPlain), with cur carrying where
// the last hit's answers were found: the windows' ends and starts only move
// forward with the hits (a start that moves back is searched for again),
// so the bytes outside ASCII and the other sets' hits are each passed once
// per pattern, not searched for at every hit (which was a tenth of a
// 64 KiB result's scan).
func (r *Rule) window(pi int, s []byte, g int32, gates []int32, near *hitIndex, before, after, end int, cur *winCursor) (int, int, bool) {
	ax := near.ascii
	var a, b int
	k := min(end+after, len(s))
	if ax.known && end >= before {
		// No byte outside ASCII from end-before up to k (and the byte at
		// k): both counts are a character a byte.
		w := ax.wide
		cur.wide = firstPast(w, cur.wide, end-before-1)
		if cur.wide == len(w) || int(w[cur.wide]) >= min(k+1, len(s)) {
			a, b = end-before, k
		} else {
			a, b = backChars(s, end, before, ax), forwardChars(s, end, after, ax)
		}
	} else {
		a, b = backChars(s, end, before, ax), forwardChars(s, end, after, ax)
	}
	a = windowStart(s, a, r.lineStart[pi])
	if len(gates) > len(cur.hit) {
		if !near.allWithin(gates, g, a, b) {
			return 0, 0, false
		}
	} else {
		for i, k := range gates {
			if k == g {
				continue
			}
			// The first hit of set k ending past a: it ends inside the
			// window, or none does.
			ends := near.of(k)
			c := firstPast(ends, cur.hit[i], a)
			cur.hit[i] = c
			if c == len(ends) || int(ends[c]) > b {
				return 0, 0, false
			}
		}
	}
	if !r.nearIn(pi, s[a:b]) {
		return 0, 0, false
	}
	return a, b, true
}

// firstPast returns the index of the first of xs (in increasing order)
// past a, looking from c on: a few steps, then a binary search of the rest.
// A c past that index (a moved back) searches all of xs again.
func firstPast(xs []int32, c, a int) int {
	if c > len(xs) || c > 0 && int(xs[c-1]) > a {
		c = 0
	}
	for n := 0; c < len(xs) && int(xs[c]) <= a; n++ {
		if n == 4 {
			return c + sort.Search(len(xs)-c, func(j int) bool { return int(xs[c+j]) > a })
		}
		c++
	}
	return c
}

// winCursor is what window keeps from one hit to the next: the first byte
// outside ASCII at or past the last window's reach back, and per set of the
// pattern (up to eight) the first hit past the last window's start.
type winCursor struct {
	wide int
	hit  [8]int
}

// hitIndex holds the literal hits of one string grouped by literal set, in
// text order within each set.
type hitIndex struct {
	start []int32 // start[g]..start[g+1] index ends of set g
	ends  []int32
	ascii *asciiIndex // of the string
}

func (x *hitIndex) of(g int32) []int32 { return x.ends[x.start[g]:x.start[g+1]] }

// allWithin reports whether every set of gates but skip has a hit ending in
// (a, b]: a literal inside s[a:b] ends there.
func (x *hitIndex) allWithin(gates []int32, skip int32, a, b int) bool {
	for _, k := range gates {
		if k == skip {
			continue
		}
		ends := x.of(k)
		// ends are in text order: the first end past a decides.
		i := sort.Search(len(ends), func(i int) bool { return int(ends[i]) > a })
		if i == len(ends) || int(ends[i]) > b {
			return false
		}
	}
	return true
}

// bucketHits groups sc.hits by literal set (a counting sort; sc.counts holds
// the sizes).
func (sc *scanner) bucketHits(n int) {
	x := &sc.byGate
	if cap(x.start) < n+1 {
		x.start = make([]int32, n+1)
	}
	x.start = x.start[:n+1]
	sum := int32(0)
	for g := 0; g < n; g++ {
		x.start[g] = sum
		sum += sc.counts[g]
	}
	x.start[n] = sum
	if cap(x.ends) < int(sum) {
		x.ends = make([]int32, sum)
	}
	x.ends = x.ends[:sum]
	fill := append(sc.fill[:0], x.start[:n]...)
	for _, h := range sc.hits {
		x.ends[fill[h.gate]] = h.end
		fill[h.gate]++
	}
	sc.fill = fill
}

// backChars returns the offset n characters before i (at most to 0); ax
// says where s has bytes outside ASCII (or reads s for them).
func backChars(s []byte, i, n int, ax *asciiIndex) int {
	if j := i - n; j >= 0 && ax.only(s, j, i) {
		return j // one character a byte (the loop below would say so)
	}
	for ; n > 0 && i > 0; n-- {
		// Eight ASCII bytes before i are eight characters (eight steps
		// below), near a character outside ASCII too.
		for n >= 8 && i >= 8 && binary.LittleEndian.Uint64(s[i-8:])&highs == 0 {
			i, n = i-8, n-8
		}
		if n == 0 || i == 0 {
			break
		}
		i--
		for i > 0 && s[i]&0xC0 == 0x80 {
			i--
		}
	}
	return i
}

// forwardChars returns the offset n characters after i (at most len(s)).
func forwardChars(s []byte, i, n int, ax *asciiIndex) int {
	// With s[i:k] and the byte at k ASCII, the loop below would step one
	// byte a character and stop at k.
	if k := min(i+n, len(s)); n >= 0 && ax.only(s, i, min(k+1, len(s))) {
		return k
	}
	for ; n > 0 && i < len(s); n-- {
		// Eight ASCII bytes after i are eight characters (eight steps
		// below).
		for n >= 8 && i+9 <= len(s) && binary.LittleEndian.Uint64(s[i+1:])&highs == 0 {
			i, n = i+8, n-8
		}
		if n == 0 {
			break
		}
		i++
		for i < len(s) && s[i]&0xC0 == 0x80 {
			i++
		}
	}
	return i
}

// asciiOnly reports whether b holds only ASCII, eight bytes a step (a
// window reaches a few hundred characters to each side of every hit of its
// rarest set, and counting them out byte by byte was a seventh of a 64 KiB
// result's scan).
func asciiOnly(b []byte) bool {
	var or uint64
	k := 0
	for ; k+8 <= len(b); k += 8 {
		or |= binary.LittleEndian.Uint64(b[k:])
	}
	for ; k < len(b); k++ {
		or |= uint64(b[k])
	}
	return or&highs == 0
}

// windowStart moves a window's start back to the start of its word, so \b
// sees what it would in the whole text, and for a pattern with a line or
// text anchor (lines) first to the start of its line, within a short
// distance. Only anchored patterns pay for the longer window: for a short
// pattern, reading back to the line start was most of what it read.
func windowStart(s []byte, a int, lines bool) int {
	if a <= 0 {
		return 0
	}
	for k := a; lines && k > 0 && a-k < 256; k-- {
		if s[k-1] == '\n' {
			return k
		}
	}
	for k := a; k > 0 && a-k < 64; k-- {
		if s[k-1] == ' ' {
			return k
		}
	}
	return a
}

// regexInput, when set (by tests), is told how many bytes each pattern
// reads: the measure the literal gate and the windows are tuned by.
var regexInput func(r *Rule, pi, n int)

// matchIn runs pattern pi on t (which starts at offset off of the text) and
// returns the snippet span of its first match that no "unless" vetoes.
func (r *Rule) matchIn(pi int, t []byte, off int) (int, int, bool) {
	if cs := r.cased[pi]; cs != nil && !holdsOne(t, cs) {
		return 0, 0, false
	}
	if regexInput != nil {
		regexInput(r, pi, len(t))
	}
	re := r.patterns[pi].get()
	// Most windows hold no match: asking only whether one exists lets the
	// matcher carry no submatch positions, which is most of its work; a
	// large pattern with a lead set is asked only where a match can start
	// (or, reversed, end).
	if l := r.short[pi].get(); l != nil {
		if !l.matches(re, t) {
			return 0, 0, false
		}
	} else if !re.Match(t) {
		return 0, 0, false
	}
	m := re.FindSubmatchIndex(t)
	if m == nil {
		return 0, 0, false
	}
	ms := [][]int{m}
	if r.vetoed(t[m[0]:m[1]]) {
		ms = re.FindAllSubmatchIndex(t, 8)
	}
	for _, m := range ms {
		if r.vetoed(t[m[0]:m[1]]) {
			continue
		}
		if g := r.snip[pi]; g > 0 && m[2*g] >= 0 {
			return off + m[2*g], off + m[2*g+1], true
		}
		return off + m[0], off + m[1], true
	}
	return 0, 0, false
}

func (r *Rule) findSpanString(s string) (int, int, bool) {
	for pi, re := range r.patterns {
		if m := re.get().FindStringSubmatchIndex(s); m != nil {
			if g := r.snip[pi]; g > 0 && m[2*g] >= 0 {
				return m[2*g], m[2*g+1], true
			}
			return m[0], m[1], true
		}
	}
	return 0, 0, false
}

func (r *Rule) vetoed(match []byte) bool {
	for _, u := range r.unless {
		if u.get().Match(match) {
			return true
		}
	}
	return false
}
