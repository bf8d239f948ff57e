package sqlengine

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/planbuilder"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/lockstepdb/lockstep/internal/mysqlerr"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// Triggers are go-mysql-server's: it finds the triggers of the table a
// statement writes (GetTriggers), plans their bodies into the statement
// and runs them with it, in the statement's transaction. Lockstep keeps
// them in the catalog (storage.TriggerDef, in triggerSQL's form) and
// corrects what go-mysql-server leaves to its integrator or gets wrong:
//
//   - Privileges, as MySQL checks them. CREATE TRIGGER needs TRIGGER on
//     the table, and naming another account as DEFINER needs SUPER or
//     SET_USER_ID. A trigger runs with its definer's privileges: each
//     time it fires, the definer must still exist (1449) and hold TRIGGER
//     on the table and what the body does (1142), checked by planning the
//     body again under the definer's privileges (checkTriggerDefiner).
//     go-mysql-server plans bodies at firing with no check at all, and
//     checks DROP TRIGGER against a table named like the trigger.
//     go-mysql-server's own resolution of the body's tables, as the
//     session, is passed over (Session.planningTriggers): the definer's
//     check stands for it.
//   - The body's unqualified table names are the trigger's database's,
//     whatever the session's current database (triggerDB).
//   - The fast path never runs a write of a table with triggers.
//   - A trigger's effects are rows of its statement's transaction: the
//     binlog carries them as row events, as MySQL writes them under
//     binlog_format=ROW. Replicas and cluster members apply those rows
//     and fire nothing, as MySQL replicas do with row events.
//   - CREATE TRIGGER is logged with its DEFINER spelled out, as MySQL
//     logs it, so MySQL and MariaDB replicas make the same trigger.
//   - Where go-mysql-server would fire triggers otherwise than MySQL
//     (upserts, REPLACE, a multi-table UPDATE whose unchanged joined
//     table has triggers and a stored generated column), the statement
//     is refused on a table with triggers (checkTriggerPlan).
//   - SHOW TRIGGERS FROM db lists db's triggers; it and SHOW CREATE
//     TRIGGER give the trigger's sql_mode (and definer).
//
// A trigger names its table by id (storage), so it follows RENAME TABLE;
// the CREATE TRIGGER statement go-mysql-server parses is made from
// triggerSQL with the table's current name.

// triggerSQL is a trigger's definition in the catalog.
type triggerSQL struct {
	Definer string    `json:"definer"` // `user`@`host`
	Time    string    `json:"time"`    // BEFORE or AFTER
	Event   string    `json:"event"`   // INSERT, UPDATE or DELETE
	Order   string    `json:"order,omitempty"`
	Body    string    `json:"body"`
	SQLMode string    `json:"sql_mode"`
	Created time.Time `json:"created"`
}

// statement is the trigger's CREATE TRIGGER on table (quoted), as MySQL
// logs and shows it (unqualified in its own database: a dump restores
// into any).
func (t *triggerSQL) statement(name, table string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE DEFINER=%s TRIGGER %s %s %s ON %s FOR EACH ROW ", t.Definer, quoteIdent(name), t.Time, t.Event, table)
	if t.Order != "" {
		b.WriteString(t.Order + " ")
	}
	b.WriteString(t.Body)
	return b.String()
}

// MySQL's trigger errors.
const (
	erTrgAlreadyExists     = 1359 // ER_TRG_ALREADY_EXISTS
	erTrgDoesNotExist      = 1360 // ER_TRG_DOES_NOT_EXIST
	erTrgOnTempTable       = 1361 // ER_TRG_ON_VIEW_OR_TEMP_TABLE
	erNoSuchUser           = 1449 // ER_NO_SUCH_USER
	erReferencedTrgMissing = 3011 // ER_REFERENCED_TRG_DOES_NOT_EXIST
)

