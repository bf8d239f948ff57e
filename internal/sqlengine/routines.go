package sqlengine

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/lockstepdb/lockstep/internal/mysqlerr"
	"github.com/lockstepdb/lockstep/internal/routine"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// Stored procedures are kept in the catalog (storage.RoutineDef, in
// procedureSQL's form) and run by the server with Lockstep's own
// interpreter (package routine), statement by statement through the
// same path as a client's statements. go-mysql-server keeps only what
// the catalog gives it: CREATE PROCEDURE (which checks CREATE ROUTINE
// and hands the statement to SaveStoredProcedure), DROP PROCEDURE (ALTER
// ROUTINE), SHOW CREATE PROCEDURE, SHOW PROCEDURE STATUS and
// information_schema.ROUTINES. Its own interpreter never runs: a CALL it
// would plan (a prepared CALL) is refused (boundedTopN.Build).
//
//   - A procedure is kept as the CREATE statement MySQL logs and shows,
//     with its DEFINER spelled out, and the sql_mode it was made under
//     (in the parser's form: clienttext.go). The binlog carries that
//     statement, so MySQL, MariaDB and Lockstep replicas make the same
//     procedure. A CALL is not logged: the rows its statements change
//     are, in their own transactions, as MySQL logs them under ROW.
//   - The body is checked when the procedure is made (routine.Check), so
//     what the interpreter does not run is refused then, not at a CALL.
//   - Naming another account as DEFINER needs SUPER or SET_USER_ID, as
//     for triggers (triggerDefiner).

// procedureSQL is a stored procedure's definition in the catalog.
type procedureSQL struct {
	Definer   string    `json:"definer"`   // `user`@`host`
	Statement string    `json:"statement"` // CREATE DEFINER=... PROCEDURE ..., the parser's form
	SQLMode   string    `json:"sql_mode"`
	Created   time.Time `json:"created"`
}

// decodeProcedure reads a procedure's definition from the catalog.
func decodeProcedure(r storage.RoutineDef) (procedureSQL, error) {
	var p procedureSQL
	if err := json.Unmarshal(r.SQL, &p); err != nil {
		return procedureSQL{}, fmt.Errorf("procedure %s.%s: %w", r.DB, r.Name, err)
	}
	return p, nil
}

// erSpAlreadyExists is ER_SP_ALREADY_EXISTS.
const erSpAlreadyExists = 1304

func (d *Database) GetStoredProcedure(_ *sql.Context, name string) (sql.StoredProcedureDetails, bool, error) {
	r, ok := d.e.store.Routine(d.name, name)
	if !ok {
		return sql.StoredProcedureDetails{}, false, nil
	}
	det, err := procedureDetails(r)
	return det, err == nil, err
}

func (d *Database) GetStoredProcedures(*sql.Context) ([]sql.StoredProcedureDetails, error) {
	var out []sql.StoredProcedureDetails
	for _, r := range d.e.store.Routines(d.name) {
		det, err := procedureDetails(r)
		if err != nil {
			return nil, err
		}
		out = append(out, det)
	}
	return out, nil
}

func procedureDetails(r storage.RoutineDef) (sql.StoredProcedureDetails, error) {
	p, err := decodeProcedure(r)
	if err != nil {
		return sql.StoredProcedureDetails{}, err
	}
	// go-mysql-server parses the statement (SHOW PROCEDURE STATUS,
	// PARAMETERS) with its parser, which takes no DO in a body: it is
	// given the body's DO statements as the interpreter reads them.
	stmt, _ := routine.RewriteDo(p.Statement)
	return sql.StoredProcedureDetails{Name: r.Name, CreateStatement: stmt, CreatedAt: p.Created, ModifiedAt: p.Created, SqlMode: p.SQLMode}, nil
}

