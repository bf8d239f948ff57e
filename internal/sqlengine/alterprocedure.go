package sqlengine

// ALTER PROCEDURE, which the parser does not know.
//
// ALTER PROCEDURE [db.]name characteristic... changes what MySQL lets it
// change: COMMENT, LANGUAGE SQL, the data access (CONTAINS SQL, NO SQL,
// READS SQL DATA, MODIFIES SQL DATA) and SQL SECURITY; the body and the
// parameters stay (drop and create the procedure for those). It needs
// ALTER ROUTINE on the procedure (1370). The procedure is kept as its
// CREATE statement (routines.go): that statement gets the new
// characteristics in place of its own, written as MySQL's SHOW CREATE
// PROCEDURE writes them (one a line: data access, DETERMINISTIC, SQL
// SECURITY, COMMENT), and the binlog carries the ALTER statement as the
// client sent it, which MySQL, MariaDB and Lockstep replicas apply.

import (
	"encoding/json"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// MaybeAlterProcedure is a cheap test that query may be ALTER PROCEDURE.
func MaybeAlterProcedure(query string) bool {
	return len(query) > 15 && strings.EqualFold(query[:5], "alter") && containsFold(query, "procedure")
}

// procChars are a procedure's characteristics.
type procChars struct {
	access        string // "" (CONTAINS SQL), "NO SQL", "READS SQL DATA", "MODIFIES SQL DATA"
	deterministic bool
	invoker       bool
	comment       string
}

// text is the characteristics as MySQL's SHOW CREATE PROCEDURE writes
// them, each on a line of its own ("" if all are the defaults).
func (c procChars) text() string {
	var b strings.Builder
	if c.access != "" {
		b.WriteString("\n    " + c.access)
	}
	if c.deterministic {
		b.WriteString("\n    DETERMINISTIC")
	}
	if c.invoker {
		b.WriteString("\n    SQL SECURITY INVOKER")
	}
	if c.comment != "" {
		b.WriteString("\n    COMMENT " + stringLiteral(c.comment))
	}
	return b.String()
}

// readChars reads characteristics from toks (of query) from i on, as
// far as they go: the position after them and whether any was malformed.
func readChars(query string, toks []token, i int, c *procChars, alter bool) (int, bool) {
	at := func(k int, w string) bool { return k < len(toks) && toks[k].is(w) }
	for i < len(toks) {
		switch {
		case at(i, "comment") && i+1 < len(toks) && toks[i+1].kind == tokString:
			c.comment = unquoteString(toks[i+1].text(query))
			i += 2
		case at(i, "language") && at(i+1, "sql"):
			i += 2
		case at(i, "contains") && at(i+1, "sql"):
			c.access = ""
			i += 2
		case at(i, "no") && at(i+1, "sql"):
			c.access = "NO SQL"
			i += 2
		case at(i, "reads") && at(i+1, "sql") && at(i+2, "data"):
			c.access = "READS SQL DATA"
			i += 3
		case at(i, "modifies") && at(i+1, "sql") && at(i+2, "data"):
			c.access = "MODIFIES SQL DATA"
			i += 3
		case at(i, "sql") && at(i+1, "security") && (at(i+2, "definer") || at(i+2, "invoker")):
			c.invoker = at(i+2, "invoker")
			i += 3
		case !alter && at(i, "deterministic"):
			c.deterministic = true
			i++
		case !alter && at(i, "not") && at(i+1, "deterministic"):
			c.deterministic = false
			i += 2
		default:
			return i, alter // a body begins here; in ALTER, nothing may
		}
	}
	return i, false
}

// unquoteString is a quoted string token's value, read by the parser's
// tokenizer (MySQL's escapes and doubled quotes).
func unquoteString(s string) string {
	if typ, val := ast.NewStringTokenizer(s).Scan(); typ == ast.STRING {
		return string(val)
	}
	return s
}

// AlterProcedureStatement answers ALTER PROCEDURE; handled is false for
// any other statement.
func (e *Engine) AlterProcedureStatement(ctx *sql.Context, query string) (handled bool, err error) {
	toks := lexTokens(query)
	for len(toks) > 0 && toks[len(toks)-1].text(query) == ";" {
		toks = toks[:len(toks)-1]
	}
	if len(toks) < 3 || !toks[0].is("alter") || !toks[1].is("procedure") {
		return false, nil
	}
	syntax := func() error {
		return mysql.NewSQLError(mysql.ERParseError, "42000", "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near '%s'", query)
	}
	db := ctx.GetCurrentDatabase()
	name, ok := identText(query, toks[2]) // roles.go
	i := 3
	if ok && i+1 < len(toks) && toks[i].text(query) == "." {
		db = name
		name, ok = identText(query, toks[i+1])
		i += 2
	}
	if !ok || toks[2].kind == tokString {
		return true, syntax()
	}
	if db == "" {
		return true, sql.ErrNoDatabaseSelected.New()
	}
	r, ok := e.store.Routine(db, name)
	if !ok {
		return true, mysql.NewSQLError(mysql.ERSPDoesNotExist, "42000", "PROCEDURE %s.%s does not exist", db, name)
	}
	if err := e.checkRoutinePrivilege(ctx, r.DB, r.Name, sql.PrivilegeType_AlterRoutine, "alter routine"); err != nil { // routines.go
		return true, err
	}
	p, err := decodeProcedure(r)
	if err != nil {
		return true, err
	}
	// The stored statement's own characteristics, and where its body
	// begins.
	params, body, chars, ok := procedureParts(p.Statement)
	if !ok {
		return true, sql.ErrProcedureCreateStatementInvalid.New(p.Statement)
	}
	end, bad := readChars(query, toks, i, &chars, true)
	if bad || end != len(toks) {
		return true, syntax()
	}
	p.Statement = strings.TrimRight(p.Statement[:params], " \t\r\n") + chars.text() + "\n" + p.Statement[body:]
	def, err := json.Marshal(&p)
	if err != nil {
		return true, err
	}
	change := &storage.CatalogChange{Op: "alter_routine", Routine: &storage.RoutineDef{DB: r.DB, Name: r.Name, SQL: def}}
	return true, e.ddl(ctx, r.DB, query, change, nil)
}

// procedureParts finds, in a CREATE PROCEDURE statement, where its
// characteristics begin (after the parameter list), what they are, and
// where its body begins.
func procedureParts(stmt string) (params, body int, c procChars, ok bool) {
	toks := lexTokens(stmt)
	i := 0
	for i < len(toks) && !toks[i].is("procedure") {
		i++
	}
	for i < len(toks) && toks[i].text(stmt) != "(" {
		i++
	}
	depth := 0
	for ; i < len(toks); i++ {
		switch toks[i].text(stmt) {
		case "(":
			depth++
		case ")":
			depth--
		}
		if depth == 0 {
			break
		}
	}
	if i >= len(toks) {
		return 0, 0, c, false
	}
	params = toks[i].end
	j, _ := readChars(stmt, toks, i+1, &c, false)
	if j >= len(toks) {
		return 0, 0, c, false
	}
	return params, toks[j].start, c, true
}