func (d *Database) GetTriggers(ctx *sql.Context) ([]sql.TriggerDefinition, error) {
	s := sessionOf(ctx)
	if s != nil && s.temporaryOnly {
		// DROP TEMPORARY TABLE, whose tables have none (and whose
		// lookups find the session's temporary tables only).
		return nil, nil
	}
	trs := d.e.store.Triggers(d.name)
	if len(trs) == 0 {
		return nil, nil
	}
	// go-mysql-server resolves the statement's table in the current
	// database: name it with its own where that is another.
	qualify := !strings.EqualFold(ctx.GetCurrentDatabase(), d.name)
	out := make([]sql.TriggerDefinition, 0, len(trs))
	for _, tr := range trs {
		if s != nil && s.writesRows && d.shadowed(s, tr) {
			// A write names the session's temporary table, which
			// hides the trigger's: go-mysql-server, matching triggers
			// by table name, would fire it (with its definer's
			// privileges) for the temporary table's rows.
			continue
		}
		def, ok, err := d.e.triggerDefinition(tr, qualify)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, def)
		}
	}
	// go-mysql-server plans the bodies of a write's triggers next, in the
	// current database and as the session: for the rest of the
	// statement's analysis, make the triggers' database current and
	// leave the privileges of the tables the bodies name to the
	// definer's check when they fire.
	if s != nil && s.writesRows {
		if !strings.EqualFold(s.BaseSession.GetCurrentDatabase(), d.name) {
			s.triggerDB = d.name
		}
		s.planningTriggers = true
	}
	return out, nil
}

// shadowed reports whether a temporary table of s hides tr's table.
func (d *Database) shadowed(s *Session, tr storage.TriggerDef) bool {
	if len(s.temp) == 0 {
		return false
	}
	t, ok := d.e.store.TableByID(tr.TableID)
	if !ok {
		return false
	}
	_, temp := s.tempTable(d.name, t.Def.Name)
	return temp
}

// triggerDefinition is tr as go-mysql-server takes it, its table
// qualified with its database if qualify; ok is false when its table is
// gone (a catalog change in flight).
func (e *Engine) triggerDefinition(tr storage.TriggerDef, qualify bool) (def sql.TriggerDefinition, ok bool, err error) {
	var t triggerSQL
	if err := json.Unmarshal(tr.SQL, &t); err != nil {
		return def, false, fmt.Errorf("trigger %s.%s: %w", tr.DB, tr.Name, err)
	}
	st, ok := e.store.TableByID(tr.TableID)
	if !ok {
		return def, false, nil
	}
	table := quoteIdent(st.Def.Name)
	if qualify {
		table = quoteIdent(tr.DB) + "." + table
	}
	return sql.TriggerDefinition{Name: tr.Name, CreateStatement: t.statement(tr.Name, table), CreatedAt: t.Created, SqlMode: t.SQLMode}, true, nil
}

// parseTrigger parses def's CREATE TRIGGER under mode.
func parseTrigger(ctx *sql.Context, def sql.TriggerDefinition, mode *sql.SqlMode) (*ast.DDL, error) {
	st, _, err := ParseOne(ctx, def.CreateStatement, mode.ParserOptions())
	if err != nil {
		return nil, err
	}
	ddl, ok := st.(*ast.DDL)
	if !ok || ddl.TriggerSpec == nil {
		return nil, sql.ErrTriggerCreateStatementInvalid.New(def.CreateStatement)
	}
	return ddl, nil
}

