package sqlengine

// A client's text, translated where it comes in, so that the parser reads
// its string literals as MySQL does.
//
// vitess reads a backslash in a quoted string as an escape, always, and
// reads \% and \_ as % and _. MySQL differs twice:
//
//   - \% and \_ are two characters, backslash kept (they escape the
//     wildcard in a LIKE pattern: 'a\_' matches "a_" and not "ab");
//   - under sql_mode NO_BACKSLASH_ESCAPES a backslash is an ordinary
//     character ('a\b' is three characters; a quote inside a string is
//     written twice).
//
// So a client's text is translated once, where it enters, into the text
// vitess reads as MySQL reads the original (translateLiterals): the
// backslash of \% and \_ is doubled, or under the mode every backslash
// in a quoted string is. The doors are:
//
//   - COM_QUERY and COM_MULTI_QUERY (the server's handler, ClientText);
//     a multi-statement's rest goes back to the client's text (ClientText's
//     undo), since its next statement may run under another sql_mode;
//   - COM_STMT_PREPARE (CheckPrepare, before vitess parses it);
//   - the statement text of SQL PREPARE (ParseOneWithOptions, the one
//     parse of a text that is not the command's own: nestedText).
//
// Invariant: below the doors every text is in the parser's form. The
// fast path, the parser, the texts stored for views and triggers, and
// the binlog's Query events (which carry sql_mode 0) see nothing else,
// so a stored text is never translated again, whatever mode reads it
// later; the stored sql_mode of a trigger or view leaves
// NO_BACKSLASH_ESCAPES out for that reason (stripNoBackslashEscapes).
// The parser's form reads the same in MySQL under sql_mode 0 (\\_ is \_
// there too), and translating it again without the mode changes nothing:
// a replica translates a source's DDL by the sql_mode its event carries.
//
// LIKE has no escape character under the mode unless ESCAPE names one
// (likeescape.go has the rules of the clause). A client's statement parsed
// under the mode has each LIKE without ESCAPE given noEscape, an escape
// that never acts as one (readNoBackslashEscapes); the texts stored for
// CHECK constraints, column defaults and generated columns print it, so
// they keep their meaning. A view or trigger stores its text as the
// client wrote it: one with such a LIKE, created under the mode, is
// refused with the clause to write.
//
// The mode is reported to the client in the status flags of every reply
// (SERVER_STATUS_NO_BACKSLASH_ESCAPES): drivers read it to choose how
// they escape the strings they put into statements.

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// ServerStatusNoBackslashEscapes is SERVER_STATUS_NO_BACKSLASH_ESCAPES.
const ServerStatusNoBackslashEscapes = 0x0200

// NoBackslashEscapesOn says whether connection connID's session has
// NO_BACKSLASH_ESCAPES in its sql_mode now (for its replies' status).
func (e *Engine) NoBackslashEscapesOn(connID uint32) bool {
	v, ok := e.sessions.Load(connID)
	if !ok {
		return false
	}
	p := v.(*Session).parsedSQLMode()
	return p != nil && p.noBackslashEscapes
}

// ClientText is connection connID's text query in the parser's form (see
// the top of the file), and undo, which turns a part of that text
// starting between statements (a multi-statement's rest) back into the
// client's text; undo is nil when nothing was translated.
func (e *Engine) ClientText(connID uint32, query string) (text string, undo func(string) string) {
	if strings.IndexByte(query, '\\') < 0 {
		return query, nil
	}
	ansiQuotes, nbe := false, false
	if v, ok := e.sessions.Load(connID); ok {
		if p := v.(*Session).parsedSQLMode(); p != nil {
			ansiQuotes, nbe = p.opts.AnsiQuotes, p.noBackslashEscapes
		}
	}
	var ins []int
	text = translateLiterals(query, ansiQuotes, nbe, &ins)
	if len(ins) == 0 {
		return query, nil
	}
	return text, undoFor(query, text, ins)
}

// undoFor is ClientText's undo for query, translated into text with a
// backslash added before each of query's bytes at ins.
func undoFor(query, text string, ins []int) func(string) string {
	return func(rest string) string {
		// The k-th added backslash is at ins[k]+k of text; rest starts
		// outside any string, so at none of them.
		at := len(text) - len(rest)
		added := 0
		for k, i := range ins {
			if i+k >= at {
				break
			}
			added++
		}
		return query[at-added:]
	}
}

