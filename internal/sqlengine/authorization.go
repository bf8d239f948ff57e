package sqlengine

import (
	"regexp"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/lockstepdb/lockstep/internal/mysqlerr"
)

// go-mysql-server's statement authorization, corrected at its seam (the
// global authorization handler factory, wrapped once at start):
//
//   - SHOW [FULL] PROCESSLIST needs no privilege, as in MySQL: an account
//     without PROCESS sees its own connections only (processes.go);
//     go-mysql-server refused the statement to it instead.
//   - SUPER does not stand for table and database privileges. In
//     go-mysql-server any check passes for an account with SUPER; in
//     MySQL SUPER is an administrative privilege, and reading or changing
//     a table needs the table's own privilege. For those checks (and the
//     fast path's, fastpath.go) the session's privileges are looked at
//     without SUPER (withoutSuper).
//   - Nor does SUPER stand for the global privileges it was never part of:
//     CREATE USER, GRANT OPTION and granting or revoking privileges,
//     creating and dropping roles, FILE, PROCESS, RELOAD, REPLICATION
//     SLAVE. (Granting a role stays SUPER's, as MySQL's deprecated rule
//     has it, beside ROLE_ADMIN and WITH ADMIN OPTION.) go-mysql-server let an
//     account with SUPER alone grant itself every privilege; those checks
//     (here and Lockstep's own, superless) look without SUPER. SUPER keeps
//     counting for the administrative checks it was split into (SET
//     GLOBAL, KILL, replica control, binlog administration), as in MySQL.
//   - A session's temporary tables need no privilege once created: MySQL
//     checks CREATE TEMPORARY TABLES when one is created and nothing after
//     (reading, changing or dropping it). go-mysql-server checked the
//     table's privileges, so an account that may create temporary tables
//     but not write the database's tables could not fill its own
//     (withoutTemporaryTables).
func init() {
	sql.SetAuthorizationHandlerFactory(authorizationFactory{base: sql.GetAuthorizationHandlerFactory()})
}

type authorizationFactory struct {
	base sql.AuthorizationHandlerFactory
}

func (f authorizationFactory) CreateHandler(cat sql.Catalog) sql.AuthorizationHandler {
	return authorization{f.base.CreateHandler(cat)}
}

type authorization struct{ sql.AuthorizationHandler }

// objectAuth are the checks of privileges on databases and tables, which
// SUPER does not give.
var objectAuth = map[string]bool{
	ast.AuthType_ALTER: true, ast.AuthType_CREATE: true, ast.AuthType_CREATE_TEMP: true,
	ast.AuthType_CREATE_VIEW: true, ast.AuthType_DELETE: true, ast.AuthType_DROP: true,
	ast.AuthType_FOREIGN_KEY: true, ast.AuthType_INDEX: true, ast.AuthType_INSERT: true,
	ast.AuthType_LOCK: true, ast.AuthType_RENAME: true, ast.AuthType_REPLACE: true,
	ast.AuthType_SELECT: true, ast.AuthType_SHOW: true, ast.AuthType_TRIGGER: true,
	ast.AuthType_UPDATE: true, ast.AuthType_VISIBLE: true,
}

// objectPrivileges are the privileges on databases and tables: an account
// that holds them all globally loses nothing when SUPER is set aside.
var objectPrivileges = []sql.PrivilegeType{
	sql.PrivilegeType_Select, sql.PrivilegeType_Insert, sql.PrivilegeType_Update, sql.PrivilegeType_Delete,
	sql.PrivilegeType_Create, sql.PrivilegeType_Drop, sql.PrivilegeType_Alter, sql.PrivilegeType_Index,
	sql.PrivilegeType_References, sql.PrivilegeType_CreateTempTable, sql.PrivilegeType_LockTables,
	sql.PrivilegeType_CreateView, sql.PrivilegeType_ShowView, sql.PrivilegeType_Trigger,
}

