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
// it, with MySQL's 1064.
func refuseReturning(st ast.SQLNode, text string) error {
	found := false
	_ = ast.Walk(func(n ast.SQLNode) (bool, error) {
		switch n := n.(type) {
		case *ast.Insert:
			found = found || len(n.Returning) > 0
		case *ast.Update:
			found = found || len(n.Returning) > 0
		case *ast.Delete:
			found = found || len(n.Returning) > 0
		}
		return !found, nil
	}, st)
	if !found {
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