func (d *Database) CreateTrigger(ctx *sql.Context, def sql.TriggerDefinition) error {
	mode := sql.NewSqlModeFromString(def.SqlMode)
	ddl, err := parseTrigger(ctx, def, mode)
	if err != nil {
		return err
	}
	spec := ddl.TriggerSpec
	if callsProcedure(spec.Body) {
		return errNotSupported("CALL in a trigger")
	}
	if q := spec.TrigName.Qualifier.String(); q != "" && !strings.EqualFold(q, d.name) {
		return mysql.NewSQLError(erTrgInWrongSchema, "HY000", "Trigger in wrong schema")
	}
	tableName := ddl.Table.Name.String()
	if s := sessionOf(ctx); s != nil {
		if _, temp := s.tempTable(d.name, tableName); temp {
			return mysql.NewSQLError(erTrgOnTempTable, "HY000", "Trigger's '%s' is view or temporary table", tableName)
		}
	}
	table, ok := d.e.store.Table(d.name, tableName)
	if !ok {
		return sql.ErrTableNotFound.New(tableName)
	}
	name := spec.TrigName.Name.String()
	if _, exists := d.e.store.Trigger(d.name, name); exists {
		return mysql.NewSQLError(erTrgAlreadyExists, "HY000", "Trigger already exists")
	}
	definer, err := d.e.triggerDefiner(ctx, spec.Definer, true)
	if err != nil {
		return err
	}
	t := triggerSQL{
		Definer: definer,
		Time:    strings.ToUpper(spec.Time),
		Event:   strings.ToUpper(spec.Event),
		Body:    strings.TrimSpace(def.CreateStatement[ddl.SubStatementPositionStart:ddl.SubStatementPositionEnd]),
		SQLMode: stripNoBackslashEscapes(def.SqlMode), // the body is the parser's form (clienttext.go)
		Created: def.CreatedAt,
	}
	if o := spec.Order; o != nil {
		other, ok := d.e.store.Trigger(d.name, o.OtherTriggerName)
		var ot triggerSQL
		if ok {
			ok = json.Unmarshal(other.SQL, &ot) == nil && other.TableID == table.Def.ID && ot.Time == t.Time && ot.Event == t.Event
		}
		if !ok {
			return mysql.NewSQLError(erReferencedTrgMissing, "HY000", "Referenced trigger '%s' for the given action time and event type does not exist.", o.OtherTriggerName)
		}
		t.Order = strings.ToUpper(o.PrecedesOrFollows) + " " + quoteIdent(other.Name)
	}
	body, err := json.Marshal(&t)
	if err != nil {
		return err
	}
	change := &storage.CatalogChange{Op: "create_trigger", Trigger: &storage.TriggerDef{DB: d.name, Name: name, TableID: table.Def.ID, SQL: body}}
	return d.e.ddl(ctx, d.name, t.statement(name, quoteIdent(table.Def.Name)), change, []uint64{table.Def.ID})
}

// erTrgInWrongSchema is ER_TRG_IN_WRONG_SCHEMA.
const erTrgInWrongSchema = 1435

// triggerDefiner is the account a new trigger runs as, in MySQL's
// `user`@`host` form: the creating session's account unless the
// statement names another, which needs SUPER or SET_USER_ID (1227). An
// account that does not exist is accepted with MySQL's note 1449 (the
// trigger then fails to fire until it does).
// warn says whether to warn of a missing account.
func (e *Engine) triggerDefiner(ctx *sql.Context, named string, warn bool) (string, error) {
	mdb := e.GMS.Analyzer.Catalog.MySQLDb
	rd := mdb.Reader()
	defer rd.Close()
	self, ok := e.sessionAccount(ctx, rd)
	if !ok {
		c := ctx.Session.Client()
		self = accountRef{c.User, c.Address}
	}
	if named == "" {
		return self.String(), nil
	}
	user, host, ok := splitDefiner(named)
	if !ok {
		return "", mysql.NewSQLError(mysql.ERParseError, "42000", "You have an error in your SQL syntax near 'DEFINER=%s'", named)
	}
	a := accountRef{user, host}
	if a == self {
		return a.String(), nil
	}
	if s := sessionOf(ctx); mdb.Enabled() && (s == nil || s.replGTID == nil) { // a source checked its own
		set := e.sessionPrivileges(ctx)
		if !set.Has(sql.PrivilegeType_Super) && !set.HasDynamic("SET_USER_ID") {
			return "", mysql.NewSQLError(mysqlerr.SpecificAccessDenied, "42000", "Access denied; you need (at least one of) the SUPER or SET_USER_ID privilege(s) for this operation")
		}
	}
	if _, exists := rd.GetUser(mysql_db.UserPrimaryKey{Host: host, User: user}); !exists && warn {
		ctx.Warn(erNoSuchUser, "The user specified as a definer ('%s'@'%s') does not exist", user, host)
	}
	return a.String(), nil
}

// splitDefiner splits the parser's `user`@`host`.
func splitDefiner(s string) (user, host string, ok bool) {
	i := strings.LastIndex(s, "`@`")
	if i < 0 || !strings.HasPrefix(s, "`") || !strings.HasSuffix(s, "`") || len(s) < 5 {
		return "", "", false
	}
	return strings.ReplaceAll(s[1:i], "``", "`"), strings.ReplaceAll(s[i+3:len(s)-1], "``", "`"), true
}