func (d *Database) SaveStoredProcedure(ctx *sql.Context, det sql.StoredProcedureDetails) error {
	mode := sql.LoadSqlMode(ctx)
	st, err := ast.ParseWithOptions(ctx, det.CreateStatement, mode.ParserOptions())
	if err != nil {
		return err
	}
	ddl, ok := st.(*ast.DDL)
	if !ok || ddl.ProcedureSpec == nil {
		return sql.ErrProcedureCreateStatementInvalid.New(det.CreateStatement)
	}
	spec := ddl.ProcedureSpec
	name := spec.ProcName.Name.String()
	if _, exists := d.e.store.Routine(d.name, name); exists {
		return mysql.NewSQLError(erSpAlreadyExists, "42000", "PROCEDURE %s already exists", name)
	}
	if err := routine.Check(spec); err != nil {
		return err
	}
	definer, err := d.e.triggerDefiner(ctx, spec.Definer, true)
	if err != nil {
		return err
	}
	// Kept as the client wrote it (its DO statements: routine.RewriteDo).
	tail, ok := routine.AfterKeyword(routine.RestoreDo(det.CreateStatement), ast.PROCEDURE)
	if !ok {
		return sql.ErrProcedureCreateStatementInvalid.New(det.CreateStatement)
	}
	p := procedureSQL{
		Definer:   definer,
		Statement: "CREATE DEFINER=" + definer + " PROCEDURE " + tail,
		SQLMode:   stripNoBackslashEscapes(mode.String()),
		Created:   det.CreatedAt,
	}
	body, err := json.Marshal(&p)
	if err != nil {
		return err
	}
	change := &storage.CatalogChange{Op: "create_routine", Routine: &storage.RoutineDef{DB: d.name, Name: name, SQL: body}}
	return d.e.ddl(ctx, d.name, p.Statement, change, nil)
}

func (d *Database) DropStoredProcedure(ctx *sql.Context, name string) error {
	r, ok := d.e.store.Routine(d.name, name)
	if !ok {
		return sql.ErrStoredProcedureDoesNotExist.New(d.name + "." + name)
	}
	change := &storage.CatalogChange{Op: "drop_routine", Routine: &storage.RoutineDef{DB: d.name, Name: r.Name}}
	return d.e.ddl(ctx, d.name, "DROP PROCEDURE "+quoteIdent(r.Name), change, nil)
}

// StoredProcedure is a stored procedure as CALL runs it.
type StoredProcedure struct {
	DB, Name  string
	Definer   string // `user`@`host`
	Statement string // its CREATE PROCEDURE, in the parser's form
	SQLMode   string // the sql_mode it was made under
}

// StoredProcedure finds procedure name of database db.
func (e *Engine) StoredProcedure(db, name string) (StoredProcedure, bool, error) {
	r, ok := e.store.Routine(db, name)
	if !ok {
		return StoredProcedure{}, false, nil
	}
	p, err := decodeProcedure(r)
	if err != nil {
		return StoredProcedure{}, false, err
	}
	d, _ := e.store.Database(db)
	return StoredProcedure{DB: d.Name, Name: r.Name, Definer: p.Definer, Statement: p.Statement, SQLMode: p.SQLMode}, true, nil
}

// erProcAutoDenied is ER_PROCACCESS_DENIED_ERROR.
const erProcAccessDenied = 1370

// CheckProcedureExecute refuses a CALL of procedure db.name by the session
// unless it holds EXECUTE on it, its database or globally (1370).
func (e *Engine) CheckProcedureExecute(connID uint32, db, name string) error {
	ctx, ok := e.SessionContext(connID)
	if !ok {
		return nil
	}
	return e.checkRoutinePrivilege(ctx, db, name, sql.PrivilegeType_Execute, "execute")
}

// checkRoutinePrivilege refuses command (its name in MySQL's message) on
// procedure db.name unless the session holds priv on it, its database or
// globally (1370).
func (e *Engine) checkRoutinePrivilege(ctx *sql.Context, db, name string, priv sql.PrivilegeType, command string) error {
	mdb := e.GMS.Analyzer.Catalog.MySQLDb
	if !mdb.Enabled() {
		return nil
	}
	e.sessionPrivileges(ctx)
	if mdb.UserHasPrivileges(ctx, sql.NewPrivilegedOperation(sql.PrivilegeCheckSubject{Database: db}, priv)) ||
		mdb.UserHasPrivileges(ctx, sql.NewPrivilegedOperation(sql.PrivilegeCheckSubject{Database: db, Routine: name, IsProcedure: true}, priv)) {
		return nil
	}
	c := ctx.Session.Client()
	return mysql.NewSQLError(erProcAccessDenied, "42000", "%s command denied to user '%s'@'%s' for routine '%s.%s'", command, c.User, c.Address, db, name)
}

