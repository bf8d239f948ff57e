// Package sqlengine puts go-mysql-server (GMS) on top of Lockstep's
// storage, transactions and commit pipeline: databases, tables, indexes,
// row editors, sessions with InnoDB-style transactions, and DDL that commits
// through the binlog.
//
// GMS passes neither the locking clause of a SELECT nor the target of an
// UPDATE/DELETE to storage, so the engine wraps GMS's parser (and the
// session's prepared-statement cache) to note, per statement, which tables
// are read with locks; table scans consult that note.
package sqlengine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/commit"
	"github.com/lockstepdb/lockstep/internal/lock"
	"github.com/lockstepdb/lockstep/internal/row"
	"github.com/lockstepdb/lockstep/internal/storage"
	"github.com/lockstepdb/lockstep/internal/txn"
)

// Engine is the SQL layer of one server.
type Engine struct {
	// SQLPrepared counts the statements prepared with SQL PREPARE in all
	// sessions (max_prepared_stmt_count bounds them with the protocol's).
	SQLPrepared atomic.Int64
	// SQLPreparedBytes adds up their texts (the statements' lengths),
	// for lockstep_max_prepared_stmt_bytes.
	SQLPreparedBytes atomic.Int64
	// OtherPreparedBytes, set by the server, counts the protocol's
	// prepared statements' bytes (COM_STMT_PREPARE).
	OtherPreparedBytes *atomic.Int64

	store *storage.Engine
	pipe  *commit.Pipeline
	locks *lock.Manager
	txns  *txn.Manager
	coll  row.Collator

	schemas schemaCache
	fks     fkCache // the catalog's foreign keys (foreignkeys.go)
	system  systemDBs
	io      tableIOs // table_io_waits_summary_* (tableio.go)
	autoinc autoincState

	sessions sync.Map // connection id -> *Session
	accounts *accountLog

	// LoginFailuresReset, if set, is told when an ALTER USER resets an
	// account's failed-login count and temporary lock (accountlock.go).
	LoginFailuresReset func(user, host string)

	// ReadOnly and SuperReadOnly are read_only and super_read_only:
	// clients' writes are refused (without SUPER, or at all). A replica's
	// applier writes below this layer and is not affected.
	ReadOnly, SuperReadOnly atomic.Bool

	// Fast counts statements run by the fast path and handed back to GMS.
	Fast FastStats

	// GMS is the go-mysql-server engine.
	GMS *sqle.Engine
}

// New builds the SQL layer.
func New(store *storage.Engine, pipe *commit.Pipeline, locks *lock.Manager) *Engine {
	return newEngine(store, pipe, locks, txn.NewManager(store, pipe, locks))
}

// NewClusterMember builds the SQL layer of a cluster member, whose
// transactions commit through c (txn/cluster.go).
func NewClusterMember(store *storage.Engine, c txn.Cluster, serverID uint32, locks *lock.Manager) *Engine {
	return newEngine(store, nil, locks, txn.NewClusterManager(store, c, serverID, locks))
}

func newEngine(store *storage.Engine, pipe *commit.Pipeline, locks *lock.Manager, txns *txn.Manager) *Engine {
	e := &Engine{
		store: store,
		pipe:  pipe,
		locks: locks,
		txns:  txns,
		coll:  store.Collator(),
	}
	e.autoinc.next = map[uint64]uint64{}
	e.autoinc.cluster = pipe == nil
	p := parser{safeParser{sql.DefaultMySQLParser}}
	a := analyzer.NewBuilder(provider{e}).
		AddOverrides(sql.EngineOverrides{Builder: sql.BuilderOverrides{Parser: p}, SchemaFormatter: formatter}).
		AddPreAnalyzeRule(escapedLikesRule, escapedLikes). // likeescape.go
		AddPostAnalyzeRule(exactAggregateTypesRule, exactAggregateTypes).
		Build()
	a.ExecBuilder.PriorityBuilder = boundedTopN{base: a.ExecBuilder}
	e.GMS = sqle.New(a, &sqle.Config{IncludeRootAccount: true})
	e.GMS.ProcessList = newProcessList() // a lock per connection (processlist.go)
	e.GMS.Parser = safeParser{e.GMS.Parser}
	e.GMS.Parser = p
	// BINLOG statements apply their row events (binlogstmt.go).
	e.GMS.Analyzer.Catalog.BinlogConsumer = binlogConsumer{e}
	e.GMS.Analyzer.Catalog.InfoSchema = newInfoSchema(e, e.GMS.Analyzer.Catalog.InfoSchema) // infoschema.go
	registerVariables()
	installRegistry()
	return e
}

