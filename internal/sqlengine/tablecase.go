package sqlengine

// Table names as the client wrote them. go-mysql-server lower-cases a
// table's alias (and the name it is read under) before it names the
// table in a result's column definitions, where MySQL sends them as
// written: a client that builds "table.column" names from them
// (go-sql-driver's columnsWithAlias, ORMs mapping joins) sees another
// name. The session remembers, per SELECT, the names of its FROM clause
// that have capitals, and the server puts them back (ResultTableName).

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

// ResultTableName returns the name a result column's table (as
// go-mysql-server names it) had in connection connID's statement, and
// whether it differs.
func (e *Engine) ResultTableName(connID uint32, table string) (string, bool) {
	if table == "" {
		return "", false
	}
	v, ok := e.sessions.Load(connID)
	if !ok {
		return "", false
	}
	s := v.(*Session)
	if len(s.tableCase) == 0 {
		return "", false
	}
	n, ok := s.tableCase[table]
	return n, ok && n != table
}