// translateLiterals is q, a client's text, in the form vitess reads as
// MySQL reads q (see the top of the file): in each quoted string, under
// NO_BACKSLASH_ESCAPES (nbe) every backslash is doubled, otherwise the
// backslash of \% and \_. Double quotes delimit strings unless
// ansiQuotes; identifiers, comments and the rest are copied, and the
// statement text inside executable comments (/*! ... */) and optimizer
// hints is translated as the rest. If ins is not nil, the index in q of
// each byte a backslash was added before is appended to it.
func translateLiterals(q string, ansiQuotes, nbe bool, ins *[]int) string {
	if strings.IndexByte(q, '\\') < 0 {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 8)
	add := func(i int) {
		b.WriteByte('\\')
		if ins != nil {
			*ins = append(*ins, i)
		}
	}
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == '\'' || c == '"' && !ansiQuotes:
			b.WriteByte(c)
			i++
			for i < len(q) {
				d := q[i]
				if d == '\\' {
					switch {
					case nbe:
						add(i)
						b.WriteByte(d)
						i++
					case i+1 < len(q) && (q[i+1] == '%' || q[i+1] == '_'):
						add(i)
						b.WriteString(q[i : i+2])
						i += 2
					default: // an escape: the backslash and what it escapes
						b.WriteString(q[i:min(i+2, len(q))])
						i += 2
					}
					continue
				}
				b.WriteByte(d)
				i++
				if d == c {
					if i < len(q) && q[i] == c { // a doubled quote
						b.WriteByte(c)
						i++
						continue
					}
					break
				}
			}
		case c == '`' || c == '"' && ansiQuotes:
			j := i + 1
			for j < len(q) {
				if q[j] == c {
					if j+1 < len(q) && q[j+1] == c {
						j += 2
						continue
					}
					j++
					break
				}
				j++
			}
			b.WriteString(q[i:j])
			i = j
		case c == '#' || c == '-' && strings.HasPrefix(q[i:], "--") && (i+2 == len(q) || q[i+2] <= ' '):
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				j = len(q) - i
			}
			b.WriteString(q[i : i+j])
			i += j
		case c == '/' && strings.HasPrefix(q[i:], "/*") && !strings.HasPrefix(q[i:], "/*!") && !strings.HasPrefix(q[i:], "/*+") && !strings.HasPrefix(q[i:], "/*M!"):
			// A comment; an executable one or a hint is statement text,
			// read on as such (its closing */ is copied as it comes).
			j := strings.Index(q[i+2:], "*/")
			if j < 0 {
				j = len(q) - i
			} else {
				j += 4
			}
			b.WriteString(q[i : i+j])
			i += j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// nestedText says whether query, parsed in ctx, is not the text of the
// command ctx runs (SQL PREPARE's statement, parsed while PREPARE runs).
func nestedText(ctx *sql.Context, query string) bool {
	return sql.RemoveSpaceAndDelimiter(ctx.Query(), ';') != sql.RemoveSpaceAndDelimiter(query, ';')
}

// stripNoBackslashEscapes is sql_mode text mode without
// NO_BACKSLASH_ESCAPES: the mode of a stored text in the parser's form.
func stripNoBackslashEscapes(mode string) string {
	if !containsFold(mode, sql.NoBackslashEscapes) {
		return mode
	}
	parts := strings.Split(mode, ",")
	kept := parts[:0]
	for _, p := range parts {
		if !strings.EqualFold(strings.TrimSpace(p), sql.NoBackslashEscapes) {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ",")
}

// noEscape is the ESCAPE given to a LIKE without one under
// NO_BACKSLASH_ESCAPES: the replacement character, which go-mysql-server's
// matcher refuses in a pattern before it could act as an escape, so it
// never does (and likeEscape takes it as the one character it is).
const noEscape = "\uFFFD"

// readNoBackslashEscapes makes st, a client's statement parsed under
// NO_BACKSLASH_ESCAPES, mean what the mode says of LIKE (see the top of
// the file).
func readNoBackslashEscapes(st ast.Statement) error {
	if d, ok := st.(*ast.DDL); ok && (d.ViewSpec != nil || d.TriggerSpec != nil) {
		found := false
		defaultLikes(d, func(*ast.ComparisonExpr) { found = true })
		if found {
			what := "view"
			if d.TriggerSpec != nil {
				what = "trigger"
			}
			return mysql.NewSQLError(mysql.ERNotSupportedYet, "42000", "This version of Lockstep doesn't yet support 'a %s with LIKE and no ESCAPE created under NO_BACKSLASH_ESCAPES', whose stored text would not keep the LIKE's meaning: name its escape character (ESCAPE '|')", what)
		}
	}
	defaultLikes(st, func(c *ast.ComparisonExpr) { c.Escape = ast.NewStrVal([]byte(noEscape)) })
	return nil
}

// defaultLikes calls f with each LIKE and NOT LIKE in n that names no
// escape character: in its statements and expressions, and in the parts
// of DDL that vitess's walk passes over (column defaults and generated
// columns, CHECK constraints, a trigger's body).
func defaultLikes(n ast.SQLNode, f func(*ast.ComparisonExpr)) {
	_ = ast.Walk(func(n ast.SQLNode) (bool, error) {
		switch x := n.(type) {
		case *ast.ComparisonExpr:
			if x.Escape == nil && (x.Operator == ast.LikeStr || x.Operator == ast.NotLikeStr) {
				f(x)
			}
		case *ast.AlterTable:
			for _, d := range x.Statements {
				defaultLikes(d, f)
			}
		case *ast.DDL:
			if x.TriggerSpec != nil && x.TriggerSpec.Body != nil {
				defaultLikes(x.TriggerSpec.Body, f)
			}
			if ts := x.TableSpec; ts != nil {
				for _, c := range ts.Columns {
					for _, e := range []ast.Expr{c.Type.Default, c.Type.OnUpdate, c.Type.GeneratedExpr} {
						if e != nil {
							defaultLikes(e, f)
						}
					}
				}
				for _, c := range ts.Constraints {
					if ck, ok := c.Details.(*ast.CheckConstraintDefinition); ok && ck.Expr != nil {
						defaultLikes(ck.Expr, f)
					}
				}
			}
		}
		return true, nil
	}, n)
}
