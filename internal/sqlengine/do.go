package sqlengine

// DO expr [, expr] ...: MySQL evaluates the expressions for their effects
// (SLEEP, GET_LOCK, RELEASE_LOCK, user variables set with :=) and sends
// an OK packet, no result set. The parser has no DO, so the statement is
// read as the SELECT of the same expressions, and the server, which sees
// the statement's text (IsDo), sends OK instead of its rows. Errors are
// the SELECT's, which are DO's. Prepared with COM_STMT_PREPARE, DO is
// the same SELECT, prepared with no result columns and answered with an
// OK (CheckPrepare, and the server's prepareddo.go); SQL PREPARE of a DO
// is refused (1295): its EXECUTE cannot be told from others'.

import (
	"strings"

	"github.com/lockstepdb/lockstep/internal/routine"
)

// rewriteDo returns query with a leading DO keyword read as SELECT, and
// whether it had one. Only the keyword changes, so positions in errors
// stay right.
func rewriteDo(query string) (string, bool) {
	i := skipSpaceAndComments(query)
	if i+2 >= len(query) || (query[i] != 'd' && query[i] != 'D') || (query[i+1] != 'o' && query[i+1] != 'O') {
		return query, false
	}
	switch c := query[i+2]; c {
	case ' ', '\t', '\n', '\r', '(', '@', '\'', '"', '`', '-', '+', '!', '~', '/', '#':
	default:
		return query, false
	}
	// "DO" becomes "SELECT": two letters more, spaces keep the rest in
	// place for the parser's positions.
	return query[:i] + "SELECT" + query[i+2:], true
}

// skipSpaceAndComments returns the index of the first byte of q that is
// neither white space nor inside a leading comment.
func skipSpaceAndComments(q string) int {
	i := 0
	for i < len(q) {
		switch c := q[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#' || (c == '-' && strings.HasPrefix(q[i:], "-- ")):
			n := strings.IndexByte(q[i:], '\n')
			if n < 0 {
				return len(q)
			}
			i += n + 1
		case c == '/' && strings.HasPrefix(q[i:], "/*") && !strings.HasPrefix(q[i:], "/*!"):
			n := strings.Index(q[i+2:], "*/")
			if n < 0 {
				return len(q)
			}
			i += n + 4
		default:
			return i
		}
	}
	return i
}

// IsDo reports whether query's first statement is a DO, whose result
// the server replaces with an OK packet.
func IsDo(query string) bool {
	_, ok := rewriteDo(query)
	return ok || routine.IsDoStatement(query[skipSpaceAndComments(query):])
}
