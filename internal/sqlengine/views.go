package sqlengine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/lockstepdb/lockstep/internal/storage"
)

// Views are kept in the catalog (storage.ViewDef) in the SQL layer's form
// (viewSQL): the SELECT, the CREATE VIEW statement go-mysql-server parses
// again at each use, and the sql_mode it was created under (which decides
// how that statement reads). A view holds no rows: reading it reads its
// tables under the reading session's snapshot and privileges.
//
// CREATE VIEW commits like any DDL: a create_view catalog change with the
// statement as its binlog text, so recovery, Lockstep replicas and cluster
// members apply the change and MySQL or MariaDB replicas run the
// statement. CREATE OR REPLACE VIEW and ALTER VIEW replace the view in
// that one change: go-mysql-server drops the old view first
// (Database.DropView), and that drop waits for the create when the
// session's statement is the replacing one (Session.replacingView), so a
// crash or a failed create never leaves the view gone. DROP DATABASE
// drops its views with its tables.

// loggedCreateView is the statement the binlog carries for a CREATE VIEW,
// in the form MySQL writes: ALGORITHM, DEFINER (the creating account
// when the statement names none) and SQL SECURITY spelled out, so that a
// MySQL or MariaDB replica makes the view with the same definer rather
// than none (MariaDB then refuses to read it, 1449).
func loggedCreateView(ctx *sql.Context, name, selectStmt string, spec *ast.ViewSpec, replace bool) string {
	algorithm := strings.ToUpper(spec.Algorithm)
	if algorithm == "" {
		algorithm = "UNDEFINED"
	}
	definer := spec.Definer
	if definer == "" || strings.EqualFold(definer, "current_user") || strings.EqualFold(definer, "current_user()") {
		c := ctx.Session.Client()
		definer = quoteIdent(c.User) + "@" + quoteIdent(c.Address)
	}
	security := strings.ToUpper(spec.Security)
	if security == "" {
		security = "DEFINER"
	}
	var b strings.Builder
	b.WriteString("CREATE ")
	if replace {
		b.WriteString("OR REPLACE ")
	}
	fmt.Fprintf(&b, "ALGORITHM=%s DEFINER=%s SQL SECURITY %s VIEW %s", algorithm, definer, security, quoteIdent(name))
	if len(spec.Columns) > 0 {
		cols := make([]string, len(spec.Columns))
		for i, c := range spec.Columns {
			cols[i] = quoteIdent(c.String())
		}
		b.WriteString(" (" + strings.Join(cols, ", ") + ")")
	}
	b.WriteString(" AS " + selectStmt)
	switch spec.CheckOption {
	case ast.ViewCheckOptionCascaded:
		b.WriteString(" WITH CASCADED CHECK OPTION")
	case ast.ViewCheckOptionLocal:
		b.WriteString(" WITH LOCAL CHECK OPTION")
	}
	return b.String()
}

// viewSelect is the SELECT a view keeps. The CREATE VIEW statement kept
// for go-mysql-server to parse at each use names the view with its
// database (go-mysql-server resolves an unqualified one in the reading
// session's current database), and a column list, which
// go-mysql-server's SHOW CREATE VIEW would leave out (so a dump would
// name the columns after the SELECT's), becomes aliases of the SELECT's
// columns, as MySQL itself rewrites it.
// It sets the aliases in spec's SELECT.
func viewSelect(selectStmt string, spec *ast.ViewSpec) (string, error) {
	if len(spec.Columns) == 0 {
		return selectStmt, nil
	}
	first := spec.ViewExpr
	for {
		switch s := first.(type) {
		case *ast.SetOp:
			first = s.Left
			continue
		case *ast.ParenSelect:
			first = s.Select
			continue
		}
		break
	}
	sel, ok := first.(*ast.Select)
	if !ok {
		return "", errNotSupported("a view column list over this SELECT: name the columns in the SELECT")
	}
	if len(sel.SelectExprs) != len(spec.Columns) {
		return "", sql.ErrInvalidColumnNumber.New(len(sel.SelectExprs), len(spec.Columns))
	}
	for i, e := range sel.SelectExprs {
		ae, ok := e.(*ast.AliasedExpr)
		if !ok {
			return "", errNotSupported("a view column list over SELECT *: name the columns in the SELECT")
		}
		ae.As = spec.Columns[i]
	}
	return ast.String(spec.ViewExpr), nil
}