// notBySuper are the checks of global privileges SUPER does not give.
var notBySuper = map[string]bool{
	ast.AuthType_CREATE_USER: true, ast.AuthType_ALTER_USER: true,
	ast.AuthType_GRANT_PRIVILEGE: true, ast.AuthType_GRANT_PROXY: true,
	ast.AuthType_REVOKE_ALL: true, ast.AuthType_REVOKE_PRIVILEGE: true, ast.AuthType_REVOKE_PROXY: true,
	ast.AuthType_CREATE_ROLE: true, ast.AuthType_DROP_ROLE: true,
	ast.AuthType_FILE: true, ast.AuthType_RELOAD: true, ast.AuthType_REPLICATION: true,
	ast.AuthType_CALL: true, ast.AuthType_ALTER_ROUTINE: true, ast.AuthType_CREATE_ROUTINE: true,
	ast.AuthType_EVENT: true, ast.AuthType_SHOW_CREATE_PROCEDURE: true,
}

// NewQueryState is go-mysql-server's, which captures the session's
// privilege set, after the session has made sure the set is its own
// account's (accountmatch.go).
func (a authorization) NewQueryState(ctx *sql.Context) sql.AuthorizationQueryState {
	if s := sessionOf(ctx); s != nil {
		s.privileges(ctx)
	}
	return a.AuthorizationHandler.NewQueryState(ctx)
}

func (a authorization) HandleAuth(ctx *sql.Context, state sql.AuthorizationQueryState, auth ast.AuthInformation) error {
	if auth.AuthType == ast.AuthType_PROCESS || auth.AuthType == ast.AuthType_SHOW_CREATE_PROCEDURE {
		return nil // SHOW CREATE PROCEDURE: checked as MySQL does (routines.go)
	}
	auth = triggerTableAuth(ctx, auth)
	auth, others := withoutTemporaryTables(ctx, auth)
	if !others {
		return nil // the session's temporary tables only
	}
	if objectAuth[auth.AuthType] {
		check := func(auth ast.AuthInformation) error {
			return withoutSuper(ctx, func() error { return a.AuthorizationHandler.HandleAuth(ctx, state, auth) })
		}
		return tableAccessDenied(auth, check(auth), check)
	}
	if notBySuper[auth.AuthType] {
		err := superless(ctx, func() error { return a.AuthorizationHandler.HandleAuth(ctx, state, auth) })
		return routineDenied(ctx, auth, err)
	}
	return a.AuthorizationHandler.HandleAuth(ctx, state, auth)
}

// deniedCommandWord is the privilege MySQL names in 1142 for a check of
// an AuthType whose name is not that privilege's.
var deniedCommandWord = map[string]string{
	ast.AuthType_CREATE_VIEW: "CREATE VIEW", ast.AuthType_FOREIGN_KEY: "REFERENCES",
	ast.AuthType_LOCK: "LOCK TABLES", ast.AuthType_RENAME: "ALTER", ast.AuthType_REPLACE: "INSERT",
}

// tableAccessDenied gives a failed check of a privilege on a table
// MySQL's error, naming the command and the table: 1142 "SELECT command
// denied to user 'u'@'h' for table 't'" (1143 for a column).
// go-mysql-server's says "command denied to user 'u'@'h'" alone. Of
// several tables checked at once, the first check refuses names; check
// runs the check for one of them.
func tableAccessDenied(auth ast.AuthInformation, err error, check func(ast.AuthInformation) error) error {
	if err == nil || !sql.ErrPrivilegeCheckFailed.Is(err) || auth.AuthType == ast.AuthType_SHOW || auth.AuthType == ast.AuthType_VISIBLE {
		return err
	}
	who := strings.TrimPrefix(err.Error(), "command denied to user ")
	cmd, ok := deniedCommandWord[auth.AuthType]
	if !ok {
		cmd = auth.AuthType
	}
	names := auth.TargetNames
	if auth.AuthType == ast.AuthType_REPLACE && len(names) >= 2 {
		// REPLACE needs INSERT and DELETE: MySQL names the one missing.
		one := auth
		one.AuthType, one.TargetType, one.TargetNames = ast.AuthType_INSERT, ast.AuthTargetType_SingleTableIdentifier, names[:2]
		if check(one) == nil {
			cmd = "DELETE"
		}
	}
	switch {
	case auth.TargetType == ast.AuthTargetType_SingleTableIdentifier && len(names) == 2:
		return mysql.NewSQLError(mysqlerr.TableAccessDenied, "42000", "%s command denied to user %s for table '%s'", cmd, who, names[1])
	case auth.TargetType == ast.AuthTargetType_TableColumn && len(names) == 3:
		return mysql.NewSQLError(mysqlerr.ColumnAccessDenied, "42000", "%s command denied to user %s for column '%s' in table '%s'", cmd, who, names[2], names[1])
	case auth.TargetType == ast.AuthTargetType_MultipleTableIdentifiers:
		for i := 0; i+1 < len(names); i += 2 {
			one := auth
			one.TargetType, one.TargetNames = ast.AuthTargetType_SingleTableIdentifier, names[i:i+2]
			if check(one) != nil {
				return mysql.NewSQLError(mysqlerr.TableAccessDenied, "42000", "%s command denied to user %s for table '%s'", cmd, who, names[i+1])
			}
		}
	}
	return err
}