// mysqlDefaultSQLMode is MySQL 8's default sql_mode.
const mysqlDefaultSQLMode = "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"

// registerVariables corrects GMS's definitions of variables the SQL layer
// relies on and sets MySQL 8's defaults.
func registerVariables() {
	global := sql.GetMysqlScope(sql.SystemVariableScope_Global)
	both := sql.GetMysqlScope(sql.SystemVariableScope_Both)
	// Variables go-mysql-server shows as settable but whose setting
	// nothing acts on: read-only here, with the value that is true.
	sql.SystemVariables.AddSystemVariables([]sql.SystemVariable{
		// Its recursive CTEs stop after a fixed 10,001 iterations (3636,
		// mysqlerr); MySQL's default is 1000 and settable.
		&sql.MysqlSystemVariable{Name: "cte_max_recursion_depth", Scope: both, Dynamic: false,
			Type: types.NewSystemIntType("cte_max_recursion_depth", 0, 4294967295, false), Default: int64(10000)},
		// Events are not supported.
		&sql.MysqlSystemVariable{Name: "event_scheduler", Scope: global, Dynamic: false,
			Type: types.NewSystemEnumType("event_scheduler", "OFF", "ON", "DISABLED"), Default: "DISABLED"},
		// max_execution_time works (server/sessionlimits.go).
		&sql.MysqlSystemVariable{Name: "have_statement_timeout", Scope: global, Dynamic: false,
			Type: types.NewSystemBoolType("have_statement_timeout"), Default: int8(1)},
		// Neither is enforced.
		&sql.MysqlSystemVariable{Name: "password_require_current", Scope: global, Dynamic: false,
			Type: types.NewSystemBoolType("password_require_current"), Default: int8(0)},
		&sql.MysqlSystemVariable{Name: "mandatory_roles", Scope: global, Dynamic: false,
			Type: types.NewSystemStringType("mandatory_roles"), Default: ""},
		// There is no administrative interface; the client port accepts
		// TLS 1.2 and 1.3 only.
		&sql.MysqlSystemVariable{Name: "admin_tls_version", Scope: global, Dynamic: false,
			Type: types.NewSystemStringType("admin_tls_version"), Default: "TLSv1.2,TLSv1.3"},
	})
	sql.SystemVariables.AddSystemVariables([]sql.SystemVariable{
		&sql.MysqlSystemVariable{
			// GMS declares it with the range 1..1; MySQL's is 1..1073741824.
			Name: "innodb_lock_wait_timeout", Scope: sql.GetMysqlScope(sql.SystemVariableScope_Both), Dynamic: true,
			Type: types.NewSystemIntType("innodb_lock_wait_timeout", 1, 1073741824, false), Default: int64(50),
		},
		&sql.MysqlSystemVariable{
			// Every transaction is written to the binlog, the only log
			// (go-mysql-server shows 0 and ignores it); turning it off is
			// refused (Session.SetSessionVariable).
			Name: "sql_log_bin", Scope: sql.GetMysqlScope(sql.SystemVariableScope_Both), Dynamic: true,
			Type: types.NewSystemBoolType("sql_log_bin"), Default: int8(1),
		},
		&sql.MysqlSystemVariable{
			// MySQL's range starts at 0, which gives the real clock back
			// (sessiontime.go); GMS's at 1.
			Name: "timestamp", Scope: sql.GetMysqlScope(sql.SystemVariableScope_Session), Dynamic: true, SetVarHintApplies: true,
			Type: types.NewSystemDoubleType("timestamp", 0, 2147483647), Default: timestampDefault,
		},
		// MySQL's members in MySQL's order, so that a number means what
		// it means there (SET binlog_format = 2 is ROW, binlog_row_image
		// = 1 NOBLOB; go-mysql-server's lists read 0 as ROW and 1 as
		// FULL). Every value but ROW and FULL is refused (fixedValues),
		// by its name. Both can be set per session, as in MySQL.
		&sql.MysqlSystemVariable{
			Name: "binlog_format", Scope: sql.GetMysqlScope(sql.SystemVariableScope_Both), Dynamic: true,
			Type: types.NewSystemEnumType("binlog_format", "MIXED", "STATEMENT", "ROW"), Default: "ROW",
		},
		&sql.MysqlSystemVariable{
			Name: "binlog_row_image", Scope: sql.GetMysqlScope(sql.SystemVariableScope_Both), Dynamic: true,
			Type: types.NewSystemEnumType("binlog_row_image", "MINIMAL", "NOBLOB", "FULL"), Default: "FULL",
		},
		&sql.MysqlSystemVariable{
			// OFF sends every statement through go-mysql-server (for
			// comparing the two paths, or ruling the fast path out).
			Name: "lockstep_fast_path", Scope: sql.GetMysqlScope(sql.SystemVariableScope_Both), Dynamic: true,
			Type: types.NewSystemBoolType("lockstep_fast_path"), Default: int8(1),
		},
	})
	// The password policy's (shown once it is installed).
	sql.SystemVariables.AddSystemVariables(passwordPolicyVariables())
	// rbr_exec_mode's members in MySQL's order (0 is STRICT; only STRICT
	// is taken, fixedValues).
	if v, _, ok := sql.SystemVariables.GetGlobal("rbr_exec_mode"); ok {
		if mv, isMySQL := v.(*sql.MysqlSystemVariable); isMySQL {
			mode := *mv
			mode.Type, mode.Default = types.NewSystemEnumType("rbr_exec_mode", "STRICT", "IDEMPOTENT"), "STRICT"
			sql.SystemVariables.AddSystemVariables([]sql.SystemVariable{&mode})
		}
	}
	// MySQL 8's default sql_mode (GMS's lacks the zero-date and division
	// flags, which strictmode.go applies), also what SET sql_mode =
	// DEFAULT gives.
	if v, _, ok := sql.SystemVariables.GetGlobal("sql_mode"); ok {
		if mv, isMySQL := v.(*sql.MysqlSystemVariable); isMySQL {
			mode := *mv
			mode.Default = mysqlDefaultSQLMode
			sql.SystemVariables.AddSystemVariables([]sql.SystemVariable{&mode})
		}
	}
	// MySQL 8's default collation (GMS's own default is utf8mb4_0900_bin).
	_ = sql.SystemVariables.AssignValues(map[string]any{"collation_server": "utf8mb4_0900_ai_ci", "collation_database": "utf8mb4_0900_ai_ci"})
}

