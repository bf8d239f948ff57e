package sqlengine

import (
	"regexp"

	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// The parser takes PostgreSQL's RETURNING clause on INSERT, REPLACE,
// UPDATE and DELETE, and go-mysql-server runs it; MySQL has no such
// clause and refuses the statement as a syntax error, which clients and
// ORMs that target MySQL rely on to choose another way (SQLAlchemy's
// dialect tests check it). It is refused the same way here.

var returningWord = regexp.MustCompile(`(?i)\breturning\b`)

// refuseReturning answers a statement with a RETURNING clause, anywhere in
// it (a trigger's or procedure's body too), with MySQL's 1064.
func refuseReturning(st ast.SQLNode, text string) error {
	if !hasReturning(st) {
		return nil
	}
	near := text
	if loc := returningWord.FindStringIndex(text); loc != nil {
		near = text[loc[0]:]
	}
	if len(near) > 80 {
		near = near[:80]
	}
	return mysql.NewSQLError(mysql.ERParseError, "42000",
		"You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near '%s'", near)
}

func hasReturning(st ast.SQLNode) bool {
	switch st.(type) {
	case *ast.Select, *ast.SetOp, *ast.Set, *ast.Show, *ast.Use, *ast.Begin, *ast.Commit, *ast.Rollback:
		// The statements run most, and none can hold one: not walked.
		return false
	case *ast.Insert, *ast.Update, *ast.Delete:
		return returningWrite(st) // a subquery cannot be a write
	}
	found := false
	_ = ast.Walk(func(n ast.SQLNode) (bool, error) {
		found = found || returningWrite(n)
		if d, ok := n.(*ast.DDL); ok && d.TriggerSpec != nil && d.TriggerSpec.Body != nil {
			found = found || hasReturning(d.TriggerSpec.Body) // not walked into
		}
		return !found, nil
	}, st)
	return found
}

// returningWrite reports whether n is a write with a RETURNING clause.
func returningWrite(n ast.SQLNode) bool {
	switch n := n.(type) {
	case *ast.Insert:
		return len(n.Returning) > 0
	case *ast.Update:
		return len(n.Returning) > 0
	case *ast.Delete:
		return len(n.Returning) > 0
	}
	return false
}