func (d *Database) DropTrigger(ctx *sql.Context, name string) error {
	tr, ok := d.e.store.Trigger(d.name, name)
	if !ok {
		return sql.ErrTriggerDoesNotExist.New(name)
	}
	table, ok := d.e.store.TableByID(tr.TableID)
	if !ok {
		return sql.ErrTriggerDoesNotExist.New(name)
	}
	// TRIGGER on the trigger's table: go-mysql-server checked a table
	// named like the trigger.
	mdb := d.e.GMS.Analyzer.Catalog.MySQLDb
	if mdb.Enabled() {
		op := sql.NewPrivilegedOperation(sql.PrivilegeCheckSubject{Database: d.name, Table: table.Def.Name}, sql.PrivilegeType_Trigger)
		if !withoutSuper(ctx, func() bool { return mdb.UserHasPrivileges(ctx, op) }) {
			c := ctx.Session.Client()
			return mysql.NewSQLError(mysqlerr.TableAccessDenied, "42000", "TRIGGER command denied to user '%s'@'%s' for table '%s'", c.User, c.Address, table.Def.Name)
		}
	}
	stmt := "DROP TRIGGER " + quoteIdent(tr.Name)
	change := &storage.CatalogChange{Op: "drop_trigger", Trigger: &storage.TriggerDef{DB: d.name, Name: tr.Name, TableID: tr.TableID}}
	return d.e.ddl(ctx, d.name, stmt, change, []uint64{tr.TableID})
}

// checkTriggerDefiner refuses to fire trigger def of a statement's write
// unless its definer exists and may do what it does: TRIGGER on the
// table and the privileges of the body, checked by planning the trigger
// under the definer's privileges (go-mysql-server planned the body it
// runs with no check).
func (e *Engine) checkTriggerDefiner(ctx *sql.Context, def sql.TriggerDefinition) error {
	mdb := e.GMS.Analyzer.Catalog.MySQLDb
	s := sessionOf(ctx)
	if !mdb.Enabled() || s == nil {
		return nil
	}
	mode := sql.NewSqlModeFromString(def.SqlMode)
	ddl, err := parseTrigger(ctx, def, mode)
	if err != nil {
		return err
	}
	user, host, ok := splitDefiner(ddl.TriggerSpec.Definer)
	if !ok {
		return sql.ErrTriggerCreateStatementInvalid.New(def.CreateStatement)
	}
	set, err := definerPrivileges(mdb, user, host)
	if err != nil {
		return err
	}
	// Plan the trigger as its definer would create it now, in its
	// database.
	db, ok := e.triggerDatabase(def, ddl)
	if !ok {
		return sql.ErrTriggerCreateStatementInvalid.New(def.CreateStatement)
	}
	prevDB := s.triggerDB
	s.triggerDB = db
	defer func() { s.triggerDB = prevDB }()
	s.privileges(ctx)
	cached, counter := ctx.Session.GetPrivilegeSet()
	ctx.Session.SetPrivilegeSet(set, counter)
	defer ctx.Session.SetPrivilegeSet(cached, counter)
	b := planbuilder.New(ctx, e.GMS.Analyzer.Catalog, nil)
	b.SetParserOptions(mode.ParserOptions())
	if _, _, _, _, err = b.Parse(def.CreateStatement, nil, false); err != nil {
		return definerDenied(err, ddl, user, host)
	}
	return nil
}

// definerPrivileges is the privilege set (its roles' too) of the
// account user@host a trigger or procedure runs as, or 1449 when the
// account does not exist.
func definerPrivileges(mdb *mysql_db.MySQLDb, user, host string) (mysql_db.PrivilegeSet, error) {
	rd := mdb.Reader()
	defer rd.Close()
	u, exists := rd.GetUser(mysql_db.UserPrimaryKey{Host: host, User: user})
	if !exists {
		return mysql_db.PrivilegeSet{}, mysql.NewSQLError(erNoSuchUser, "HY000", "The user specified as a definer ('%s'@'%s') does not exist", user, host)
	}
	return AccountPrivileges(rd, u), nil
}