// SessionBuilder makes a Lockstep session per connection.
func (e *Engine) SessionBuilder() server.SessionBuilder { return e.SessionBuilderVersion("") }

// SessionBuilderVersion is SessionBuilder for a port that announces
// another server version (the MariaDB port): its sessions' @@version and
// VERSION() say version, as the handshake did ("" keeps the server's).
func (e *Engine) SessionBuilderVersion(version string) server.SessionBuilder {
	return func(ctx context.Context, conn *mysql.Conn, addr string) (sql.Session, error) {
		host, user := "", ""
		if u, ok := conn.UserData.(sql.MysqlConnectionUser); ok {
			host, user = u.Host, u.User
		}
		client := sql.Client{Address: host, User: user, Capabilities: conn.Capabilities}
		base := sql.NewBaseSessionWithClientServer(addr, client, conn.ConnectionID)
		s := &Session{BaseSession: base, eng: e, version: version}
		if user != "" {
			s.login = user + "@" + clientHost(addr)
		}
		if coll, ok := handshakeCollation(sql.CollationID(conn.CharacterSet)); ok {
			ctx := sql.NewContext(ctx, sql.WithSession(s))
			if cs := coll.CharacterSet(); cs != sql.CharacterSet_utf8mb4 {
				for _, v := range []string{"character_set_client", "character_set_connection", "character_set_results"} {
					if err := s.SetSessionVariable(ctx, v, cs.Name()); err != nil {
						return nil, err
					}
				}
			}
			if err := s.SetSessionVariable(ctx, "collation_connection", coll.Name()); err != nil {
				return nil, err
			}
		}
		e.sessions.Store(conn.ConnectionID, s)
		return s, nil
	}
}

