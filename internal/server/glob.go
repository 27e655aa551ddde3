package server

import "strings"

// glob is a compiled Redis glob pattern: '*' any run, '?' any byte,
// '[...]' a class (with '^' negation and 'a-z' ranges), '\' escapes the
// next byte.
//
// Matching time is linear in the name's length whatever the pattern
// (times ⌈n/64⌉ for a run of n elements between stars that holds a '?'
// or a class). A pattern is its runs of '*' and the segments between
// them, each of which matches a fixed number of bytes: the first must
// match at the start of the name, the last at its end, and every other
// one is placed at its leftmost fit after the one before, which is right
// because a later fit never leaves more room for the rest. A segment of
// literal bytes is found with strings.Index; one holding wildcards with
// the bit-parallel Shift-And algorithm, one bit per element.
//
// Matching is on the writer's path and under the pub/sub lock for
// keyspace notifications, and a tenant chooses its patterns, so the
// cost must not depend on how the pattern is written: a recursive
// matcher that tries every split at every '*' (Redis before
// CVE-2022-36021) took minutes for "*a*a*a*a*a*a*b", and one that
// backtracks to the last '*' takes pattern length × name length.
//
// The Shift-And tables take 2 KiB per 64 elements of each segment that
// holds a wildcard, which a long pattern of short segments ("?*?*?*…")
// would multiply a thousandfold. A pattern whose tables would pass
// maxGlobTables is therefore matched by backtracking to the last '*'
// instead, as before this matcher: it needs no memory, and its time
// (name length × the longest segment) is paid by the command that sent
// the pattern (KEYS, SCAN …). A tenant's PSUBSCRIBE patterns, matched on
// everyone's behalf, are held to a much smaller budget and never fall
// back (see maxTenantGlobTables).
type glob struct {
	segs []globSeg // between the runs of '*'; at least two when star
	star bool      // the pattern holds a '*'
	// backtrack is the pattern when its tables would be too large; segs
	// is then empty.
	backtrack string
	tables    int // Shift-And tables (of 64 elements) in segs
}

// maxGlobTables bounds the Shift-And tables of one pattern: 128 tables
// of 2 KiB, 256 KiB.
const maxGlobTables = 128

// globSeg is a run of pattern elements without '*'; each matches one
// byte of the name.
type globSeg struct {
	n     int           // its elements
	lit   string        // when every element is one literal byte: those bytes
	masks [][256]uint64 // otherwise: bit i%64 of masks[i/64][c] is set when element i accepts c
}

// compileGlob compiles a pattern. Every pattern compiles: one that Redis
// would read oddly (an unclosed class, a trailing '\') matches as Redis
// matches it.
func compileGlob(pattern string) *glob {
	if globTables(pattern) > maxGlobTables {
		return &glob{backtrack: pattern}
	}
	g := &glob{}
	var elems []string // the current segment's elements
	globElems(pattern, func(e string) {
		if e != "*" {
			elems = append(elems, e)
			return
		}
		seg := newGlobSeg(elems)
		g.tables += len(seg.masks)
		g.segs = append(g.segs, seg)
		elems = elems[:0]
	})
	g.star = len(g.segs) > 1
	return g
}

// globElems calls f with each element of pattern in turn, a run of '*'
// as one "*", and one more "*" at the end, so that f sees the end of
// every segment, the last included, as a "*": a pattern has a star when
// f saw more than one.
func globElems(pattern string, f func(elem string)) {
	for p := 0; p < len(pattern); {
		if pattern[p] == '*' {
			for p < len(pattern) && pattern[p] == '*' {
				p++
			}
			f("*")
			continue
		}
		n, _ := globOne(pattern[p:], 0) // an element's length does not depend on the byte
		f(pattern[p : p+n])
		p += n
	}
	f("*")
}

// globTables counts the Shift-And tables compileGlob would build for
// pattern, without building them: ⌈n/64⌉ for each segment of n elements
// that holds a '?' or a class.
func globTables(pattern string) int {
	tables, n, wild := 0, 0, false
	globElems(pattern, func(e string) {
		if e != "*" {
			n++
			_, lit := globLiteral(e)
			wild = wild || !lit
			return
		}
		if wild {
			tables += (n + 63) / 64
		}
		n, wild = 0, false
	})
	return tables
}

// globLiteral reports whether the element e matches one byte only, and
// which.
func globLiteral(e string) (byte, bool) {
	switch {
	case len(e) == 1 && e[0] != '?' && e[0] != '[':
		return e[0], true
	case len(e) == 2 && e[0] == '\\':
		return e[1], true
	}
	return 0, false
}

func newGlobSeg(elems []string) globSeg {
	seg := globSeg{n: len(elems)}
	lit := make([]byte, 0, len(elems))
	for _, e := range elems {
		c, ok := globLiteral(e)
		if !ok {
			lit = nil
			break
		}
		lit = append(lit, c)
	}
	if lit != nil {
		seg.lit = string(lit)
		return seg
	}
	seg.masks = make([][256]uint64, (len(elems)+63)/64)
	for i, e := range elems {
		m := &seg.masks[i/64]
		for c := range 256 {
			if _, ok := globOne(e, byte(c)); ok {
				m[c] |= 1 << (i % 64)
			}
		}
	}
	return seg
}