// triggerDatabase is the database of the trigger GetTriggers gave as
// def (parsed: ddl): the one its table names, or else the one whose
// trigger of that name makes the same statement.
func (e *Engine) triggerDatabase(def sql.TriggerDefinition, ddl *ast.DDL) (string, bool) {
	if db := ddl.Table.DbQualifier.String(); db != "" {
		return db, true
	}
	for _, d := range e.store.Databases() {
		tr, ok := e.store.Trigger(d.Name, def.Name)
		if !ok {
			continue
		}
		if got, ok, err := e.triggerDefinition(tr, false); err == nil && ok && got.CreateStatement == def.CreateStatement {
			return d.Name, true
		}
	}
	return "", false
}

// deniedTable is go-mysql-server's denial of a table (1044), or of a
// database the account holds nothing on.
var deniedTable = regexp.MustCompile(`^Access denied for user \S+ to (table|database) '([^']*)'$`)

// definerDenied words a denial met while checking a trigger's definer as
// MySQL does: the definer's account, the command and the table.
func definerDenied(err error, ddl *ast.DDL, user, host string) error {
	var se *mysql.SQLError
	if !errors.As(mysqlerr.Restore(sql.CastSQLError(err)), &se) || (se.Num != mysqlerr.DBAccessDenied && se.Num != mysqlerr.TableAccessDenied) {
		return err
	}
	table := ddl.Table.Name.String()
	if m := deniedTable.FindStringSubmatch(se.Message); m != nil && m[1] == "table" {
		table = m[2]
	} else if m == nil {
		return mysql.NewSQLError(se.Num, "42000", "%s (trigger definer '%s'@'%s')", se.Message, user, host)
	}
	cmd, _ := TriggerDeniedCommand(ddl, table)
	return mysql.NewSQLError(mysqlerr.TableAccessDenied, "42000", "%s command denied to user '%s'@'%s' for table '%s'", cmd, user, host, table)
}

// TriggerDeniedCommand is the privilege MySQL names when it refuses CREATE
// TRIGGER st for table: TRIGGER for the trigger's own table, else the
// command of the body's statement on it. ok is false when st is not a
// CREATE TRIGGER.
func TriggerDeniedCommand(st ast.Statement, table string) (cmd string, ok bool) {
	d, isDDL := st.(*ast.DDL)
	if !isDDL || d.TriggerSpec == nil || d.Action != ast.CreateStr {
		return "", false
	}
	if strings.EqualFold(d.Table.Name.String(), table) {
		return "TRIGGER", true
	}
	return bodyCommand(d.TriggerSpec.Body, table), true
}

// bodyCommand is the command of the first statement of body that names
// table (SELECT when none writes it).
func bodyCommand(body ast.SQLNode, table string) string {
	cmd := ""
	names := func(n ast.SQLNode) bool {
		found := false
		_ = ast.Walk(func(node ast.SQLNode) (bool, error) {
			if tn, ok := node.(ast.TableName); ok && strings.EqualFold(tn.Name.String(), table) {
				found = true
			}
			return !found, nil
		}, n)
		return found
	}
	_ = ast.Walk(func(node ast.SQLNode) (bool, error) {
		if cmd != "" {
			return false, nil
		}
		switch n := node.(type) {
		case *ast.Insert:
			if names(n.Table) {
				cmd = "INSERT"
			}
		case *ast.Update:
			if names(n.TableExprs) {
				cmd = "UPDATE"
			}
		case *ast.Delete:
			if names(n.TableExprs) || (n.Targets != nil && names(n.Targets)) {
				cmd = "DELETE"
			}
		}
		return cmd == "", nil
	}, body)
	if cmd == "" {
		return "SELECT"
	}
	return cmd
}

// showCreateTrigger answers SHOW CREATE TRIGGER with the trigger's
// sql_mode, which a dump sets before it creates the trigger again
// (go-mysql-server shows none), and its creation time as MySQL keeps it,
// to the hundredth of a second.
func showCreateTrigger(ctx *sql.Context, n *plan.ShowCreateTrigger) (sql.RowIter, error) {
	s := sessionOf(ctx)
	if s == nil {
		return nil, nil // go-mysql-server's
	}
	stored, ok := s.eng.store.Trigger(n.Database().Name(), n.TriggerName)
	if !ok {
		return nil, sql.ErrTriggerDoesNotExist.New(n.TriggerName)
	}
	tr, ok, err := s.eng.triggerDefinition(stored, false)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, sql.ErrTriggerDoesNotExist.New(n.TriggerName)
	}
	vals, err := triggerCharsets(ctx)
	if err != nil {
		return nil, err
	}
	return sql.RowsToRowIter(sql.Row{tr.Name, tr.SqlMode, tr.CreateStatement, vals[0], vals[1], vals[2], tr.CreatedAt.Truncate(10 * time.Millisecond)}), nil
}