// handshakeCollation is the connection collation for the collation a
// client names in its handshake, which MySQL makes the session's
// collation_connection, and its character set character_set_client,
// character_set_connection and character_set_results (as SET NAMES
// does): without it every session compared literals by go-mysql-server's
// default, utf8mb4_0900_bin, so 'a' = 'A' was 0 where MySQL, for a client
// asking for utf8mb4_0900_ai_ci or utf8mb4_general_ci, says 1, and a
// client asking for latin1 got its results in utf8mb4.
//
// A utf8mb3 collation (sysbench asks for utf8_general_ci) gives its
// utf8mb4 twin, which orders and compares the same characters the same
// way. A set MySQL does not take from clients (UTF-16, UTF-32, UCS-2)
// leaves the default, as in MySQL. Statements are read as UTF-8 whatever
// the set (see the README); results are sent in it (resultscharset.go).
func handshakeCollation(id sql.CollationID) (sql.CollationID, bool) {
	if id == 0 || id.Name() == "" {
		return 0, false
	}
	switch cs := id.CharacterSet(); cs {
	case sql.CharacterSet_utf8mb4:
		return id, true
	case sql.CharacterSet_utf8mb3:
		name := "utf8mb4" + strings.TrimPrefix(id.Name(), "utf8mb3")
		if c, err := sql.ParseCollation("", name, false); err == nil && c.CharacterSet() == sql.CharacterSet_utf8mb4 {
			return c, true
		}
	case sql.CharacterSet_utf16, sql.CharacterSet_utf16le, sql.CharacterSet_utf32, sql.CharacterSet_ucs2:
	default:
		if cs.Encoder() != nil {
			return id, true
		}
	}
	return 0, false
}

// UserVariable returns user variable @name of connection connID's session
// (nil if the session or the variable does not exist).
func (e *Engine) UserVariable(connID uint32, name string) any {
	v, ok := e.sessions.Load(connID)
	if !ok {
		return nil
	}
	s := v.(*Session)
	_, val, err := s.GetUserVariable(sql.NewContext(context.Background(), sql.WithSession(s)), name)
	if err != nil {
		return nil
	}
	return val
}

// SessionContext returns a context on connection connID's session, for
// statements the server answers itself; false if there is no session.
func (e *Engine) SessionContext(connID uint32) (*sql.Context, bool) {
	v, ok := e.sessions.Load(connID)
	if !ok {
		return nil, false
	}
	return sql.NewContext(context.Background(), sql.WithSession(v.(*Session))), true
}

// EvalDatetime evaluates a SQL expression as a DATETIME in connection
// connID's session (its time zone and clock), as PURGE BINARY LOGS
// BEFORE takes one: the wall-clock time it names.
func (e *Engine) EvalDatetime(connID uint32, expr string) (time.Time, error) {
	v, ok := e.sessions.Load(connID)
	if !ok {
		return time.Time{}, fmt.Errorf("no session %d", connID)
	}
	ctx := e.NewContext(context.Background(), sql.WithSession(v.(*Session)))
	ctx.SetQueryTime(time.Now())
	applySessionTime(ctx)
	q := "SELECT CAST((" + expr + ") AS DATETIME)"
	_, iter, _, err := e.GMS.Query(ctx.WithQuery(q), q)
	if err != nil {
		return time.Time{}, err
	}
	rows, err := sql.RowIterToRows(ctx, iter)
	if err != nil {
		return time.Time{}, err
	}
	if len(rows) != 1 || len(rows[0]) != 1 {
		return time.Time{}, fmt.Errorf("%q is not one value", expr)
	}
	t, ok := rows[0][0].(time.Time)
	if !ok {
		return time.Time{}, fmt.Errorf("%q is not a date and time", expr)
	}
	return t, nil
}