// dropProcedureName is the procedure a DROP PROCEDURE names.
var dropProcedureName = regexp.MustCompile("(?is)^\\s*DROP\\s+PROCEDURE\\s+(?:IF\\s+EXISTS\\s+)?(?:(?:`[^`]+`|[^\\s.;`]+)\\.)?(`[^`]+`|[^\\s.;`(]+)")

// routineDenied gives a refused CREATE PROCEDURE and DROP PROCEDURE
// MySQL's errors: 1044 for the database, 1370 for the routine.
func routineDenied(ctx *sql.Context, auth ast.AuthInformation, err error) error {
	if err == nil || !sql.ErrPrivilegeCheckFailed.Is(err) {
		return err
	}
	db := ""
	if len(auth.TargetNames) > 0 {
		db = auth.TargetNames[0]
	}
	if db == "" {
		db = ctx.GetCurrentDatabase()
	}
	c := ctx.Session.Client()
	switch auth.AuthType {
	case ast.AuthType_CREATE_ROUTINE:
		return mysql.NewSQLError(mysqlerr.DBAccessDenied, "42000", "Access denied for user '%s'@'%s' to database '%s'", c.User, c.Address, db)
	case ast.AuthType_ALTER_ROUTINE:
		name := ""
		if m := dropProcedureName.FindStringSubmatch(ctx.Query()); m != nil {
			name = strings.Trim(m[1], "`")
		}
		return mysql.NewSQLError(erProcAccessDenied, "42000", "alter routine command denied to user '%s'@'%s' for routine '%s.%s'", c.User, c.Address, db, name)
	}
	return err
}

// triggerTableAuth is auth with DROP TRIGGER's target, which the parser
// gives as a table named like the trigger, made the trigger's table:
// TRIGGER is checked on the table, as in MySQL (Database.DropTrigger
// checks it again on the table it drops from).
func triggerTableAuth(ctx *sql.Context, auth ast.AuthInformation) ast.AuthInformation {
	if auth.AuthType != ast.AuthType_TRIGGER || auth.TargetType != ast.AuthTargetType_SingleTableIdentifier || len(auth.TargetNames) != 2 {
		return auth
	}
	s := sessionOf(ctx)
	if s == nil {
		return auth
	}
	db := auth.TargetNames[0]
	if db == "" {
		db = ctx.GetCurrentDatabase()
	}
	store := s.eng.store
	if _, isTable := store.Table(db, auth.TargetNames[1]); isTable {
		return auth
	}
	tr, ok := store.Trigger(db, auth.TargetNames[1])
	if !ok {
		return auth
	}
	t, ok := store.TableByID(tr.TableID)
	if !ok {
		return auth
	}
	auth.TargetNames = []string{db, t.Def.Name}
	return auth
}

// temporaryTableAuth are the checks a session's temporary table is spared:
// using it. Creating a table (a permanent one may take the name) is not.
var temporaryTableAuth = map[string]bool{
	ast.AuthType_SELECT: true, ast.AuthType_INSERT: true, ast.AuthType_UPDATE: true,
	ast.AuthType_DELETE: true, ast.AuthType_REPLACE: true, ast.AuthType_DROP: true,
	ast.AuthType_LOCK: true, ast.AuthType_SHOW: true,
}