// viewSQL is a view's definition as the SQL layer keeps it.
type viewSQL struct {
	Select  string `json:"select"`
	Create  string `json:"create"`
	SQLMode string `json:"sql_mode,omitempty"`
}

var _ sql.ViewDatabase = (*Database)(nil)

// noteView records, for the statement about to run, which view a CREATE
// OR REPLACE VIEW or ALTER VIEW replaces ("" for any other statement).
// It also gives a CREATE VIEW its view's name as the statement's table:
// go-mysql-server takes the view's database from there, and so made
// CREATE VIEW db.v in the current database (or failed with 1046 without
// one).
func (s *Session) noteView(st ast.Statement) {
	s.replacingView = ""
	d, ok := st.(*ast.DDL)
	if !ok || d.ViewSpec == nil {
		return
	}
	if d.Table.Name.IsEmpty() {
		d.Table = d.ViewSpec.ViewName
	}
	if d.OrReplace || strings.EqualFold(d.Action, ast.AlterStr) {
		s.replacingView = d.ViewSpec.ViewName.Name.String()
	}
}

func (d *Database) CreateView(ctx *sql.Context, name, selectStmt, createStmt string) error {
	if err := checkIdentifierLength(name); err != nil {
		return err
	}
	if _, ok := d.e.store.Table(d.name, name); ok {
		return sql.ErrTableAlreadyExists.New(name)
	}
	replace, alter := false, false
	if s := sessionOf(ctx); s != nil {
		replace = strings.EqualFold(s.replacingView, name)
		alter = s.alteringView
	}
	_, exists := d.e.store.View(d.name, name)
	if exists && !replace {
		return sql.ErrExistingView.New(d.name, name)
	}
	if !exists && alter {
		return sql.ErrTableNotFound.New(d.name + "." + name)
	}
	mode := SQLMode(ctx)
	st, _, err := ParseOne(ctx, createStmt, mode.ParserOptions())
	if err != nil {
		return err
	}
	logged := createStmt
	if ddl, ok := st.(*ast.DDL); ok && ddl.ViewSpec != nil {
		// The logged statement first: viewSelect changes the parsed SELECT.
		logged = loggedCreateView(ctx, name, selectStmt, ddl.ViewSpec, replace || exists)
		if selectStmt, err = viewSelect(selectStmt, ddl.ViewSpec); err != nil {
			return err
		}
	}
	body, err := json.Marshal(viewSQL{Select: selectStmt, Create: fmt.Sprintf("CREATE VIEW %s.%s AS %s", quoteIdent(d.name), quoteIdent(name), selectStmt), SQLMode: stripNoBackslashEscapes(mode.String())})
	if err != nil {
		return err
	}
	return d.e.ddl(ctx, d.name, logged, &storage.CatalogChange{Op: "create_view", View: &storage.ViewDef{DB: d.name, Name: name, SQL: body}}, nil)
}

func (d *Database) DropView(ctx *sql.Context, name string) error {
	v, ok := d.e.store.View(d.name, name)
	if s := sessionOf(ctx); s != nil && s.replacingView != "" && strings.EqualFold(s.replacingView, name) {
		return nil // replaced by the create that follows, in one change
	}
	if !ok {
		return sql.ErrViewDoesNotExist.New(d.name, name)
	}
	stmt := fmt.Sprintf("DROP VIEW %s /* generated by server */", quoteIdent(v.Name))
	return d.e.ddl(ctx, d.name, stmt, &storage.CatalogChange{Op: "drop_view", View: &storage.ViewDef{DB: d.name, Name: v.Name}}, nil)
}

func (d *Database) GetViewDefinition(ctx *sql.Context, name string) (sql.ViewDefinition, bool, error) {
	v, ok := d.e.store.View(d.name, name)
	if !ok {
		return sql.ViewDefinition{}, false, nil
	}
	d.standInDatabase(ctx)
	def, err := viewDefinition(v)
	return def, err == nil, err
}

// standInDatabase makes d the session's database for the rest of the
// statement if it has none. go-mysql-server reads a view's definition
// only with a current database (it saves the current one first, and fails
// with 1046 without one; information_schema.VIEWS then listed nothing). A
// statement MySQL would refuse for naming another table without a
// database may then find it in d.
func (d *Database) standInDatabase(ctx *sql.Context) {
	if s := sessionOf(ctx); s != nil && s.BaseSession.GetCurrentDatabase() == "" {
		s.viewDB = d.name
	}
}

