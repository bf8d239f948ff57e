package sqlengine

// Table names as the client wrote them. go-mysql-server lower-cases a
// table's alias (and the name it is read under) before it names the
// table in a result's column definitions, where MySQL sends them as
// written: a client that builds "table.column" names from them
// (go-sql-driver's columnsWithAlias, ORMs mapping joins) sees another
// name. The session remembers, per SELECT, the names of its FROM clause
// that have capitals, and the server puts them back (ResultTableNames).

import (
	"strings"

	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// noteTableCase records the FROM names of st that are not all lower case.
func (s *Session) noteTableCase(st ast.Statement) {
	clear(s.tableCase)
	sel, ok := st.(*ast.Select)
	if !ok {
		return
	}
	for _, te := range sel.From {
		s.collectTableCase(te)
	}
}

func (s *Session) collectTableCase(te ast.TableExpr) {
	note := func(name string) {
		if name == "" || strings.ToLower(name) == name {
			return
		}
		if s.tableCase == nil {
			s.tableCase = map[string]string{}
		}
		s.tableCase[strings.ToLower(name)] = name
	}
	switch t := te.(type) {
	case *ast.AliasedTableExpr:
		if !t.As.IsEmpty() {
			note(t.As.String())
			return
		}
		if tn, ok := t.Expr.(ast.TableName); ok {
			note(tn.Name.String())
		}
	case *ast.JoinTableExpr:
		s.collectTableCase(t.LeftExpr)
		s.collectTableCase(t.RightExpr)
	case *ast.ParenTableExpr:
		for _, e := range t.Exprs {
			s.collectTableCase(e)
		}
	}
}

// ResultTableNames returns connection connID's current statement's
// table names with capitals, by their lower-cased form (nil if none).
// The map is the session's: read it before the statement ends.
func (e *Engine) ResultTableNames(connID uint32) map[string]string {
	v, ok := e.sessions.Load(connID)
	if !ok {
		return nil
	}
	if s := v.(*Session); len(s.tableCase) > 0 {
		return s.tableCase
	}
	return nil
}