// RunAs makes the session act as account definer (`user`@`host`), with
// its privileges and as CURRENT_USER(), until restore is called: a
// procedure of SQL SECURITY DEFINER runs so. A definer that does not
// exist is 1449.
func (e *Engine) RunAs(connID uint32, definer string) (restore func(), err error) {
	ctx, ok := e.SessionContext(connID)
	s := sessionOf(ctx)
	mdb := e.GMS.Analyzer.Catalog.MySQLDb
	if !ok || s == nil || !mdb.Enabled() {
		return func() {}, nil
	}
	user, host, ok := splitDefiner(definer)
	if !ok {
		return nil, mysql.NewSQLError(erNoSuchUser, "HY000", "The user specified as a definer (%s) does not exist", definer)
	}
	old := s.Client()
	if old.User == user && old.Address == host {
		return func() {}, nil
	}
	set, err := definerPrivileges(mdb, user, host) // triggers.go
	if err != nil {
		return nil, err
	}
	oldSet, counter := s.BaseSession.GetPrivilegeSet()
	s.SetClient(sql.Client{User: user, Address: host, Capabilities: old.Capabilities})
	s.BaseSession.SetPrivilegeSet(set, counter)
	s.privChecked = false
	return func() {
		s.SetClient(old)
		s.BaseSession.SetPrivilegeSet(oldSet, counter)
		s.privChecked = false
	}, nil
}

// UseDatabase makes db the session's current database until restore
// is called: a procedure runs in its own database.
func (e *Engine) UseDatabase(connID uint32, db string) (restore func()) {
	ctx, ok := e.SessionContext(connID)
	if !ok {
		return func() {}
	}
	old := ctx.GetCurrentDatabase()
	ctx.SetCurrentDatabase(db)
	return func() { ctx.SetCurrentDatabase(old) }
}

// Assign converts v as MySQL stores it in a local variable or parameter
// (name) of type t: the value and its type are the column's would be,
// and a value that does not fit is refused (1264, 1366, 1406).
func (e *Engine) Assign(connID uint32, name string, t *ast.ColumnType, v sqltypes.Value) (sqltypes.Value, error) {
	if v.IsNull() {
		return sqltypes.NULL, nil
	}
	ctx, ok := e.SessionContext(connID)
	if !ok {
		return v, nil
	}
	typ, err := types.ColumnTypeToType(t)
	if err != nil {
		return sqltypes.Value{}, err
	}
	var raw any = v.ToString()
	if v.IsBinary() || v.Type() == sqltypes.Bit {
		raw = v.Raw()
	}
	val, inRange, err := typ.Convert(ctx, raw)
	if err != nil {
		return sqltypes.Value{}, assignError(name, typ, v, err)
	}
	if inRange != sql.InRange {
		return sqltypes.Value{}, mysql.NewSQLError(mysql.ERWarnDataOutOfRange, "22003", "Out of range value for column '%s' at row 1", name)
	}
	out, err := typ.SQL(ctx, nil, val)
	if err != nil {
		return sqltypes.Value{}, assignError(name, typ, v, err)
	}
	return out, nil
}

func assignError(name string, typ sql.Type, v sqltypes.Value, err error) error {
	if types.IsText(typ) || types.IsBinaryType(typ) {
		return mysql.NewSQLError(mysql.ERDataTooLong, "22001", "Data too long for column '%s' at row 1", name)
	}
	if types.IsNumber(typ) {
		return mysql.NewSQLError(mysql.ERTruncatedWrongValueForField, "HY000", "Incorrect %s value: '%s' for column '%s' at row 1", typ.String(), v.ToString(), name)
	}
	return mysqlerr.Restore(err)
}

// Warn adds a warning to the session's statement.
func (e *Engine) Warn(connID uint32, code int, msg string) {
	if ctx, ok := e.SessionContext(connID); ok {
		ctx.Session.Warn(&sql.Warning{Level: "Warning", Code: code, Message: msg})
	}
}

