package server

// globMatch reports whether s matches the Redis glob pattern: '*' any
// run, '?' any byte, '[...]' a class (with '^' negation and 'a-z'
// ranges), '\' escapes the next byte.
func globMatch(pattern, s string) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			for len(pattern) > 1 && pattern[1] == '*' {
				pattern = pattern[1:]
			}
			if len(pattern) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if globMatch(pattern[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
			s = s[1:]
			pattern = pattern[1:]
		case '[':
			if len(s) == 0 {
				return false
			}
			p := pattern[1:]
			not := len(p) > 0 && p[0] == '^'
			if not {
				p = p[1:]
			}
			match := false
			for len(p) > 0 && p[0] != ']' {
				switch {
				case p[0] == '\\' && len(p) > 1:
					match = match || p[1] == s[0]
					p = p[2:]
				case len(p) > 2 && p[1] == '-':
					lo, hi := p[0], p[2]
					if lo > hi {
						lo, hi = hi, lo
					}
					match = match || (s[0] >= lo && s[0] <= hi)
					p = p[3:]
				default:
					match = match || p[0] == s[0]
					p = p[1:]
				}
			}
			if len(p) > 0 {
				p = p[1:] // the closing ']'
			}
			if match == not {
				return false
			}
			s = s[1:]
			pattern = p
		case '\\':
			if len(pattern) > 1 {
				pattern = pattern[1:]
			}
			fallthrough
		default:
			if len(s) == 0 || pattern[0] != s[0] {
				return false
			}
			s = s[1:]
			pattern = pattern[1:]
		}
	}
	return len(s) == 0
}
