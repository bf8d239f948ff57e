package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// The FILE privilege, which go-mysql-server does not check for LOAD_FILE()
// or SELECT ... INTO OUTFILE / DUMPFILE (it does for LOAD DATA). Without
// it any account could read the binlogs, the account store and every file
// the server can read, and write files where the server can. Both are
// also confined to secure_file_priv, which the server sets to a folder of
// its own by default.

// fileDenied is MySQL's answer to a statement that needs FILE.
func fileDenied() error {
	return mysql.NewSQLError(erSpecificAccessDenied, "42000", "Access denied; you need (at least one of) the FILE privilege(s) for this operation")
}

// hasFile reports whether the session's account holds FILE (globally, the
// only level MySQL grants it at).
func (e *Engine) hasFile(ctx *sql.Context) bool {
	db := e.GMS.Analyzer.Catalog.MySQLDb
	return db.UserHasPrivileges(ctx, sql.NewPrivilegedOperation(sql.PrivilegeCheckSubject{}, sql.PrivilegeType_File))
}

// Function implements sql.FunctionProvider: the catalog asks the provider
// before its built-in functions, so this LOAD_FILE replaces go-mysql-server's.
func (p provider) Function(_ *sql.Context, name string) (sql.Function, bool) {
	if name == "load_file" {
		return sql.Function1{Name: "load_file", Fn: func(ctx *sql.Context, arg sql.Expression) sql.Expression {
			return &loadFile{Expression: function.NewLoadFile(ctx, arg), e: p.e}
		}}, true
	}
	return nil, false
}

// loadFile is LOAD_FILE() checking FILE before it reads.
type loadFile struct {
	sql.Expression
	e *Engine
}

func (f *loadFile) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	if !f.e.hasFile(ctx) {
		return nil, fileDenied()
	}
	return f.Expression.Eval(ctx, row)
}

func (f *loadFile) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	inner, err := f.Expression.WithChildren(ctx, children...)
	if err != nil {
		return nil, err
	}
	return &loadFile{Expression: inner, e: f.e}, nil
}

// writesFile reports whether st writes a file (INTO OUTFILE / DUMPFILE).
func writesFile(st ast.Statement) bool {
	toFile := func(in *ast.Into) bool { return in != nil && (in.Outfile != "" || in.Dumpfile != "") }
	found := false
	_ = ast.Walk(func(n ast.SQLNode) (bool, error) {
		switch n := n.(type) {
		case *ast.Into:
			found = found || toFile(n)
		case *ast.SetOp: // its walk does not visit Into
			found = found || toFile(n.Into)
		}
		return !found, nil
	}, st)
	return found
}

// checkFile refuses a statement that writes a file without FILE.
func checkFile(ctx *sql.Context, st ast.Statement) error {
	s := sessionOf(ctx)
	if s == nil || !writesFile(st) || s.eng.hasFile(ctx) {
		return nil
	}
	return fileDenied()
}