// withoutTemporaryTables is auth without the session's temporary tables
// among its targets, and false when it had no other target.
func withoutTemporaryTables(ctx *sql.Context, auth ast.AuthInformation) (ast.AuthInformation, bool) {
	if !temporaryTableAuth[auth.AuthType] {
		return auth, true
	}
	s := sessionOf(ctx)
	if s == nil || len(s.temp) == 0 {
		return auth, true
	}
	isTemp := func(db, table string) bool {
		if db == "" {
			db = ctx.GetCurrentDatabase()
		}
		_, ok := s.tempTable(db, table)
		return ok
	}
	switch auth.TargetType {
	case ast.AuthTargetType_SingleTableIdentifier, ast.AuthTargetType_TableColumn:
		if len(auth.TargetNames) >= 2 && isTemp(auth.TargetNames[0], auth.TargetNames[1]) {
			return auth, false
		}
	case ast.AuthTargetType_MultipleTableIdentifiers:
		var rest []string
		for i := 0; i+1 < len(auth.TargetNames); i += 2 {
			if !isTemp(auth.TargetNames[i], auth.TargetNames[i+1]) {
				rest = append(rest, auth.TargetNames[i], auth.TargetNames[i+1])
			}
		}
		if len(rest) == 0 {
			return auth, false
		}
		auth.TargetNames = rest
	}
	return auth, true
}

func (a authorization) CheckDatabase(ctx *sql.Context, state sql.AuthorizationQueryState, db string) error {
	return withoutSuper(ctx, func() error { return a.AuthorizationHandler.CheckDatabase(ctx, state, db) })
}

func (a authorization) CheckSchema(ctx *sql.Context, state sql.AuthorizationQueryState, db, schema string) error {
	return withoutSuper(ctx, func() error { return a.AuthorizationHandler.CheckSchema(ctx, state, db, schema) })
}

func (a authorization) CheckTable(ctx *sql.Context, state sql.AuthorizationQueryState, db, schema, table string) error {
	if s := sessionOf(ctx); s != nil && s.planningTriggers {
		return nil // a trigger body's table: its definer's (triggers.go)
	}
	return withoutSuper(ctx, func() error { return a.AuthorizationHandler.CheckTable(ctx, state, db, schema, table) })
}

// withoutSuper runs check with the session's active privileges less SUPER:
// go-mysql-server reads them through the session's cache (set for the
// current accounts' version), which is swapped for the call and put back.
func withoutSuper[T any](ctx *sql.Context, check func() T) T {
	return dropSuper(ctx, objectPrivileges, check)
}

// superless runs check with the session's active privileges less SUPER,
// for a check of a global privilege SUPER does not give.
func superless[T any](ctx *sql.Context, check func() T) T {
	return dropSuper(ctx, nil, check)
}

// dropSuper runs check without SUPER, unless the session holds every
// privilege of unless (then SUPER can change nothing the check looks at).
func dropSuper[T any](ctx *sql.Context, unless []sql.PrivilegeType, check func() T) T {
	s := sessionOf(ctx)
	if s == nil {
		return check()
	}
	// Brings the cache up to date (the accounts may have changed).
	s.privileges(ctx)
	cached, counter := ctx.Session.GetPrivilegeSet()
	set, ok := cached.(mysql_db.PrivilegeSet)
	if !ok || !set.Has(sql.PrivilegeType_Super) || (unless != nil && set.Has(unless...)) {
		return check() // SUPER changes nothing here
	}
	less := set.Copy()
	less.RemoveGlobalStatic(sql.PrivilegeType_Super)
	ctx.Session.SetPrivilegeSet(less, counter)
	defer ctx.Session.SetPrivilegeSet(set, counter)
	return check()
}

// A locking read (SELECT ... FOR UPDATE, FOR SHARE, LOCK IN SHARE MODE)
// needs, besides SELECT, one of DELETE, LOCK TABLES or UPDATE on each
// table it reads, as in MySQL 8 (since 8.0.22): with SELECT alone an
// account could hold row locks that stall writers. go-mysql-server checks
// SELECT only; the fast path checks the same (fastExec.allowed).
var lockingReadPrivileges = []sql.PrivilegeType{sql.PrivilegeType_Delete, sql.PrivilegeType_LockTables, sql.PrivilegeType_Update}