// StatementStart is what connection connID's session holds as a
// statement starts: its current database and its running totals of the
// nanoseconds it waited for row locks and the rows it read from the
// store; a statement's share is their change across it (the slow query
// log's Lock_time and Rows_examined, and performance_schema's).
func (e *Engine) StatementStart(connID uint32) (db string, lockWaitNanos, rowsRead int64) {
	v, ok := e.sessions.Load(connID)
	if !ok {
		return "", 0, 0
	}
	s := v.(*Session)
	return s.GetCurrentDatabase(), s.lockWait.Load(), s.rowsRead.Load()
}

// StatementEnd is the session's running totals (StatementStart) and the
// number of warnings of connection connID's last statement.
func (e *Engine) StatementEnd(connID uint32) (lockWaitNanos, rowsRead int64, warnings uint64) {
	v, ok := e.sessions.Load(connID)
	if !ok {
		return 0, 0, 0
	}
	s := v.(*Session)
	s.flushIO() // tableio.go
	s.flushTableUse()
	return s.lockWait.Load(), s.rowsRead.Load(), uint64(s.WarningCount())
}

// CountStatus adds one to status variable name, globally and in
// connection connID's session (if it has one).
func (e *Engine) CountStatus(connID uint32, name string) {
	sql.StatusVariables.IncrementGlobal(name, 1)
	if v, ok := e.sessions.Load(connID); ok {
		// The session's count ignores the context (no need to make one
		// per statement).
		v.(*Session).IncrementStatusVariable(nil, name, 1)
	}
}

// SessionVariable returns system variable name in connection connID's
// session; false if there is no such session or variable.
func (e *Engine) SessionVariable(connID uint32, name string) (any, bool) {
	v, ok := e.sessions.Load(connID)
	if !ok {
		return nil, false
	}
	s := v.(*Session)
	val, err := s.GetSessionVariable(sql.NewContext(context.Background(), sql.WithSession(s)), name)
	return val, err == nil
}

// SetSessionVariable sets system variable name in connection connID's
// session.
func (e *Engine) SetSessionVariable(connID uint32, name string, val any) error {
	v, ok := e.sessions.Load(connID)
	if !ok {
		return fmt.Errorf("no session %d", connID)
	}
	s := v.(*Session)
	return s.SetSessionVariable(sql.NewContext(context.Background(), sql.WithSession(s)), name, val)
}

// Collator orders text keys by GMS's collation weights.
type Collator struct{}

// AppendWeights implements row.Collator.
func (Collator) AppendWeights(dst []byte, collation uint16, s string) []byte {
	c := sql.CollationID(collation)
	if c == sql.Collation_binary || c.Collation().Sorter == nil {
		return append(dst, s...)
	}
	if c.PadAttribute() == "PAD SPACE" {
		for len(s) > 0 && s[len(s)-1] == ' ' {
			s = s[:len(s)-1]
		}
	}
	sorter := c.Sorter()
	for _, r := range s {
		w := uint32(sorter(r)) ^ 1<<31
		dst = append(dst, byte(w>>24), byte(w>>16), byte(w>>8), byte(w))
	}
	return dst
}

// CommitGTIDOnly commits an empty transaction under g: BEGIN; COMMIT
// under gtid_next, which skips g. A g already executed gives
// commit.ErrGTIDExecuted.
func (e *Engine) CommitGTIDOnly(g binlog.GTIDInfo) error { return e.txns.CommitGTIDOnly(g) }

// replSessionIDs numbers the internal sessions that run replicated DDL
// (above any connection id).
var replSessionIDs atomic.Uint32

