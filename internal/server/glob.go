package server

// globMatch reports whether s matches the Redis glob pattern: '*' any
// run, '?' any byte, '[...]' a class (with '^' negation and 'a-z'
// ranges), '\' escapes the next byte.
//
// Every element but '*' matches exactly one byte, so a failed match
// needs to go back only to the last '*' and let it take one byte more:
// the time is at most len(pattern)×len(s), never exponential. (A
// recursive matcher that tries every split at every '*', as Redis did
// before CVE-2022-36021, lets a pattern like "*a*a*a*a*a*a*b" run for
// minutes; here one runs under the pub/sub lock and on the writer's
// path, so a tenant could stall every client.)
func globMatch(pattern, s string) bool {
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
				lo, hi := p[0], p[2]
				if lo > hi {
					lo, hi = hi, lo
				}
				match = match || (c >= lo && c <= hi)
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