// checkLockingRead refuses a locking SELECT of a table the session may
// not lock (1142).
func checkLockingRead(ctx *sql.Context, st ast.Statement) error {
	sel, ok := st.(*ast.Select)
	if !ok || sel.Lock == nil || strings.TrimSpace(sel.Lock.Type) == "" {
		return nil
	}
	s := sessionOf(ctx)
	if s == nil {
		return nil
	}
	mdb := s.eng.GMS.Analyzer.Catalog.MySQLDb
	if !mdb.Enabled() {
		return nil
	}
	var denied string
	_ = ast.Walk(func(node ast.SQLNode) (bool, error) {
		tn, ok := node.(ast.TableName)
		if !ok || denied != "" {
			return denied == "", nil
		}
		db := tn.DbQualifier.String()
		if db == "" {
			db = ctx.GetCurrentDatabase()
		}
		if db == "" || strings.EqualFold(db, "information_schema") || strings.EqualFold(db, "performance_schema") {
			return true, nil
		}
		if !mayLock(ctx, s, sql.PrivilegeCheckSubject{Database: db, Table: tn.Name.String()}) {
			denied = tn.Name.String()
		}
		return true, nil
	}, sel.From)
	if denied == "" {
		return nil
	}
	c := ctx.Session.Client()
	return mysql.NewSQLError(mysqlerr.TableAccessDenied, "42000", "SELECT with locking clause command denied to user '%s'@'%s' for table '%s'", c.User, c.Address, denied)
}

// mayLock reports whether the session holds one of the privileges a
// locking read of subject needs (SUPER not standing for them).
func mayLock(ctx *sql.Context, s *Session, subject sql.PrivilegeCheckSubject) bool {
	mdb := s.eng.GMS.Analyzer.Catalog.MySQLDb
	return withoutSuper(ctx, func() bool {
		for _, p := range lockingReadPrivileges {
			if mdb.UserHasPrivileges(ctx, sql.NewPrivilegedOperation(subject, p)) {
				return true
			}
		}
		return false
	})
}

// The mysql database is served by go-mysql-server's account store, which
// its privilege wrapper does not cover: USE mysql and SHOW TABLES FROM
// mysql succeeded for an account holding nothing on it. They get MySQL's
// 1044 like any other database's (checkSystemDatabase).

// checkSystemDatabase refuses st, a USE or SHOW TABLES of the mysql
// database, to an account that holds no privilege on it.
func checkSystemDatabase(ctx *sql.Context, st ast.Statement) error {
	db := ""
	switch n := st.(type) {
	case *ast.Use:
		db = n.DBName.String()
	case *ast.Show:
		if strings.EqualFold(n.Type, "tables") && n.ShowTablesOpt != nil {
			db = n.ShowTablesOpt.DbName
		}
	}
	if !strings.EqualFold(db, "mysql") {
		return nil
	}
	return CheckDatabaseAccess(ctx, db)
}

// CheckDatabaseAccess refuses (1044) a database the session's account
// holds nothing on: no global privilege and none on the database or any
// of its tables.
func CheckDatabaseAccess(ctx *sql.Context, db string) error {
	s := sessionOf(ctx)
	if s == nil {
		return nil
	}
	mdb := s.eng.GMS.Analyzer.Catalog.MySQLDb
	if !mdb.Enabled() {
		return nil
	}
	set := s.privileges(ctx)
	if set.Count() > 0 || set.Database(db).HasPrivileges() {
		return nil
	}
	return dbAccessDenied(ctx, db)
}

// dbAccessDenied is MySQL's 1044 for the session's account and db.
func dbAccessDenied(ctx *sql.Context, db string) error {
	c := ctx.Session.Client()
	return mysql.NewSQLError(mysqlerr.DBAccessDenied, "42000", "Access denied for user '%s'@'%s' to database '%s'", c.User, c.Address, db)
}
