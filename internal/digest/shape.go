package digest

// shape is query with its literals (strings, numbers, hexadecimal and bit
// values) replaced by a NUL byte (literal: a byte no statement has
// outside a string, unlike ?, a placeholder) and every other byte kept: statements of one
// shape have one digest, so the shape keys the cache of digests
// (Summary.digestOf). It is a single pass with no tokenizer, a fraction
// of tokenizing, so that statements sent as text with their values
// inline (no prepared statement, whose text never changes) hit the cache
// too.
//
// Its rules must give two statements one shape only if the tokenizer
// reads them as the same tokens but for the literals: strings are read
// to their closing quote past doubled quotes and backslash escapes; a
// number is a run of digits (with a point, an exponent, or 0x/0b) that
// does not touch an identifier's characters on either side (2a and a2
// are identifiers); quoted identifiers and comments are kept whole.
func shape(query string) string {
	out := make([]byte, 0, len(query))
	n := len(query)
	for i := 0; i < n; {
		c := query[i]
		switch {
		case c == '\'' || c == '"':
			end := stringEnd(query, i)
			// x'0f' and b'01' are literals too: drop their prefix.
			if k := len(out) - 1; k >= 0 && (out[k]|0x20 == 'x' || out[k]|0x20 == 'b') && c == '\'' && (k == 0 || !identChar(out[k-1])) {
				out = out[:k]
			}
			out = append(out, literal)
			i = end
		case c == '`':
			end := i + 1
			for end < n {
				if query[end] == '`' {
					if end+1 < n && query[end+1] == '`' {
						end += 2
						continue
					}
					end++
					break
				}
				end++
			}
			out = append(out, query[i:min(end, n)]...)
			i = end
		case c == '/' && i+1 < n && query[i+1] == '*':
			end := i + 2
			for end+1 < n && (query[end] != '*' || query[end+1] != '/') {
				end++
			}
			end = min(end+2, n)
			out = append(out, query[i:end]...)
			i = end
		case (c == '-' && i+1 < n && query[i+1] == '-') || c == '#':
			end := i
			for end < n && query[end] != '\n' {
				end++
			}
			out = append(out, query[i:end]...)
			i = end
		case c >= '0' && c <= '9' && (i == 0 || !nameChar(query[i-1])):
			end := numberEnd(query, i)
			if end < n && identChar(query[end]) {
				// Digits run into letters: an identifier (2a, 1e2x).
				for end < n && identChar(query[end]) {
					end++
				}
				out = append(out, query[i:end]...)
			} else {
				out = append(out, literal)
			}
			i = end
		case c == '.' && i+1 < n && query[i+1] >= '0' && query[i+1] <= '9' && (i == 0 || !nameChar(query[i-1])):
			end := numberEnd(query, i)
			out = append(out, literal)
			i = end
		default:
			out = append(out, c)
			i++
		}
	}
	return string(out)
}

// literal stands for a literal in a shape.
const literal = 0

// nameChar says whether a number cannot start after c: c ends an
// identifier or is a variable's @ (@1 is a variable).
func nameChar(c byte) bool { return identChar(c) || c == '@' || c == ':' }

// identChar says whether c may be part of an unquoted identifier.
func identChar(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// stringEnd is the index past the string that starts with the quote at i.
func stringEnd(q string, i int) int {
	quote := q[i]
	j := i + 1
	for j < len(q) {
		switch q[j] {
		case '\\':
			j += 2
			continue
		case quote:
			if j+1 < len(q) && q[j+1] == quote {
				j += 2
				continue
			}
			return j + 1
		}
		j++
	}
	return len(q)
}

// numberEnd is the index past the number that starts at i: digits, a
// point and digits, an exponent, or 0x/0b and their digits.
func numberEnd(q string, i int) int {
	n := len(q)
	j := i
	if q[j] == '0' && j+1 < n && (q[j+1] == 'x' || q[j+1] == 'X' || q[j+1] == 'b' || q[j+1] == 'B') {
		k := j + 2
		for k < n && (q[k] >= '0' && q[k] <= '9' || q[k]|0x20 >= 'a' && q[k]|0x20 <= 'f') {
			k++
		}
		if k > j+2 {
			return k
		}
	}
	for j < n && q[j] >= '0' && q[j] <= '9' {
		j++
	}
	if j < n && q[j] == '.' {
		j++
		for j < n && q[j] >= '0' && q[j] <= '9' {
			j++
		}
	}
	if j < n && (q[j] == 'e' || q[j] == 'E') {
		k := j + 1
		if k < n && (q[k] == '+' || q[k] == '-') {
			k++
		}
		if k < n && q[k] >= '0' && q[k] <= '9' {
			for k < n && q[k] >= '0' && q[k] <= '9' {
				k++
			}
			j = k
		}
	}
	return j
}