// triggerCharsets are the session's character_set_client,
// collation_connection and collation_server, which SHOW TRIGGERS and SHOW
// CREATE TRIGGER give with each trigger.
func triggerCharsets(ctx *sql.Context) (vals [3]any, err error) {
	for i, v := range []string{"character_set_client", "collation_connection", "collation_server"} {
		if vals[i], err = ctx.GetSessionVariable(ctx, v); err != nil {
			return vals, err
		}
	}
	return vals, nil
}

// showTriggers answers SHOW TRIGGERS with each trigger's sql_mode and
// definer, which go-mysql-server leaves empty, and its creation time to
// the hundredth of a second, as MySQL keeps it.
func showTriggers(ctx *sql.Context, n *plan.ShowTriggers) (sql.RowIter, error) {
	s := sessionOf(ctx)
	if s == nil {
		return nil, nil // go-mysql-server's
	}
	vals, err := triggerCharsets(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]sql.Row, 0, len(n.Triggers))
	for _, tr := range n.Triggers {
		mode, definer := "", ""
		if stored, ok := s.eng.store.Trigger(n.Database().Name(), tr.TriggerName); ok {
			var t triggerSQL
			if err := json.Unmarshal(stored.SQL, &t); err != nil {
				return nil, err
			}
			mode = t.SQLMode
			if user, host, ok := splitDefiner(t.Definer); ok {
				definer = user + "@" + host
			}
		}
		table := ""
		if nm, ok := tr.Table.(sql.Nameable); ok {
			table = nm.Name()
		}
		rows = append(rows, sql.Row{tr.TriggerName, strings.ToUpper(tr.TriggerEvent), table, tr.BodyString,
			strings.ToUpper(tr.TriggerTime), tr.CreatedAt.Truncate(10 * time.Millisecond), mode, definer, vals[0], vals[1], vals[2]})
	}
	return sql.RowsToRowIter(rows...), nil
}

// triggerExecutor checks the definer of a trigger about to run.
func triggerExecutor(ctx *sql.Context, n *plan.TriggerExecutor) error {
	s := sessionOf(ctx)
	if s == nil {
		return nil
	}
	return s.eng.checkTriggerDefiner(ctx, n.TriggerDefinition)
}

// noteTrigger makes a CREATE TRIGGER's table's database current while
// the statement is planned: go-mysql-server checks the body then, and
// its tables are the trigger's database's. It refuses a DEFINER the
// session may not name first, as MySQL does.
func (s *Session) noteTrigger(ctx *sql.Context, st ast.Statement) error {
	switch st.(type) {
	case *ast.Insert, *ast.Update, *ast.Delete, *ast.Load:
		s.writesRows = true
	default:
		s.writesRows = false
	}
	d, ok := st.(*ast.DDL)
	if !ok || d.Action != ast.CreateStr || d.TriggerSpec == nil {
		return nil
	}
	if db := d.Table.DbQualifier.String(); db != "" {
		s.triggerDB = db
	}
	_, err := s.eng.triggerDefiner(ctx, d.TriggerSpec.Definer, false)
	return err
}

// checkTriggerPlan refuses (1235) the writes whose triggers
// go-mysql-server would run otherwise than MySQL, on tables with
// triggers: INSERT ... ON DUPLICATE KEY UPDATE (it fires no UPDATE
// trigger for a row it updates, and may fire the INSERT trigger with the
// wrong row), REPLACE and LOAD DATA ... REPLACE (no DELETE trigger for a
// row replaced), and an UPDATE of several tables that would fire the
// triggers of a joined table it does not change (setTables). Checked on the plan about to run,
// so a statement prepared before the trigger was made is refused too.
func checkTriggerPlan(ctx *sql.Context, n sql.Node) error {
	switch n := n.(type) {
	case *plan.InsertInto:
		if (n.IsReplace || n.OnDupExprs.HasUpdates()) && hasTriggers(n.Destination) {
			if n.IsReplace {
				return errNotSupported("REPLACE into a table with triggers")
			}
			return errNotSupported("INSERT ... ON DUPLICATE KEY UPDATE into a table with triggers")
		}
	case *plan.Update:
		uj, ok := n.Child.(*plan.UpdateJoin)
		if !ok || !n.IsJoin {
			return nil
		}
		set := setTables(uj)
		for name, target := range uj.UpdateTargets {
			if !set[strings.ToLower(name)] && hasTriggers(target) {
				return errNotSupported("UPDATE of several tables where a joined table the statement does not change has triggers and a stored generated column")
			}
		}
	}
	return nil
}

