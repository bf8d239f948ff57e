package sqlengine

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// REAL_AS_FLOAT (also part of ANSI): a column declared REAL is a FLOAT,
// where without the mode it is a DOUBLE. go-mysql-server makes every REAL
// a DOUBLE; under the mode the column definitions of CREATE TABLE and
// ALTER TABLE are read with FLOAT for REAL before it plans them. A CAST
// to REAL under the mode (MySQL's FLOAT) is refused with 1235: it would
// be a DOUBLE.

// realAsFloat applies the mode to st when ctx's session has it.
func realAsFloat(ctx *sql.Context, st ast.Statement) error {
	s := sessionOf(ctx)
	if s == nil || !s.sqlMode().ModeEnabled(sql.RealAsFloat) {
		return nil
	}
	for _, d := range ddlsOf(st) {
		if d == nil || d.TableSpec == nil {
			continue
		}
		for _, c := range d.TableSpec.Columns {
			if strings.EqualFold(c.Type.Type, "real") {
				c.Type.Type = "float"
			}
		}
	}
	var err error
	_ = ast.Walk(func(n ast.SQLNode) (bool, error) {
		if ct, ok := n.(*ast.ConvertType); ok && strings.EqualFold(ct.Type, "real") {
			err = errNotSupported("CAST AS REAL under sql_mode REAL_AS_FLOAT (CAST AS FLOAT is the same)")
			return false, err
		}
		return true, nil
	}, st)
	return err
}

// ddlsOf is the table definitions of a CREATE or ALTER TABLE statement.
func ddlsOf(st ast.Statement) []*ast.DDL {
	switch s := st.(type) {
	case *ast.DDL:
		return []*ast.DDL{s}
	case *ast.AlterTable:
		return s.Statements
	}
	return nil
}
