package sqlengine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
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
	return superless(ctx, func() bool {
		return db.UserHasPrivileges(ctx, sql.NewPrivilegedOperation(sql.PrivilegeCheckSubject{}, sql.PrivilegeType_File))
	})
}

// Function implements sql.FunctionProvider: the catalog asks the provider
// before its built-in functions, so the string functions of stringlimit.go
// and this LOAD_FILE replace go-mysql-server's (whose LOAD_FILE checks no
// privilege, and panics when max_allowed_packet has been set, as its value
// then is unsigned).
func (p provider) Function(_ *sql.Context, name string) (sql.Function, bool) {
	if f, ok := boundedFunction(name); ok {
		return f, true // stringlimit.go
	}
	if f, ok := regexpFunction(name); ok {
		return f, true // regexp.go
	}
	if f, ok := exactAggregateFunction(name); ok {
		return f, true // sumavg.go
	}
	if f, ok := statisticsFunction(name); ok {
		return f, true // statistics.go
	}
	if f, ok := currentDateFunction(name); ok {
		return f, true // currentdate.go
	}
	if f, ok := userFunction(name); ok {
		return f, true // userfunc.go
	}
	if f, ok := roundFunction(name); ok {
		return f, true // round.go
	}
	if f, ok := decimalCastFunction(name); ok {
		return f, true // decimalcast.go
	}
	if f, ok := timeCastFunction(name); ok {
		return f, true // timecast.go
	}
	if f, ok := dateOffsetFunction(name); ok {
		return f, true // intervalarith.go
	}
	if f, ok := textResultFunction(name); ok {
		return f, true // textresult.go
	}
	if f, ok := bitwiseFunction(name); ok {
		return f, true // bitwise.go
	}
	if f, ok := collatedSearchFunction(name); ok {
		return f, true // collatedsearch.go
	}
	if f, ok := jsonFunction(name); ok {
		return f, true // jsonfuncs.go
	}
	if name == "validate_password_strength" {
		return validatePasswordStrengthFunction(), true // passwordpolicy.go
	}
	if name == "load_file" {
		return sql.Function1{Name: "load_file", Fn: func(_ *sql.Context, arg sql.Expression) sql.Expression {
			return &loadFile{UnaryExpressionStub: expression.UnaryExpressionStub{Child: arg}, e: p.e}
		}}, true
	}
	return nil, false
}

// loadFile is MySQL's LOAD_FILE(name): the file's bytes, or NULL when it
// is not under secure_file_priv, cannot be read, or is larger than
// max_allowed_packet. It needs FILE.
type loadFile struct {
	expression.UnaryExpressionStub
	e *Engine
}

var _ sql.FunctionExpression = (*loadFile)(nil)

func (f *loadFile) FunctionName() string { return "load_file" }

func (f *loadFile) Description() string { return "returns the content of a file" }

func (f *loadFile) String() string { return fmt.Sprintf("load_file(%s)", f.Child) }

func (f *loadFile) Type(*sql.Context) sql.Type { return types.LongBlob }

func (f *loadFile) IsNullable(*sql.Context) bool { return true }

func (f *loadFile) CollationCoercibility(*sql.Context) (sql.CollationID, byte) {
	return sql.Collation_binary, 5
}

func (f *loadFile) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(f, len(children), 1)
	}
	return &loadFile{UnaryExpressionStub: expression.UnaryExpressionStub{Child: children[0]}, e: f.e}, nil
}

func (f *loadFile) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	if !f.e.hasFile(ctx) {
		return nil, fileDenied()
	}
	v, err := f.Child.Eval(ctx, row)
	if err != nil || v == nil {
		return nil, err
	}
	name, _, err := types.LongText.Convert(ctx, v)
	if err != nil {
		return nil, err
	}
	path, ok := name.(string)
	if !ok {
		return nil, nil
	}
	_, dir, _ := sql.SystemVariables.GetGlobal("secure_file_priv")
	if d, _ := dir.(string); d != "" && !underDir(d, path) {
		return nil, nil
	}
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return nil, nil
	}
	_, maxv, _ := sql.SystemVariables.GetGlobal("max_allowed_packet")
	if max, ok := asInt64(maxv); ok && st.Size() > max {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil
	}
	return data, nil
}

// underDir reports whether path lies in dir or below it, links resolved.
func underDir(dir, path string) bool {
	d, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// writesFile reports whether st writes a file (INTO OUTFILE / DUMPFILE).
func writesFile(st ast.Statement) bool {
	return len(filesWritten(st)) > 0
}

// filesWritten lists the files st writes (INTO OUTFILE / DUMPFILE).
func filesWritten(st ast.Statement) []string {
	var files []string
	add := func(in *ast.Into) {
		if in == nil {
			return
		}
		for _, f := range []string{in.Outfile, in.Dumpfile} {
			if f != "" {
				files = append(files, f)
			}
		}
	}
	_ = ast.Walk(func(n ast.SQLNode) (bool, error) {
		switch n := n.(type) {
		case *ast.Into:
			add(n)
		case *ast.SetOp: // its walk does not visit Into
			add(n.Into)
		}
		return true, nil
	}, st)
	return files
}

// checkFile refuses a statement that writes a file without FILE, and one
// that reads or writes a file outside secure_file_priv.
//
// go-mysql-server confines LOAD DATA and INTO OUTFILE / DUMPFILE by
// comparing path texts: a symbolic link inside the folder leads out of it,
// and a sibling folder whose name starts with the folder's passes. MySQL
// resolves links first and compares whole path elements, as underDir does;
// a denial is its ER_OPTION_PREVENTS_STATEMENT.
func checkFile(ctx *sql.Context, st ast.Statement) error {
	s := sessionOf(ctx)
	if s == nil {
		return nil
	}
	written := filesWritten(st)
	if len(written) > 0 && !s.eng.hasFile(ctx) {
		return fileDenied()
	}
	if l, ok := st.(*ast.Load); ok && !bool(l.Local) {
		// go-mysql-server checks FILE for LOAD DATA itself.
		if !confined(l.Infile, false) {
			return errReadOnly("--secure-file-priv")
		}
	}
	for _, f := range written {
		if !confined(f, true) {
			return errReadOnly("--secure-file-priv")
		}
	}
	return nil
}

// confined reports whether path may be read (or, when create, created)
// under secure_file_priv. A file to create must not exist (the writer
// refuses an existing one, a link included), so its folder is the one
// that must lie under secure_file_priv.
func confined(path string, create bool) bool {
	_, dir, _ := sql.SystemVariables.GetGlobal("secure_file_priv")
	d, _ := dir.(string)
	if d == "" {
		return true
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	if create {
		return underDir(d, filepath.Dir(abs))
	}
	return underDir(d, abs)
}

// CheckExecute checks, before connection connID executes the prepared
// statement query, the privileges go-mysql-server does not check on
// execution: FILE for a statement that writes or reads a file (the
// account may have lost it since the statement was prepared).
func (e *Engine) CheckExecute(connID uint32, query string) error {
	v, ok := e.sessions.Load(connID)
	if !ok {
		return nil
	}
	s := v.(*Session)
	st, ok := s.BaseSession.GetPreparedQuery(query)
	if !ok {
		return nil
	}
	ctx := sql.NewContext(context.Background(), sql.WithSession(s))
	if err := checkLockingRead(ctx, st); err != nil {
		return err
	}
	if !writesFile(st) {
		return nil
	}
	return checkFile(ctx, st)
}
