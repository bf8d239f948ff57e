package server

import (
	"strconv"
	"strings"

	"github.com/lockstepdb/lockstep/internal/binlog"
)

// Comments in the statements Lockstep answers itself.
//
// The statements the server intercepts (SET gtid_next, replica control,
// binlog administration, FLUSH TABLES WITH READ LOCK, KILL, ALTER INSTANCE
// RELOAD TLS...) are recognised by their text. MySQL lets a comment stand
// anywhere whitespace may, and tools put them there (`/* app:job 42 */`
// before every statement, `-- note` after one). A recognizer that saw the
// comment would pass the statement on to go-mysql-server, which either
// refuses it with a syntax error or, worse, runs its own version of it
// (its FLUSH TABLES WITH READ LOCK blocks nothing, its SET gtid_next is
// ignored). So recognizers see the statement as MySQL's parser would:
// bareStatement replaces each comment outside a quoted string by one
// space, and unwraps an executable comment (/*!NNNNN ... */) whose version
// this server has. A MariaDB-only executable comment (/*M!...*/) is, as in
// MySQL, an ordinary comment.

// serverVersionID is binlog.ServerVersion as MySQL's executable comments
// number versions (8.0.40 is 80040).
const serverVersionID = binlog.ServerVersionID

// bareStatement returns query with its comments replaced by spaces and its
// executable comments unwrapped. A query without comment markers is
// returned as it is, without copying.
func bareStatement(query string) string {
	if !strings.Contains(query, "/*") && !strings.Contains(query, "--") && !strings.Contains(query, "#") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query))
	open := 0 // executable comments unwrapped and not yet closed
	for i := 0; i < len(query); {
		switch c := query[i]; {
		case c == '\'' || c == '"' || c == '`':
			j := quotedEnd(query, i)
			b.WriteString(query[i:j])
			i = j
		case c == '/' && strings.HasPrefix(query[i:], "/*"):
			if rest, ok := executableComment(query[i+2:]); ok {
				b.WriteByte(' ')
				open++
				i = len(query) - len(rest)
				continue
			}
			end := strings.Index(query[i+2:], "*/")
			b.WriteByte(' ')
			if end < 0 {
				return b.String()
			}
			i += 2 + end + 2
		case c == '*' && open > 0 && strings.HasPrefix(query[i:], "*/"):
			b.WriteByte(' ')
			open--
			i += 2
		case c == '#' || (c == '-' && strings.HasPrefix(query[i:], "--") && (i+2 == len(query) || query[i+2] <= ' ')):
			end := strings.IndexByte(query[i:], '\n')
			b.WriteByte(' ')
			if end < 0 {
				return b.String()
			}
			i += end
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// quotedEnd returns the index just past the string or identifier quoted
// by query[start]: a doubled quote or a backslash (outside backquotes)
// escapes. An unterminated quote runs to the end.
func quotedEnd(query string, start int) int {
	q := query[start]
	for i := start + 1; i < len(query); i++ {
		switch query[i] {
		case '\\':
			if q != '`' {
				i++
			}
		case q:
			if i+1 < len(query) && query[i+1] == q {
				i++
				continue
			}
			return i + 1
		}
	}
	return len(query)
}

// executableComment reports whether the comment whose body starts at rest
// (just after "/*") is one MySQL runs, "!" with an optional five or six
// digit version no newer than this server's, and returns what follows its
// marker.
func executableComment(rest string) (string, bool) {
	if !strings.HasPrefix(rest, "!") {
		return rest, false
	}
	rest = rest[1:]
	n := 0
	for n < len(rest) && n < 6 && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 {
		return rest, true
	}
	if n < 5 {
		return rest, false
	}
	if v, _ := strconv.Atoi(rest[:n]); v > serverVersionID {
		return rest, false
	}
	return rest[n:], true
}