// matchAll is the pattern "*".
var matchAll = compileGlob("*")

// globMatch reports whether s matches pattern (see glob). To match one
// pattern against many names, compile it once with compileGlob.
func globMatch(pattern, s string) bool {
	return compileGlob(pattern).match(s)
}

// match reports whether s matches the pattern.
func (g *glob) match(s string) bool {
	if g.backtrack != "" {
		return backtrackMatch(g.backtrack, s)
	}
	if !g.star {
		return len(s) == g.segs[0].n && g.segs[0].at(s)
	}
	head, tail := &g.segs[0], &g.segs[len(g.segs)-1]
	if len(s) < head.n+tail.n || !head.at(s[:head.n]) || !tail.at(s[len(s)-tail.n:]) {
		return false
	}
	s = s[head.n : len(s)-tail.n]
	for i := 1; i < len(g.segs)-1; i++ {
		seg := &g.segs[i]
		j := seg.index(s)
		if j < 0 {
			return false
		}
		s = s[j+seg.n:]
	}
	return true
}

// at reports whether the segment matches s, which is seg.n bytes long.
func (seg *globSeg) at(s string) bool {
	if seg.masks == nil {
		return s == seg.lit
	}
	for i := range seg.n {
		if seg.masks[i/64][s[i]]&(1<<(i%64)) == 0 {
			return false
		}
	}
	return true
}

// index returns where the leftmost match of the segment in s starts, or
// -1. Shift-And: after byte j, bit i of state is set when the segment's
// first i+1 elements match the bytes ending at j.
func (seg *globSeg) index(s string) int {
	if seg.masks == nil {
		return strings.Index(s, seg.lit)
	}
	if seg.n > len(s) {
		return -1
	}
	words := len(seg.masks)
	top := uint64(1) << ((seg.n - 1) % 64)
	if words == 1 {
		var state uint64
		m := &seg.masks[0]
		for j := 0; j < len(s); j++ {
			state = (state<<1 | 1) & m[s[j]]
			if state&top != 0 {
				return j - seg.n + 1
			}
		}
		return -1
	}
	state := make([]uint64, words)
	for j := 0; j < len(s); j++ {
		c := s[j]
		carry := uint64(1) // a match may start at every byte
		for w := range state {
			next := state[w] >> 63
			state[w] = (state[w]<<1 | carry) & seg.masks[w][c]
			carry = next
		}
		if state[words-1]&top != 0 {
			return j - seg.n + 1
		}
	}
	return -1
}

// backtrackMatch reports whether s matches pattern by backtracking to the
// last '*': every element but '*' matches exactly one byte, so a failed
// match needs to go back only to the last '*' and let it take one byte
// more. Its time is at most the name's length × the longest segment, and
// it needs no memory. It is for patterns whose Shift-And tables would be
// too large (see glob).
func backtrackMatch(pattern, s string) bool {
	p, i := 0, 0
	starP, starI := -1, 0 // the pattern after the last '*', and where in s it resumes
	for i < len(s) {
		if p < len(pattern) {
			if pattern[p] == '*' {
				for p < len(pattern) && pattern[p] == '*' {
					p++
				}
				if p == len(pattern) {
					return true
				}
				starP, starI = p, i
				continue
			}
			if n, ok := globOne(pattern[p:], s[i]); ok {
				p += n
				i++
				continue
			}
		}
		if starP < 0 {
			return false
		}
		starI++
		p, i = starP, starI
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// globOne matches byte c against the element at the start of pattern
// (not '*') and returns the element's length in the pattern.
func globOne(pattern string, c byte) (n int, ok bool) {
	switch pattern[0] {
	case '?':
		return 1, true
	case '[':
		p := pattern[1:]
		not := len(p) > 0 && p[0] == '^'
		if not {
			p = p[1:]
		}
		match := false
		for len(p) > 0 && p[0] != ']' {
			switch {
			case p[0] == '\\' && len(p) > 1:
				match = match || p[1] == c
				p = p[2:]
			case len(p) > 2 && p[1] == '-':
				// Redis compares a range's bytes as C chars, signed on
				// the machines it runs on: bytes from 0x80 come before
				// ASCII, so [a-é] (é is 0xC3 0xA9) spans 0xC3..'a'.
				lo, hi, sc := int8(p[0]), int8(p[2]), int8(c)
				if lo > hi {
					lo, hi = hi, lo
				}
				match = match || (sc >= lo && sc <= hi)
				p = p[3:]
			default:
				match = match || p[0] == c
				p = p[1:]
			}
		}
		if len(p) > 0 {
			p = p[1:] // the closing ']'
		}
		return len(pattern) - len(p), match != not
	case '\\':
		if len(pattern) > 1 {
			return 2, pattern[1] == c
		}
	}
	return 1, pattern[0] == c
}
