package sqlengine

import "strings"

// Text the parser does not read as MySQL does, put in a form it reads
// the same way before parsing.
//
// Unquoted identifiers with non-ASCII letters. MySQL reads any character
// from U+0080 up as part of an unquoted identifier (CREATE TABLE café,
// SELECT naïve FROM t); the parser stops at the first such byte with a
// syntax error. Before parsing, every unquoted identifier that holds one
// is put in backquotes, which is what it means; string literals, quoted
// identifiers, comments and user variables (@name) are left as they are.

// QuoteNonASCIIIdents returns query with its unquoted non-ASCII
// identifiers quoted. A query of ASCII only is returned as it is, without
// a copy. The server applies it to COM_STMT_PREPARE's text, which vitess
// parses before any of Lockstep's code sees it.
func QuoteNonASCIIIdents(query string) string {
	ascii := true
	for i := 0; i < len(query); i++ {
		if query[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return query
	}
	out := make([]byte, 0, len(query)+8)
	for i := 0; i < len(query); {
		c := query[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			j := skipQuoted(query, i)
			out = append(out, query[i:j]...)
			i = j
		case c == '#' || (c == '-' && i+2 < len(query) && query[i+1] == '-' && (query[i+2] == ' ' || query[i+2] == '\t')):
			j := i
			for j < len(query) && query[j] != '\n' {
				j++
			}
			out = append(out, query[i:j]...)
			i = j
		case c == '/' && i+1 < len(query) && query[i+1] == '*' && (i+2 >= len(query) || query[i+2] != '!'):
			j := i + 2
			for j+1 < len(query) && !(query[j] == '*' && query[j+1] == '/') {
				j++
			}
			j = min(j+2, len(query))
			out = append(out, query[i:j]...)
			i = j
		case identOrNonASCII(c):
			j := i
			nonASCII := false
			for j < len(query) && identOrNonASCII(query[j]) {
				nonASCII = nonASCII || query[j] >= 0x80
				j++
			}
			// A user variable (@name) or a number's digits are not
			// identifiers to quote.
			if nonASCII && (i == 0 || query[i-1] != '@') {
				out = append(out, '`')
				out = append(out, query[i:j]...)
				out = append(out, '`')
			} else {
				out = append(out, query[i:j]...)
			}
			i = j
		default:
			out = append(out, c)
			i++
		}
	}
	return string(out)
}

func identOrNonASCII(c byte) bool {
	return c >= 0x80 || c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// skipQuoted returns the index just past the quoted string or identifier
// starting at i (a backslash escapes in strings; a doubled quote is one).
func skipQuoted(q string, i int) int {
	quote := q[i]
	j := i + 1
	for j < len(q) {
		switch {
		case q[j] == '\\' && quote != '`':
			j += 2
			continue
		case q[j] == quote:
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

// rewriteLongByte reads MySQL's LONG BYTE column type (MEDIUMBLOB: BYTE
// is the binary character set) as LONG VARBINARY, which the parser knows,
// in a CREATE or ALTER statement.
func rewriteLongByte(query string) string {
	i := skipSpaceAndComments(query)
	if !hasPrefixFold(query[i:], "create") && !hasPrefixFold(query[i:], "alter") {
		return query
	}
	if !containsFold(query, "byte") {
		return query
	}
	toks := lexTokens(query)
	var b strings.Builder
	last := 0
	for j := 0; j+1 < len(toks); j++ {
		if toks[j].is("long") && toks[j+1].is("byte") {
			b.WriteString(query[last:toks[j+1].start])
			b.WriteString("VARBINARY")
			last = toks[j+1].end
		}
	}
	if last == 0 {
		return query
	}
	b.WriteString(query[last:])
	return b.String()
}