func (d *Database) AllViews(ctx *sql.Context) ([]sql.ViewDefinition, error) {
	d.standInDatabase(ctx)
	var out []sql.ViewDefinition
	for _, v := range d.e.store.Views(d.name) {
		def, err := viewDefinition(v)
		if err != nil {
			return nil, err
		}
		out = append(out, def)
	}
	return out, nil
}

func viewDefinition(v storage.ViewDef) (sql.ViewDefinition, error) {
	var s viewSQL
	if err := json.Unmarshal(v.SQL, &s); err != nil {
		return sql.ViewDefinition{}, fmt.Errorf("view %s.%s: %w", v.DB, v.Name, err)
	}
	return sql.ViewDefinition{Name: v.Name, TextDefinition: s.Select, CreateViewStatement: s.Create, SqlMode: s.SQLMode}, nil
}

// viewTables lists the ids of the tables view db.name reads, through the
// views it reads (to a depth of 16); isView is false when there is no
// such view.
func (e *Engine) viewTables(ctx *sql.Context, db, name string, depth int) (ids []uint64, isView bool, err error) {
	v, ok := e.store.View(db, name)
	if !ok {
		return nil, false, nil
	}
	if depth > 16 {
		return nil, true, fmt.Errorf("view %s.%s: views nested more than 16 deep", db, name)
	}
	def, err := viewDefinition(v)
	if err != nil {
		return nil, true, err
	}
	st, _, err := ParseOne(ctx, def.TextDefinition, sql.NewSqlModeFromString(def.SqlMode).ParserOptions())
	if err != nil {
		return nil, true, fmt.Errorf("view %s.%s: %w", db, name, err)
	}
	var walkErr error
	_ = ast.Walk(func(node ast.SQLNode) (bool, error) {
		tn, ok := node.(ast.TableName)
		if !ok || tn.Name.IsEmpty() || walkErr != nil {
			return walkErr == nil, nil
		}
		tdb := tn.DbQualifier.String()
		if tdb == "" {
			tdb = v.DB
		}
		if t, ok := e.store.Table(tdb, tn.Name.String()); ok {
			ids = append(ids, t.Def.ID)
			return true, nil
		}
		more, _, err := e.viewTables(ctx, tdb, tn.Name.String(), depth+1)
		ids = append(ids, more...)
		walkErr = err
		return true, nil
	}, st)
	return ids, true, walkErr
}

// rewriteAlterView turns ALTER [ALGORITHM = a] [DEFINER = u] [SQL
// SECURITY s] VIEW ... (which the parser lacks) into CREATE OR REPLACE
// with the same clauses, and says whether it did; the view must exist
// (Session.alteringView, checked in CreateView).
func rewriteAlterView(query string) (string, bool) {
	if len(query) > 1<<20 || !containsFold(query, "view") {
		return query, false
	}
	toks := lexTokens(query)
	if len(toks) < 2 || !toks[0].is("alter") {
		return query, false
	}
	for i := 1; i < len(toks); i++ {
		switch {
		case toks[i].is("view"):
			return query[:toks[0].start] + "CREATE OR REPLACE" + query[toks[0].end:], true
		case toks[i].is("algorithm"), toks[i].is("definer"), toks[i].is("sql"), toks[i].is("security"),
			toks[i].text(query) == "=", toks[i].text(query) == "@":
		case toks[i].kind == tokWord && i > 1 && (toks[i-1].text(query) == "=" || toks[i-1].is("security") || toks[i-1].text(query) == "@"),
			toks[i].kind == tokString || toks[i].kind == tokQuotedIdent:
		default:
			return query, false
		}
	}
	return query, false
}

// noteAlterView rewrites an ALTER VIEW for the parser and tells the
// session whether the statement is one.
func noteAlterView(ctx context.Context, query string) string {
	q, alter := rewriteAlterView(query)
	if sctx, ok := ctx.(*sql.Context); ok {
		if s := sessionOf(sctx); s != nil {
			s.alteringView = alter
		}
	}
	return q
}

// GetCurrentDatabase is the session's current database, or, in a
// statement that read a view without one, the view's (GetViewDefinition),
// or, while trigger bodies are planned, the triggers' (triggers.go).
func (s *Session) GetCurrentDatabase() string {
	if s.triggerDB != "" {
		return s.triggerDB
	}
	if db := s.BaseSession.GetCurrentDatabase(); db != "" || s.viewDB == "" {
		return db
	}
	return s.viewDB
}