// CurrentDatabase is the session's current database ("" for none).
func (e *Engine) CurrentDatabase(connID uint32) string {
	ctx, ok := e.SessionContext(connID)
	if !ok {
		return ""
	}
	return ctx.GetCurrentDatabase()
}

// ParserOptionsFor is the parser's options under the session's sql_mode.
func (e *Engine) ParserOptionsFor(connID uint32) ast.ParserOptions {
	ctx, ok := e.SessionContext(connID)
	if !ok {
		return ast.ParserOptions{}
	}
	return ParserOptions(ctx)
}

// routinesRows are information_schema.ROUTINES: the stored procedures
// the session may see (it holds EXECUTE, CREATE ROUTINE or ALTER
// ROUTINE on them, or is their definer), in MySQL's columns.
func (e *Engine) routinesRows(ctx *sql.Context) ([]sql.Row, error) {
	e.sessionPrivileges(ctx)
	client, _ := ctx.GetSessionVariable(ctx, "character_set_client")
	conn, _ := ctx.GetSessionVariable(ctx, "collation_connection")
	var rows []sql.Row
	for _, d := range e.store.Databases() {
		for _, r := range e.store.Routines(d.Name) {
			p, err := decodeProcedure(r)
			if err != nil {
				return nil, err
			}
			see := e.routineVisibility(ctx, p.Definer, d.Name, r.Name)
			if see == routineHidden {
				continue
			}
			text, _ := routine.RewriteDo(p.Statement)
			st, err := ast.ParseWithOptions(ctx, text, sql.NewSqlModeFromString(p.SQLMode).ParserOptions())
			if err != nil {
				return nil, err
			}
			ddl, ok := st.(*ast.DDL)
			if !ok || ddl.ProcedureSpec == nil {
				return nil, sql.ErrProcedureCreateStatementInvalid.New(p.Statement)
			}
			security, deterministic, access, comment := "DEFINER", "NO", "CONTAINS SQL", ""
			for _, ch := range ddl.ProcedureSpec.Characteristics {
				switch ch.Type {
				case ast.CharacteristicValue_SqlSecurityInvoker:
					security = "INVOKER"
				case ast.CharacteristicValue_Deterministic:
					deterministic = "YES"
				case ast.CharacteristicValue_NoSql:
					access = "NO SQL"
				case ast.CharacteristicValue_ReadsSqlData:
					access = "READS SQL DATA"
				case ast.CharacteristicValue_ModifiesSqlData:
					access = "MODIFIES SQL DATA"
				case ast.CharacteristicValue_Comment:
					comment = ch.Comment
				}
			}
			var body any
			if see == routineShown && ddl.SubStatementPositionEnd <= len(text) && ddl.SubStatementPositionStart < ddl.SubStatementPositionEnd {
				body = routine.RestoreDo(strings.TrimSpace(text[ddl.SubStatementPositionStart:ddl.SubStatementPositionEnd]))
			}
			user, host, _ := splitDefiner(p.Definer)
			rows = append(rows, sql.Row{
				r.Name, "def", d.Name, r.Name, "PROCEDURE", "",
				nil, nil, nil, nil, nil, nil, nil, nil,
				"SQL", body, nil, "SQL", "SQL", deterministic, access, nil, security,
				p.Created.UTC(), p.Created.UTC(), p.SQLMode, comment, user + "@" + host,
				client, conn, sql.CollationID(d.Collation).String(),
			})
		}
	}
	return rows, nil
}

// What of a procedure an account may see, as MySQL 8 has it: all of it
// as its definer, with SHOW_ROUTINE or with global SELECT; that it
// exists, but not its body, with CREATE ROUTINE, ALTER ROUTINE or
// EXECUTE on it (or its database, or globally); else nothing.
type visibility int

const (
	routineHidden visibility = iota
	routineNamed
	routineShown
)