// ExecDDL runs q, a DDL statement from a replication source, as root on
// its database, committing under the source's GTID g. Its text is read
// as the source's sql_mode says (clienttext.go); the source's
// collation_server is the default for CREATE DATABASE. A statement that
// changes nothing (DROP TABLE IF EXISTS of a missing table, say) still
// records g, as MySQL does, with the statement alone in the binlog.
func (e *Engine) ExecDDL(q binlog.Query, g binlog.GTIDInfo) error {
	db, serverCollation := q.DB, q.ServerCollation
	query := translateLiterals(q.Query, q.SQLMode&mysql.QSqlModeAnsiQuotes != 0, q.SQLMode&mysql.QSqlModeNoBackslashEscapes != 0, nil)
	id := 1<<31 + replSessionIDs.Add(1)
	base := sql.NewBaseSessionWithClientServer("", sql.Client{User: "root", Address: "localhost"}, id)
	s := &Session{BaseSession: base, eng: e, replGTID: &g, replCollation: serverCollation}
	defer s.endDDLHold()
	ctx := sql.NewContext(context.Background(), sql.WithSession(s))
	ctx.SetCurrentDatabase(db)
	handled, err := e.AccountStatement(ctx, query, func([]string) bool { return true })
	if !handled && MaybeAlterProcedure(query) {
		handled, err = e.AlterProcedureStatement(ctx, query) // alterprocedure.go
	}
	if !handled {
		var iter sql.RowIter
		_, iter, _, err = e.GMS.Query(ctx, query)
		if err == nil {
			_, err = sql.RowIterToRows(ctx, iter)
		}
	}
	if s.tx != nil && !s.tx.Ended() {
		if err == nil {
			err = s.tx.Commit()
		} else {
			s.tx.Rollback()
		}
	}
	if err != nil || s.replUsed {
		return err
	}
	return e.txns.CommitStatement(s.caller(ctx), db, query, g)
}

// erOptionPrevents is ER_OPTION_PREVENTS_STATEMENT.
const erOptionPrevents = 1290

// writable refuses a client's write in a READ ONLY transaction (1792)
// and under read_only / super_read_only.
func (e *Engine) writable(ctx *sql.Context) error {
	if s := sessionOf(ctx); s != nil && s.replGTID == nil && s.readOnlyTransaction(ctx) {
		return errReadOnlyTransaction
	}
	return e.writableServer(ctx)
}

// writableServer refuses a client's write under read_only /
// super_read_only.
func (e *Engine) writableServer(ctx *sql.Context) error {
	if !e.ReadOnly.Load() && !e.SuperReadOnly.Load() {
		return nil
	}
	if s := sessionOf(ctx); s != nil && s.replGTID != nil {
		return nil // a replicated statement
	}
	if e.SuperReadOnly.Load() {
		return errReadOnly("--super-read-only")
	}
	if !e.hasSuper(ctx) {
		return errReadOnly("--read-only")
	}
	return nil
}

// errReadOnlyTransaction is ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION.
var errReadOnlyTransaction = mysql.NewSQLError(1792, "25006", "Cannot execute statement in a READ ONLY transaction.")

// errReadOnly is MySQL's refusal under read_only or super_read_only.
func errReadOnly(option string) error {
	return mysql.NewSQLError(erOptionPrevents, "HY000", "The MySQL server is running with the %s option so it cannot execute this statement", option)
}

func (e *Engine) hasSuper(ctx *sql.Context) bool {
	db := e.GMS.Analyzer.Catalog.MySQLDb
	rd := db.Reader()
	defer rd.Close()
	u := SessionUser(db, rd, ctx.Session.Client())
	return u != nil && u.PrivilegeSet.Has(sql.PrivilegeType_Super)
}

// InTransaction reports whether connection connID's next statement would
// run inside a transaction the client opened (BEGIN, or autocommit off)
// rather than in its own.
func (e *Engine) InTransaction(connID uint32) bool {
	v, ok := e.sessions.Load(connID)
	if !ok {
		return false
	}
	s := v.(*Session)
	return explicitTransaction(sql.NewContext(context.Background(), sql.WithSession(s))) || (s.tx != nil && !s.tx.Ended())
}
