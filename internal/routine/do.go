package routine

import (
	"strings"

	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// DO in a procedure's body: the parser takes DO only as a statement of
// its own (the server reads it as a SELECT whose rows it drops), not
// inside BEGIN ... END. So a body's DO statements are read as SELECTs
// marked with doMarker, which the interpreter runs for their effects and
// whose rows it drops; the procedure is kept, logged and shown with its
// DO statements (RestoreDo).
//
// A DO keyword starts a statement unless it is a WHILE's: each WHILE
// (but END WHILE's) owns the first DO after it. A DO statement after the
// CREATE PROCEDURE in the same query is read so too, and answered as a
// DO (IsDoStatement).

const doMarker = "/* lockstep:do */"

// doSelect is what a statement DO is read as.
const doSelect = "SELECT " + doMarker

// RewriteDo returns statement stmt (a CREATE PROCEDURE) with its body's
// DO statements read as marked SELECTs, and whether it had any.
func RewriteDo(stmt string) (string, bool) {
	if !containsFoldDo(stmt) || strings.Contains(stmt, doMarker) {
		return stmt, false
	}
	tkn := ast.NewStringTokenizer(stmt)
	var starts []int // byte offsets of statement DO keywords
	whiles, prev := 0, 0
	for {
		typ, val := tkn.Scan()
		if typ == 0 || typ == ast.LEX_ERROR {
			break
		}
		switch typ {
		case ast.COMMENT:
			continue
		case ast.WHILE:
			if prev != ast.END {
				whiles++
			}
		case ast.DO:
			at := tkn.Position - 1 - len(val) // the tokenizer counts from 1
			if whiles > 0 {
				whiles--
			} else if at >= 0 && at+2 <= len(stmt) && strings.EqualFold(stmt[at:at+2], "DO") {
				starts = append(starts, at)
			}
		}
		prev = typ
	}
	if len(starts) == 0 {
		return stmt, false
	}
	var b strings.Builder
	last := 0
	for _, at := range starts {
		if at < last || at+2 > len(stmt) {
			return stmt, false
		}
		b.WriteString(stmt[last:at])
		b.WriteString(doSelect)
		last = at + 2
	}
	b.WriteString(stmt[last:])
	return b.String(), true
}

// IsDoStatement reports whether a statement's text, bare of leading
// white space, is a DO that RewriteDo read as a SELECT: a DO after a
// CREATE PROCEDURE in one query, which the server answers as DO.
func IsDoStatement(text string) bool {
	return strings.HasPrefix(strings.TrimLeft(text, " \t\r\n"), doSelect)
}

// RestoreDo undoes RewriteDo.
func RestoreDo(stmt string) string {
	if !strings.Contains(stmt, doMarker) {
		return stmt
	}
	return strings.ReplaceAll(stmt, doSelect, "DO")
}

func containsFoldDo(s string) bool {
	return strings.Contains(s, "do") || strings.Contains(s, "DO") || strings.Contains(s, "Do") || strings.Contains(s, "dO")
}

// isDo reports whether a SELECT of a body was a DO.
func isDo(s *ast.Select) bool {
	for _, c := range s.Comments {
		if string(c) == doMarker {
			return true
		}
	}
	return false
}