func (e *Engine) routineVisibility(ctx *sql.Context, definer, db, name string) visibility {
	mdb := e.GMS.Analyzer.Catalog.MySQLDb
	if !mdb.Enabled() {
		return routineShown
	}
	rd := mdb.Reader()
	self, ok := e.sessionAccount(ctx, rd)
	rd.Close()
	if ok && self.String() == definer {
		return routineShown
	}
	set := sessionOf(ctx).privileges(ctx)
	if set.HasDynamic("SHOW_ROUTINE") || set.Has(sql.PrivilegeType_Select) {
		return routineShown
	}
	for _, pt := range []sql.PrivilegeType{sql.PrivilegeType_Execute, sql.PrivilegeType_CreateRoutine, sql.PrivilegeType_AlterRoutine} {
		if mdb.UserHasPrivileges(ctx, sql.NewPrivilegedOperation(sql.PrivilegeCheckSubject{Database: db}, pt)) ||
			mdb.UserHasPrivileges(ctx, sql.NewPrivilegedOperation(sql.PrivilegeCheckSubject{Database: db, Routine: name, IsProcedure: true}, pt)) {
			return routineNamed
		}
	}
	return routineHidden
}

// showCreateProcedure is SHOW CREATE PROCEDURE, with the procedure's
// sql_mode (go-mysql-server gave none).
func showCreateProcedure(ctx *sql.Context, n *plan.ShowCreateProcedure) (sql.RowIter, error) {
	s := sessionOf(ctx)
	if s == nil {
		return nil, sql.ErrStoredProcedureDoesNotExist.New(n.ProcedureName)
	}
	d, ok := s.eng.store.Database(n.Database().Name())
	if !ok {
		return nil, sql.ErrDatabaseNotFound.New(n.Database().Name())
	}
	r, ok := s.eng.store.Routine(d.Name, n.ProcedureName)
	if !ok {
		return nil, sql.ErrStoredProcedureDoesNotExist.New(d.Name + "." + n.ProcedureName)
	}
	p, err := decodeProcedure(r)
	if err != nil {
		return nil, err
	}
	var stmt any = p.Statement
	switch s.eng.routineVisibility(ctx, p.Definer, d.Name, r.Name) {
	case routineHidden:
		return nil, sql.ErrStoredProcedureDoesNotExist.New(d.Name + "." + n.ProcedureName)
	case routineNamed:
		stmt = nil
	}
	client, _ := ctx.GetSessionVariable(ctx, "character_set_client")
	conn, _ := ctx.GetSessionVariable(ctx, "collation_connection")
	return sql.RowsToRowIter(sql.Row{r.Name, p.SQLMode, stmt, client, conn, sql.CollationID(d.Collation).String()}), nil
}

// checkProcedureBody checks a CREATE PROCEDURE's body as the
// interpreter runs it (routine.Check), then hides it from
// go-mysql-server, whose checks are those of its own interpreter (it
// refuses handlers for an error number or SQLSTATE, which Lockstep
// runs): go-mysql-server sees an empty body, and SaveStoredProcedure
// gets the statement's text.
func checkProcedureBody(st ast.Statement) error {
	ddl, ok := st.(*ast.DDL)
	if !ok || ddl.ProcedureSpec == nil || ddl.Action != ast.CreateStr {
		return nil
	}
	if err := routine.Check(ddl.ProcedureSpec); err != nil {
		return err
	}
	ddl.ProcedureSpec.Body = &ast.BeginEndBlock{}
	return nil
}

// createProcedure matches the start of a CREATE PROCEDURE.
var createProcedure = regexp.MustCompile(`(?is)^\s*CREATE\s+(?:DEFINER\s*=\s*(?:'[^']*'|` + "`[^`]*`" + `|"[^"]*"|[^\s@]+)(?:@(?:'[^']*'|` + "`[^`]*`" + `|"[^"]*"|[^\s]+))?\s+)?PROCEDURE\s`)

// rewriteProcedureDo reads the DO statements of a CREATE PROCEDURE's
// body as the parser can (routine.RewriteDo); SaveStoredProcedure keeps
// the statement as written.
func rewriteProcedureDo(query string) string {
	if !containsFold(query, "procedure") || !createProcedure.MatchString(query) {
		return query
	}
	if r, ok := routine.RewriteDo(query); ok {
		return r
	}
	return query
}