// setTables are the tables (by name or alias) a multi-table UPDATE's SET
// clause names. go-mysql-server also makes a target of every joined
// table with a stored generated column, and fires its UPDATE triggers.
func setTables(uj *plan.UpdateJoin) map[string]bool {
	set := map[string]bool{}
	us, ok := uj.Child.(*plan.UpdateSource)
	if !ok || us.UpdateExprs == nil {
		return set
	}
	for _, e := range us.UpdateExprs.ExplicitUpdateExprs() {
		if sf, ok := e.(*expression.SetField); ok {
			if gf, ok := sf.LeftChild.(*expression.GetField); ok {
				set[strings.ToLower(gf.Table())] = true
			}
		}
	}
	return set
}

// hasTriggers reports whether n writes or reads a table with triggers.
func hasTriggers(n sql.Node) bool {
	if t, err := plan.GetInsertable(n); err == nil {
		return tableHasTriggers(t)
	}
	found := false
	transform.Inspect(n, func(n sql.Node) bool {
		if rt, ok := n.(*plan.ResolvedTable); ok && tableHasTriggers(rt.Table) {
			found = true
		}
		return !found
	})
	return found
}

// tableHasTriggers reports whether t, unwrapped, is a table of Lockstep's
// store with triggers.
func tableHasTriggers(t sql.Table) bool {
	for {
		switch x := t.(type) {
		case *Table:
			return x.db.e.store.HasTriggers(x.st.Def.ID)
		case sql.TableWrapper:
			t = x.Underlying()
		default:
			return false
		}
	}
}

// showTriggersFrom makes SHOW TRIGGERS FROM db list db's triggers:
// go-mysql-server looked in the current database.
func showTriggersFrom(st ast.Statement) {
	if sh, ok := st.(*ast.Show); ok && strings.EqualFold(sh.Type, "triggers") && sh.ShowTablesOpt != nil &&
		sh.ShowTablesOpt.DbName != "" && sh.Table.DbQualifier.IsEmpty() {
		sh.Table.DbQualifier = ast.NewTableIdent(sh.ShowTablesOpt.DbName)
	}
}

// currentUserDefiner matches DEFINER = CURRENT_USER[()] of a CREATE
// TRIGGER, which the parser does not take.
var currentUserDefiner = regexp.MustCompile(`(?is)^(\s*CREATE\s+)DEFINER\s*=\s*CURRENT_USER(?:\s*\(\s*\))?\s+(TRIGGER\s)`)

// rewriteTriggerDefiner drops DEFINER = CURRENT_USER from a CREATE
// TRIGGER: the definer is then the current user, which is its meaning.
func rewriteTriggerDefiner(query string) string {
	if len(query) > 1<<20 || !containsFold(query, "current_user") {
		return query
	}
	return currentUserDefiner.ReplaceAllString(query, "$1$2")
}

// endTriggerPlanning ends, as the statement starts to run, what
// GetTriggers set for planning trigger bodies.
func endTriggerPlanning(ctx *sql.Context) {
	if s := sessionOf(ctx); s != nil && (s.planningTriggers || s.triggerDB != "") {
		s.triggerDB, s.planningTriggers = "", false
	}
}

// callsProcedure reports whether a trigger's body has a CALL, which
// Lockstep does not run inside another statement.
func callsProcedure(body ast.Statement) bool {
	found := false
	_ = ast.Walk(func(n ast.SQLNode) (bool, error) {
		if _, ok := n.(*ast.Call); ok {
			found = true
		}
		return !found, nil
	}, body)
	return found
}
