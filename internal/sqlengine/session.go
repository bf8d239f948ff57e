package sqlengine

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/commit"
	"github.com/lockstepdb/lockstep/internal/lock"
	"github.com/lockstepdb/lockstep/internal/storage"
	"github.com/lockstepdb/lockstep/internal/txn"
)

// Session is a client session: GMS's base session plus the Lockstep
// transaction and the current statement's locking-read settings.
//
// GMS drives the transaction: it calls StartTransaction before a statement
// when none is open, and CommitTransaction when the statement ends under
// autocommit or at COMMIT. The storage transaction behind it is created
// lazily and, after a deadlock rolled it back, created anew on next use (as
// InnoDB starts a new transaction after rolling back a deadlock victim).
type Session struct {
	*sql.BaseSession
	eng *Engine
	tx  *txn.Txn
	// login is USER(): the name the client logged in with, @ the host
	// it connected from (userfunc.go).
	login string
	// temp are the session's temporary tables (temptable.go).
	temp map[string]*tempTable
	// stmtLocks says which tables the current statement reads with locks:
	// table name (lower case) -> mode; "*" applies to every table.
	stmtLocks map[string]lock.Mode
	// stmtWait is the locking clause's NOWAIT or SKIP LOCKED.
	stmtWait txn.WaitPolicy
	// truncating is set while a TRUNCATE TABLE statement runs.
	truncating bool
	// temporaryOnly is set while a DROP TEMPORARY TABLE statement runs:
	// its names are looked up among the session's temporary tables only,
	// so that IF EXISTS passes over a permanent table of the name with a
	// note, as in MySQL (droptables.go).
	temporaryOnly bool
	// indexPartsChecked is set once the current command's multi-part
	// ALTER TABLE was vetted (checkIndexParts).
	indexPartsChecked bool
	// replGTID, when set, is the GTID the session's DDL commits under (a
	// statement from a replication source); replUsed once it has.
	replGTID      *binlog.GTIDInfo
	replUsed      bool
	replCollation uint16 // the source's collation_server
	// gtidNext is the session's fixed gtid_next (nil: AUTOMATIC), and
	// gtidNextUsed whether a transaction has committed or rolled back
	// under it since it was set (gtidnext.go).
	gtidNext     *binlog.GTIDInfo
	gtidNextUsed bool
	// ioRun is the table I/O the session counted and has not yet added
	// to the engine's counts (tableio.go).
	ioRun ioRun
	// tablesUsed are the tables the statement read (false) or wrote
	// (true), for the table lock counts (tableio.go).
	tablesUsed map[*storage.Table]bool
	// replay is the state of the session's BINLOG statements
	// (binlogstmt.go); nil before the first.
	replay *binlogReplay
	// account is the account statement being run, for the binlog (see
	// accountlog.go); nil for any other.
	account *accountNote
	// consistentSnapshot: the START TRANSACTION being run asked WITH
	// CONSISTENT SNAPSHOT (readlock.go).
	consistentSnapshot bool
	// beginAccess is the START TRANSACTION being run's READ ONLY or READ
	// WRITE ("" when it names neither: the session's
	// transaction_read_only decides).
	beginAccess string
	// version, if set, is this session's @@version (the MariaDB port's).
	version string
	// replacingView is the view the statement being run replaces, and
	// alteringView says the statement was an ALTER VIEW (views.go).
	replacingView string
	alteringView  bool
	// viewDB stands in for the current database, for the rest of the
	// statement, once a view was read in a session without one (views.go).
	viewDB string
	// triggerDB stands in for the current database while trigger bodies
	// of another database are planned (triggers.go).
	triggerDB string
	// writesRows says the statement is an INSERT, UPDATE, DELETE or
	// LOAD DATA, whose triggers planningTriggers says are being planned:
	// until its analysis ends, tables are resolved without the
	// session's privilege check (triggers.go).
	writesRows, planningTriggers bool
	// privCounter is the accounts' version the privilege cache was last
	// checked against its account at (accountmatch.go); privChecked says
	// it was at all.
	privCounter uint64
	privChecked bool
	// fixedTime is SET timestamp's time, nil for the real clock
	// (sessiontime.go).
	fixedTime atomic.Pointer[time.Time]
	// lockWait adds up the nanoseconds the session waited for row locks,
	// rowsRead the rows its statements read from the store (the slow
	// query log's Lock_time and Rows_examined: StatementStart).
	lockWait atomic.Int64
	rowsRead atomic.Int64
	// sqlPrepared counts the session's statements prepared with SQL
	// PREPARE (in Engine.SQLPrepared too); protocolRefs the protocol's
	// open statements per key, and protocolKey, while one is prepared,
	// receives its key (see PrepareQuery).
	sqlPrepared int64
	// sqlPreparedBytes are those statements' texts' lengths by name (in
	// Engine.SQLPreparedBytes too); pendingPrepare the length of the
	// PREPARE being run, and pendingDelta what its admission added to
	// Engine.SQLPreparedBytes ahead of it (taken back if the PREPARE
	// fails: see releasePendingPrepare).
	sqlPreparedBytes map[string]int64
	pendingPrepare   int64
	pendingDelta     int64
	pendingReserved  bool
	protocolRefs     map[string]int
	protocolKey      *string
	// tableLocks are the tables locked by LOCK TABLES (locktables.go).
	tableLocks sessionTableLocks
	// ddlHold are the tables the statement holds for its DDL (holdDDL,
	// checks.go).
	ddlHold sessionTableLocks
	// tableCase maps the lower-cased FROM names of the current SELECT
	// that have capitals to their spelling (tablecase.go).
	tableCase map[string]string
	// resultAliases are the current SELECT's column and table aliases,
	// lower case (coldecl.go: ColumnDecimals).
	resultAliases map[string]bool
	// createSpec is the CREATE TABLE being run; embedded are the indexes
	// it made with its table that go-mysql-server has not asked for yet
	// (createindexes.go), embeddedSpatial the columns of its SPATIAL ones.
	createSpec      *ast.DDL
	createLike      *ast.DDL // a CREATE TABLE ... LIKE being run
	embedded        map[uint64][]storage.IndexDef
	embeddedSpatial map[uint64][]int
	// holdCreated: the statement is a CREATE TABLE that adds checks,
	// keys or foreign keys after the table (Database.CreateTable holds it).
	holdCreated bool
	// altered are the tables whose SQL metadata the statement changed
	// (alter_table): its own reads of them go on (Table.begin).
	altered map[uint64]bool
	// strict is what the current statement is, for sql_mode's strict
	// checks (strictmode.go).
	strict strictStatement
	// noted says the command's statement has been noted (note): a parse
	// after it in the same command is nested (a column default, a view's
	// query, met while the statement is analysed or run) and must not
	// replace what was noted of the statement (its strictness, its
	// locking reads, its account change).
	noted bool
	// rowCount counts the rows a REPLACE writes in its table
	// (replacecount.go).
	rowCount *rowCounter
	// declared is what the statement declares of its columns beyond
	// their go-mysql-server types, by lower-case name (coldecl.go).
	declared map[string]columnDecl
	// parsedMode is the last sql_mode value read and its flags
	// (sqlmode.go).
	parsedMode atomic.Pointer[parsedSQLMode]
	// readOnlyDefault caches transaction_read_only (read on every write
	// outside a transaction); readOnlyKnown is cleared when it is set.
	readOnlyDefault, readOnlyKnown bool
	// completion is the session's completion_type, when completionKnown
	// (txnend.go); set again, it is read again.
	completion      int
	completionKnown bool
}

// readOnlyTransaction reports whether the statement runs in a READ ONLY
// transaction: the open transaction's access mode, or, outside one (an
// autocommit statement), the session's transaction_read_only.
func (s *Session) readOnlyTransaction(ctx *sql.Context) bool {
	if t, ok := ctx.GetTransaction().(*Transaction); ok && t != nil {
		return t.readOnly
	}
	return s.defaultReadOnly(ctx)
}

func (s *Session) defaultReadOnly(ctx *sql.Context) bool {
	if !s.readOnlyKnown {
		v, err := s.GetSessionVariable(ctx, "transaction_read_only")
		s.readOnlyDefault, s.readOnlyKnown = err == nil && v != nil && isOn(v), true
	}
	return s.readOnlyDefault
}

var (
	_ sql.TransactionSession    = (*Session)(nil)
	_ sql.LifecycleAwareSession = (*Session)(nil)
)

// Transaction is GMS's handle on a session's transaction.
type Transaction struct {
	s        *Session
	readOnly bool
}

func (t *Transaction) String() string   { return "lockstep transaction" }
func (t *Transaction) IsReadOnly() bool { return t.readOnly }

func sessionOf(ctx *sql.Context) *Session {
	s, _ := ctx.Session.(*Session)
	return s
}

// txn returns the session's storage transaction, starting one if needed.
func (s *Session) txn(ctx *sql.Context) *txn.Txn {
	if s.tx == nil || s.tx.Ended() {
		s.tx = s.eng.txns.Begin(s.isolation(ctx), uint64(s.ID()), s.lockWaitTimeout(ctx))
		s.tx.CountLockWaits(&s.lockWait)
	}
	s.tx.Ctx = ctx
	s.tx.ReadLockWait = s.readLockWait(ctx)
	s.tx.DB = ctx.GetCurrentDatabase()
	s.tx.QueryOptions.ThreadID = s.ID()
	return s.tx
}

func (s *Session) isolation(ctx *sql.Context) txn.Isolation {
	v, err := s.GetSessionVariable(ctx, "transaction_isolation")
	if err != nil {
		return txn.RepeatableRead
	}
	switch strings.ToUpper(strings.ReplaceAll(toString(v), "_", "-")) {
	case "READ-COMMITTED", "READ-UNCOMMITTED":
		return txn.ReadCommitted
	case "SERIALIZABLE":
		return txn.Serializable
	}
	return txn.RepeatableRead
}

// readLockWait is lock_wait_timeout: how long a commit waits for the
// global read lock (FLUSH TABLES WITH READ LOCK) to be released, and the
// lock for commits in flight.
func (s *Session) readLockWait(ctx *sql.Context) time.Duration {
	v, err := s.GetSessionVariable(ctx, "lock_wait_timeout")
	n, ok := asInt64(v)
	if err != nil || !ok {
		return 0
	}
	return time.Duration(n) * time.Second
}

// caller is the session as the commit pipeline sees it.
func (s *Session) caller(ctx *sql.Context) commit.Caller {
	return commit.Caller{Session: uint64(s.ID()), Ctx: ctx, LockWait: s.readLockWait(ctx)}
}

func (s *Session) lockWaitTimeout(ctx *sql.Context) time.Duration {
	v, err := s.GetSessionVariable(ctx, "innodb_lock_wait_timeout")
	if err != nil {
		return 50 * time.Second
	}
	switch x := v.(type) {
	case int64:
		return time.Duration(x) * time.Second
	case uint64:
		return time.Duration(x) * time.Second
	case int:
		return time.Duration(x) * time.Second
	}
	return 50 * time.Second
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}

// StartTransaction implements sql.TransactionSession.
func (s *Session) StartTransaction(ctx *sql.Context, c sql.TransactionCharacteristic) (sql.Transaction, error) {
	if s.tx != nil && !s.tx.Ended() {
		// GMS lost track of an open transaction; finish it as MySQL's
		// implicit commit would.
		if err := s.tx.Commit(); err != nil {
			return nil, mysqlError(err)
		}
	}
	s.tx = nil
	// READ ONLY or READ WRITE as START TRANSACTION says, else the
	// session's default (go-mysql-server passes READ WRITE for both).
	access := s.beginAccess
	s.beginAccess = ""
	readOnly := c == sql.ReadOnly || (access == "" && s.defaultReadOnly(ctx))
	if s.consistentSnapshot {
		s.consistentSnapshot = false
		// Under READ COMMITTED each statement takes its own view anyway.
		s.txn(ctx).StartSnapshot()
	}
	return &Transaction{s: s, readOnly: readOnly}, nil
}

// CommitTransaction implements sql.TransactionSession.
func (s *Session) CommitTransaction(ctx *sql.Context, _ sql.Transaction) error {
	if s.gtidNext != nil {
		return s.commitUnderGTIDNext(ctx) // gtidnext.go
	}
	if s.tx == nil {
		return nil
	}
	t := s.tx
	s.tx = nil
	if explicitTransaction(ctx) {
		sql.IncrementStatusVariable(ctx, "Com_commit", 1)
	}
	// The commit waits (for the global read lock) as this statement.
	t.Ctx, t.ReadLockWait = ctx, s.readLockWait(ctx)
	return mysqlError(t.Commit())
}

// explicitTransaction reports whether the session is in a transaction the
// client opened (BEGIN, or autocommit off), as opposed to a statement's own.
func explicitTransaction(ctx *sql.Context) bool {
	if ctx.GetIgnoreAutoCommit() {
		return true
	}
	ac, err := ctx.GetSessionVariable(ctx, "autocommit")
	return err == nil && !isOn(ac)
}

// isOn reads a boolean system variable's value (GMS keeps them as int8).
func isOn(v any) bool {
	switch x := v.(type) {
	case int8:
		return x != 0
	case int64:
		return x != 0
	case bool:
		return x
	}
	return true
}

// Rollback implements sql.TransactionSession.
func (s *Session) Rollback(ctx *sql.Context, _ sql.Transaction) error {
	sql.IncrementStatusVariable(ctx, "Com_rollback", 1)
	if s.gtidNext != nil && explicitTransaction(ctx) {
		s.gtidNextUsed = true // gtidnext.go
	}
	if s.tx != nil {
		s.tx.Rollback()
		s.tx = nil
	}
	return nil
}

// CreateSavepoint implements sql.TransactionSession.
func (s *Session) CreateSavepoint(ctx *sql.Context, _ sql.Transaction, name string) error {
	s.txn(ctx).Savepoint(strings.ToLower(name))
	return nil
}

// RollbackToSavepoint implements sql.TransactionSession.
func (s *Session) RollbackToSavepoint(ctx *sql.Context, _ sql.Transaction, name string) error {
	return mysqlError(s.txn(ctx).RollbackToSavepoint(strings.ToLower(name)))
}

// ReleaseSavepoint implements sql.TransactionSession.
func (s *Session) ReleaseSavepoint(ctx *sql.Context, _ sql.Transaction, name string) error {
	return mysqlError(s.txn(ctx).ReleaseSavepoint(strings.ToLower(name)))
}

// CommandBegin implements sql.LifecycleAwareSession: a new command starts
// with no locking reads.
func (s *Session) CommandBegin() error {
	s.noted = false
	s.declared = nil
	s.rowCount = nil
	s.indexPartsChecked = false
	clear(s.stmtLocks)
	s.stmtWait = txn.Wait
	s.truncating, s.temporaryOnly = false, false
	if s.tx != nil && !s.tx.Ended() {
		s.tx.NewReadView()
	}
	return nil
}

// CommandEnd implements sql.LifecycleAwareSession. go-mysql-server
// commits an autocommit statement's transaction when the statement
// succeeds, and leaves it open when it fails: its row and metadata locks
// then outlived the statement until the session's next one, so an idle
// connection whose last statement failed blocked others (a LOCK TABLES
// waited for it forever). It ends here, rolled back, as in MySQL (the
// failed statement's changes are already undone).
func (s *Session) CommandEnd() {
	s.endDDLHold()
	if s.tx == nil || s.tx.Ended() || s.GetIgnoreAutoCommit() {
		return
	}
	if ac, err := s.BaseSession.GetSessionVariable(sql.NewContext(context.Background(), sql.WithSession(s)), "autocommit"); err != nil || !isOn(ac) {
		return
	}
	s.tx.Rollback()
	s.tx = nil
	s.SetTransaction(nil)
}

// SessionEnd implements sql.LifecycleAwareSession: an open transaction is
// rolled back when the client goes away.
func (s *Session) SessionEnd() {
	s.flushIO()
	s.flushTableUse()
	if s.tx != nil {
		s.tx.Rollback()
		s.tx = nil
	}
	s.releaseTableLocks()
	s.endDDLHold()
	if s.eng.pipe != nil {
		s.eng.pipe.EndSession(uint64(s.ID()))
	}
	s.eng.SQLPrepared.Add(-s.sqlPrepared)
	s.sqlPrepared = 0
	s.releasePendingPrepare()
	for _, n := range s.sqlPreparedBytes {
		s.eng.SQLPreparedBytes.Add(-n)
	}
	s.sqlPreparedBytes = nil
	// After COM_RESET_CONNECTION the connection's new session is stored
	// before the old one ends: only the old one's entry goes.
	s.eng.sessions.CompareAndDelete(s.ID(), s)
}

// Prepared statements are kept in the session by go-mysql-server, both
// kinds under one map: SQL PREPARE's by name, the protocol's
// (COM_STMT_PREPARE) by their text, which it never removes. So that a
// long session preparing many distinct statements does not grow without
// end, the session counts the protocol's per text while the server
// prepares one (PrepareProtocol) and drops a text when the last
// statement of it is closed (ReleaseProtocol); SQL PREPARE's are counted
// in Engine.SQLPrepared, for max_prepared_stmt_count.

// preparedTextLen is the length of the text a PREPARE prepares: its
// string, or the user variable it names.
func preparedTextLen(ctx *sql.Context, p *ast.Prepare) int64 {
	if name, ok := strings.CutPrefix(p.Expr, "@"); ok {
		if _, v, err := ctx.GetUserVariable(ctx, name); err == nil {
			switch t := v.(type) {
			case string:
				return int64(len(t))
			case []byte:
				return int64(len(t))
			}
		}
	}
	return int64(len(p.Expr))
}

// AdmitPreparedBytes adds n bytes of prepared statements to counter
// (SQLPreparedBytes or OtherPreparedBytes) and checks the total against
// lockstep_max_prepared_stmt_bytes, taking them back and refusing (1461)
// past it. Adding before checking keeps the bound under concurrent
// prepares: each sees the others' bytes (two racing for the last room
// may both be refused, never both admitted).
func (e *Engine) AdmitPreparedBytes(n int64, counter *atomic.Int64) error {
	_, v, _ := sql.SystemVariables.GetGlobal("lockstep_max_prepared_stmt_bytes")
	limit, ok := asInt64(v)
	total := counter.Add(n)
	if !ok || n <= 0 {
		return nil
	}
	if counter == &e.SQLPreparedBytes {
		if e.OtherPreparedBytes != nil {
			total += e.OtherPreparedBytes.Load()
		}
	} else {
		total += e.SQLPreparedBytes.Load()
	}
	if total > limit {
		counter.Add(-n)
		return mysql.NewSQLError(1461, "42000", "Can't keep more than lockstep_max_prepared_stmt_bytes bytes of prepared statements (current value: %d)", limit)
	}
	return nil
}

// releasePendingPrepare takes back what the admission of a PREPARE that
// did not complete added (called before the session's next statement
// and at its end).
func (s *Session) releasePendingPrepare() {
	if s.pendingReserved {
		s.eng.SQLPreparedBytes.Add(-s.pendingDelta)
		s.pendingReserved, s.pendingDelta = false, 0
	}
}

// PrepareQuery keeps a prepared statement's parsed form under key.
func (s *Session) PrepareQuery(key string, stmt ast.Statement) {
	_, had := s.BaseSession.GetPreparedQuery(key)
	if s.protocolKey != nil {
		*s.protocolKey = key
		if s.protocolRefs == nil {
			s.protocolRefs = map[string]int{}
		}
		s.protocolRefs[key]++
	} else {
		if !had {
			s.sqlPrepared++
			s.eng.SQLPrepared.Add(1)
		}
		if s.sqlPreparedBytes == nil {
			s.sqlPreparedBytes = map[string]int64{}
		}
		if !s.pendingReserved {
			s.eng.SQLPreparedBytes.Add(s.pendingPrepare - s.sqlPreparedBytes[key])
		}
		s.pendingReserved, s.pendingDelta = false, 0 // now counted as key's
		s.sqlPreparedBytes[key] = s.pendingPrepare
	}
	s.BaseSession.PrepareQuery(key, stmt)
}

// UnprepareQuery drops a statement prepared with SQL PREPARE
// (DEALLOCATE PREPARE) and uncounts it.
func (s *Session) UnprepareQuery(name string) {
	if _, ok := s.BaseSession.GetPreparedQuery(name); ok && s.protocolRefs[name] == 0 {
		s.sqlPrepared--
		s.eng.SQLPrepared.Add(-1)
		s.eng.SQLPreparedBytes.Add(-s.sqlPreparedBytes[name])
		delete(s.sqlPreparedBytes, name)
	}
	s.BaseSession.UnprepareQuery(name)
}

// PrepareProtocol runs prepare, go-mysql-server's COM_STMT_PREPARE, on
// connection connID's session, and returns the key the session keeps the
// statement under ("" if it kept none).
func (e *Engine) PrepareProtocol(connID uint32, prepare func() error) (string, error) {
	v, ok := e.sessions.Load(connID)
	if !ok {
		return "", prepare()
	}
	s := v.(*Session)
	var key string
	s.protocolKey = &key
	defer func() { s.protocolKey = nil }()
	err := prepare()
	return key, err
}

// ReleaseProtocol drops a statement the protocol prepared under key on
// connection connID's session, once no other statement of it is left.
func (e *Engine) ReleaseProtocol(connID uint32, key string) {
	v, ok := e.sessions.Load(connID)
	if !ok {
		return
	}
	s := v.(*Session)
	if s.protocolRefs[key] > 1 {
		s.protocolRefs[key]--
		return
	}
	delete(s.protocolRefs, key)
	s.BaseSession.UnprepareQuery(key)
}

// HasPrepared reports whether connection connID's session has a statement
// prepared with SQL PREPARE under name.
func (e *Engine) HasPrepared(connID uint32, name string) bool {
	v, ok := e.sessions.Load(connID)
	if !ok {
		return false
	}
	_, ok = v.(*Session).BaseSession.GetPreparedQuery(name)
	return ok
}

// GetPreparedQuery returns a prepared statement's cached AST; executing it
// notes its locking clause, as parsing does for plain queries.
func (s *Session) GetPreparedQuery(query string) (ast.Statement, bool) {
	st, ok := s.BaseSession.GetPreparedQuery(query)
	if ok {
		s.noted = true
		s.noteStatement(st)
	}
	return st, ok
}

// noteAltered records that the statement changed table id's metadata.
func (s *Session) noteAltered(id uint64) {
	if s.altered == nil {
		s.altered = map[uint64]bool{}
	}
	s.altered[id] = true
}

// noteStatement records which tables the statement reads with locks:
// SELECT ... FOR UPDATE / FOR SHARE / LOCK IN SHARE MODE lock every table
// read (or those named by OF); UPDATE and DELETE lock the rows they read
// from their target tables exclusively.
func (s *Session) noteStatement(st ast.Statement) {
	s.endDDLHold() // the statement before is over
	s.noteTableCase(st)
	s.noteResultNames(st)
	s.noteCreate(st)
	s.noteStrictness(st)
	clear(s.altered)
	s.holdCreated = false
	if s.stmtLocks == nil {
		s.stmtLocks = map[string]lock.Mode{}
	} else {
		clear(s.stmtLocks)
	}
	s.truncating, s.temporaryOnly = false, false
	s.stmtWait = txn.Wait
	switch n := st.(type) {
	case *ast.DDL:
		s.truncating = strings.EqualFold(n.Action, ast.TruncateStr)
		s.temporaryOnly = n.Action == ast.DropStr && n.Temporary // droptables.go
	case *ast.Select:
		// The parser gives every SELECT a Lock; Type is empty without a
		// locking clause.
		if n.Lock == nil || strings.TrimSpace(n.Lock.Type) == "" {
			return
		}
		lt := strings.ToLower(n.Lock.Type)
		mode := lock.Shared
		if strings.Contains(lt, "update") {
			mode = lock.Exclusive
		}
		switch {
		case strings.Contains(lt, "skip locked"):
			s.stmtWait = txn.SkipLocked
		case strings.Contains(lt, "nowait"):
			s.stmtWait = txn.NoWait
		}
		if len(n.Lock.Tables) == 0 {
			s.stmtLocks["*"] = mode
		}
		for _, t := range n.Lock.Tables {
			s.stmtLocks[strings.ToLower(t.Name.String())] = mode
		}
	case *ast.Update:
		for _, te := range n.TableExprs {
			noteTargets(te, s.stmtLocks)
		}
	case *ast.Delete:
		if len(n.Targets) > 0 {
			for _, t := range n.Targets {
				s.stmtLocks[strings.ToLower(t.Name.String())] = lock.Exclusive
			}
			return
		}
		for _, te := range n.TableExprs {
			noteTargets(te, s.stmtLocks)
		}
	}
}

func noteTargets(te ast.TableExpr, m map[string]lock.Mode) {
	switch t := te.(type) {
	case *ast.AliasedTableExpr:
		if tn, ok := t.Expr.(ast.TableName); ok {
			m[strings.ToLower(tn.Name.String())] = lock.Exclusive
			if !t.As.IsEmpty() {
				m[strings.ToLower(t.As.String())] = lock.Exclusive
			}
		}
	case *ast.JoinTableExpr:
		noteTargets(t.LeftExpr, m)
		noteTargets(t.RightExpr, m)
	case *ast.ParenTableExpr:
		for _, x := range t.Exprs {
			noteTargets(x, m)
		}
	}
}

// lockModeFor is the lock mode of reads of table name in this statement.
func (s *Session) lockModeFor(name string) lock.Mode {
	if len(s.stmtLocks) == 0 {
		return 0
	}
	if m, ok := s.stmtLocks[strings.ToLower(name)]; ok {
		return m
	}
	return s.stmtLocks["*"]
}

// afterError rolls the whole transaction back when InnoDB would: a deadlock
// victim loses its transaction; other errors roll back only the statement.
func (s *Session) afterError(err error) error {
	if errors.Is(err, lock.ErrDeadlock) && s.tx != nil {
		s.tx.Rollback()
	}
	return mysqlError(err)
}

// parser wraps GMS's parser: it notes each statement's locking clause on
// the session (whichever entry point parses it: the handler, the planner
// or PREPARE), accepts MySQL 8's FOR SHARE, which the vitess grammar lacks,
// as its equivalent LOCK IN SHARE MODE, and reports syntax errors as
// MySQL's 1064.
type parser struct{ sql.Parser }

var forShare = regexp.MustCompile(`(?i)\bfor\s+share(\s+(?:nowait|skip\s+locked))?\s*;?\s*$`)

// withForShare retries a parse that failed on a trailing FOR SHARE, with
// NOWAIT or SKIP LOCKED after it or not. The grammar's LOCK IN SHARE MODE
// takes neither, so the one given is added to the SELECT's lock clause,
// where the session reads it (note). It also blanks MariaDB's executable
// comments first (see blankMariaDBComments).
func withForShare(query string, parse func(string) (parsed, error)) (parsed, error) {
	query = blankMariaDBComments(query)
	r, err := parse(query)
	if err != nil {
		if m := forShare.FindStringSubmatch(query); m != nil {
			if r2, err2 := parse(forShare.ReplaceAllString(query, " LOCK IN SHARE MODE")); err2 == nil {
				if m[1] == "" {
					return r2, nil
				}
				if sel, ok := r2.st.(*ast.Select); ok && sel.Lock != nil {
					sel.Lock.Type += " " + strings.ToLower(strings.Join(strings.Fields(m[1]), " "))
					return r2, nil
				}
			}
		}
	}
	return r, err
}

// blankMariaDBComments replaces each /*M! ... */ comment outside quotes
// with as many spaces (so offsets into the query stay valid). MariaDB runs
// their contents, MySQL ignores them, and the vitess parser ran them
// whatever their version: a MariaDB dump starts with
// /*M!999999\- enable the sandbox mode */, which the mariadb client sends
// on as "/*M!999999 enable the sandbox mode */" and the parser then
// rejected, so such dumps could not be restored. Its other /*M!NNNNNN
// comments set MariaDB-only variables.
func blankMariaDBComments(q string) string {
	if !strings.Contains(q, "/*M!") {
		return q
	}
	b := []byte(q)
	var quote byte
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case quote != 0:
			if c == '\\' && quote != '`' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			quote = c
		case c == '/' && strings.HasPrefix(q[i:], "/*M!"):
			end := strings.Index(q[i+4:], "*/")
			if end < 0 {
				return string(b) // unterminated: the parser reports it
			}
			end += i + 4 + 2
			for j := i; j < end; j++ {
				b[j] = ' '
			}
			i = end - 1
		case c == '/' && strings.HasPrefix(q[i:], "/*"):
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				return string(b)
			}
			i += 2 + end + 1
		case c == '#' || c == '-' && strings.HasPrefix(q[i:], "-- "):
			end := strings.IndexByte(q[i:], '\n')
			if end < 0 {
				return string(b)
			}
			i += end
		}
	}
	return string(b)
}

type parsed struct {
	st       ast.Statement
	q, rem   string
	consumed int
}

func note(ctx context.Context, st ast.Statement, text string, queryLen int) error {
	if err := checkDepth(st, queryLen); err != nil {
		return err
	}
	if err := checkTxnEnd(ctx, st, text); err != nil {
		return err
	}
	rewriteRegexpOperators(st, text)
	rewriteGroupConcat(st, text)
	rewriteDecimalCasts(st, text)
	rewriteTimeCasts(st, text)
	rewriteIntervalArithmetic(st, text)
	rewriteBitOperators(st, text)
	joinComponentVariables(st)
	showTriggersFrom(st)
	if err := balanceSetOps(st, text); err != nil {
		return err
	}
	if err := unsupportedDDL(st); err != nil {
		return err
	}
	if err := refuseReturning(st, text); err != nil { // returning.go
		return err
	}
	if err := checkProcedureBody(st); err != nil { // routines.go
		return err
	}
	if err := rewriteTypedLiterals(st, text); err != nil {
		return err
	}
	if sctx, ok := ctx.(*sql.Context); ok {
		if err := realAsFloat(sctx, st); err != nil {
			return err
		}
		if err := noteDeclared(sctx, st); err != nil {
			return err
		}
		if err := renameInCurrentDB(sctx, st); err != nil {
			return err
		}
		if err := checkFile(sctx, st); err != nil {
			return err
		}
		if err := checkLockingRead(sctx, st); err != nil {
			return err
		}
		if err := checkSystemDatabase(sctx, st); err != nil {
			return err
		}
		if err := checkDropTables(sctx, st); err != nil {
			return err
		}
		if err := checkAccountStatement(sctx, st, text); err != nil {
			return err
		}
		if s := sessionOf(sctx); s != nil && !s.noted {
			if p := s.parsedSQLMode(); p != nil && p.noBackslashEscapes {
				if err := readNoBackslashEscapes(st); err != nil { // clienttext.go
					return err
				}
			}
			s.noted = true
			s.noteStatement(st)
			s.noteView(st)
			if err := s.noteTrigger(sctx, st); err != nil {
				return err
			}
			if err := s.holdForCheck(sctx, st); err != nil {
				return err
			}
			s.releasePendingPrepare()
			if p, ok := st.(*ast.Prepare); ok {
				n := preparedTextLen(sctx, p)
				delta := n - s.sqlPreparedBytes[p.Name]
				if err := s.eng.AdmitPreparedBytes(delta, &s.eng.SQLPreparedBytes); err != nil {
					return err
				}
				s.pendingPrepare, s.pendingDelta, s.pendingReserved = n, delta, true
			}
			if b, ok := st.(*ast.Begin); ok {
				s.beginAccess = b.TransactionCharacteristic
			}
			s.account = nil
			if isAccountStatement(st) {
				s.account = s.eng.newAccountNote(sctx, st, text)
			}
		}
		keepDeleteAll(st)
	}
	return nil
}

// renameInCurrentDB refuses a RENAME TABLE (or ALTER TABLE ... RENAME)
// naming a table outside the current database. GMS renames within the
// current database whatever the statement's qualifiers say: RENAME TABLE
// x.a TO x.b with y selected renamed y.a if it existed, and with no
// database selected it failed with "no database selected".
func renameInCurrentDB(ctx *sql.Context, st ast.Statement) error {
	var from, to ast.TableNames
	switch n := st.(type) {
	case *ast.DDL:
		if n.Action != ast.RenameStr {
			return nil
		}
		from, to = n.FromTables, n.ToTables
	case *ast.AlterTable:
		for _, d := range n.Statements {
			if d.Action == ast.RenameStr {
				from, to = append(from, d.FromTables...), append(to, d.ToTables...)
			}
		}
	default:
		return nil
	}
	cur := ctx.GetCurrentDatabase()
	for _, tn := range append(from, to...) {
		db := tn.DbQualifier.String()
		if db == "" {
			db = cur
		}
		if db == "" {
			return mysql.NewSQLError(mysql.ERNoDb, "3D000", "No database selected")
		}
		if !strings.EqualFold(db, cur) {
			return errNotSupported(fmt.Sprintf("RENAME TABLE of a table outside the current database (USE %s first)", quoteIdent(db)))
		}
	}
	return nil
}

// keepDeleteAll keeps GMS from turning a DELETE without WHERE into a
// TRUNCATE. That rewrite looks the table up in the current database, so
// with none selected it fails ("database not found") even for a qualified
// DELETE FROM db.t, and it leaves ROW_COUNT() at 0 as after DDL. A WHERE
// TRUE keeps the DELETE a DELETE, which is what Lockstep runs for it
// anyway: a row-by-row delete in the transaction (see Table.Truncate).
func keepDeleteAll(st ast.Statement) {
	if d, ok := st.(*ast.Delete); ok && d.Where == nil {
		d.Where = ast.NewWhere(ast.WhereStr, ast.BoolVal(true))
	}
}

// ParseSimple parses the expressions go-mysql-server stores as text
// (column defaults) with the REGEXP operators rewritten.
func (p parser) ParseSimple(query string) (ast.Statement, error) {
	st, err := p.Parser.ParseSimple(query)
	if err == nil {
		rewriteRegexpOperators(st, query)
		rewriteGroupConcat(st, query)
		rewriteDecimalCasts(st, query)
		rewriteTimeCasts(st, query)
		rewriteIntervalArithmetic(st, query)
		rewriteBitOperators(st, query)
		err = balanceSetOps(st, query)
	}
	return st, err
}

// rewriteText makes the text rewrites both of GMS's parse entry points
// need before the grammar sees a query (the statements it lacks or
// reads otherwise than MySQL); with an error, the query as far as it was
// rewritten.
func rewriteText(ctx context.Context, query string) (string, error) {
	query = rewriteBegin(ctx, rewriteAccountSyntax(ctx, query))
	query = noteAlterView(ctx, rewriteTriggerDefiner(rewriteLongByte(QuoteNonASCIIIdents(query))))
	query, _ = rewriteDo(query)
	query = rewriteProcedureDo(query) // routines.go
	quantified, err := rewriteQuantified(query)
	if err != nil {
		return query, err
	}
	return quantified, nil
}

func (p parser) Parse(ctx *sql.Context, query string, multi bool) (ast.Statement, string, string, error) {
	query, err := rewriteText(ctx, query)
	if err != nil {
		return nil, query, "", err
	}
	r, err := withForShare(query, func(q string) (parsed, error) {
		// GMS's Parse with the session's parsed sql_mode (sqlmode.go).
		st, pq, rem, err := p.Parser.ParseWithOptions(ctx, q, ';', multi, ParserOptions(ctx))
		return parsed{st: st, q: pq, rem: rem}, err
	})
	if err != nil {
		return nil, r.q, r.rem, syntaxError(err)
	}
	// GMS's handler runs a returned statement even when an error comes
	// with it: return none on error.
	if err := note(ctx, r.st, statementText(r.q, query), len(query)); err != nil {
		return nil, r.q, r.rem, err
	}
	return r.st, r.q, r.rem, nil
}

// statementText is the text of the statement a parse returned: q, the
// parser's, or all of query when it gives none.
func statementText(q, query string) string {
	if q != "" {
		return q
	}
	return query
}

func (p parser) ParseWithOptions(ctx context.Context, query string, delimiter rune, multi bool, o ast.ParserOptions) (ast.Statement, string, string, error) {
	query, err := rewriteText(ctx, query)
	if err != nil {
		return nil, query, "", err
	}
	r, err := withForShare(query, func(q string) (parsed, error) {
		st, pq, rem, err := p.Parser.ParseWithOptions(ctx, q, delimiter, multi, o)
		return parsed{st: st, q: pq, rem: rem}, err
	})
	if err != nil {
		return nil, r.q, r.rem, syntaxError(err)
	}
	if err := note(ctx, r.st, statementText(r.q, query), len(query)); err != nil {
		return nil, r.q, r.rem, err
	}
	return r.st, r.q, r.rem, nil
}

func (p parser) ParseOneWithOptions(ctx context.Context, query string, o ast.ParserOptions) (ast.Statement, int, error) {
	// COM_STMT_PREPARE's text was translated where it came in; SQL
	// PREPARE's statement is translated here (clienttext.go).
	translated := 0
	sctx, _ := ctx.(*sql.Context)
	nbe := sctx != nil && NoBackslashEscapes(sctx)
	if sctx != nil && nestedText(sctx, query) {
		t := translateLiterals(query, o.AnsiQuotes, nbe, nil)
		translated, query = len(t)-len(query), t
	}
	query = QuoteNonASCIIIdents(query)
	quantified, err := rewriteQuantified(query)
	if err != nil {
		return nil, 0, err
	}
	// The parser counts the bytes it took of the rewritten text: when it
	// took all of it, it took all of query.
	grown := len(quantified) - len(query) + translated
	query = quantified
	if IsDo(query) {
		// SQL PREPARE ... FROM of a DO: its EXECUTE cannot be told from
		// another's, so its SELECT's rows could not be replaced by OK.
		// (COM_STMT_PREPARE's DO arrives here as its SELECT: CheckPrepare.)
		return nil, 0, mysql.NewSQLError(erUnsupportedPS, "HY000", "This command is not supported in the prepared statement protocol yet")
	}
	r, err := withForShare(query, func(q string) (parsed, error) {
		st, n, err := p.Parser.ParseOneWithOptions(ctx, q, o)
		return parsed{st: st, consumed: n}, err
	})
	if grown != 0 && r.consumed >= len(query) {
		r.consumed -= grown
	}
	if err != nil {
		return nil, r.consumed, syntaxError(err)
	}
	if nbe {
		if err := readNoBackslashEscapes(r.st); err != nil {
			return nil, r.consumed, err
		}
	}
	if err := checkDepth(r.st, len(query)); err != nil {
		return nil, r.consumed, err
	}
	if err := checkTxnEnd(ctx, r.st, query); err != nil {
		return nil, r.consumed, err
	}
	rewriteRegexpOperators(r.st, query)
	rewriteGroupConcat(r.st, query)
	rewriteDecimalCasts(r.st, query)
	rewriteTimeCasts(r.st, query)
	rewriteIntervalArithmetic(r.st, query)
	rewriteBitOperators(r.st, query)
	joinComponentVariables(r.st)
	if err := balanceSetOps(r.st, query); err != nil {
		return nil, r.consumed, err
	}
	if err := unsupportedDDL(r.st); err != nil {
		return nil, r.consumed, err
	}
	if _, ok := addsCheck(r.st); ok {
		// Its table must be held from the statement's start
		// (holdForCheck), which a prepared execution does not pass by.
		return nil, r.consumed, mysql.NewSQLError(erUnsupportedPS, "HY000", "This command is not supported in the prepared statement protocol yet")
	}
	// COM_STMT_PREPARE parses here: the privilege checks of note apply
	// (and again at each execution, CheckExecute).
	if sctx, ok := ctx.(*sql.Context); ok {
		if err := realAsFloat(sctx, r.st); err != nil {
			return nil, r.consumed, err
		}
		if err := noteDeclared(sctx, r.st); err != nil {
			return nil, r.consumed, err
		}
		if s := sessionOf(sctx); s != nil && declaresBeyondTypes(s.declared) {
			// A prepared statement's executions are not parsed again, so
			// what it declares would be lost (coldecl.go).
			return nil, r.consumed, mysql.NewSQLError(erUnsupportedPS, "HY000", "This command is not supported in the prepared statement protocol yet")
		}
		if err := checkFile(sctx, r.st); err != nil {
			return nil, r.consumed, err
		}
		if err := checkLockingRead(sctx, r.st); err != nil {
			return nil, r.consumed, err
		}
		if err := checkAccountStatement(sctx, r.st, query); err != nil {
			return nil, r.consumed, err
		}
	}
	return r.st, r.consumed, nil
}

// unsupportedDDL refuses FULLTEXT indexes and index prefix
// lengths before anything is created: go-mysql-server creates the table first and only then finds
// that it cannot add them, so CREATE TABLE would fail and still leave the
// table, without them, in the store and the binlog.
func unsupportedDDL(st ast.Statement) error {
	for _, d := range ddlsOf(st) {
		if d == nil {
			continue
		}
		if d.IndexSpec != nil {
			if err := unsupportedIndexType(d.IndexSpec.Type); err != nil {
				return err
			}
		}
		if d.TableSpec == nil {
			continue
		}
		for _, c := range d.TableSpec.Columns {
			if c.Type.Zerofill {
				// ZEROFILL makes the column UNSIGNED, as in MySQL; its
				// display (leading zeros to the display width) is not
				// kept (README, "Known to differ").
				c.Type.Zerofill, c.Type.Unsigned = false, true
			}
			if err := unsupportedColumnType(c.Type); err != nil {
				return err
			}
		}
		for _, ix := range d.TableSpec.Indexes {
			for _, c := range ix.Columns {
				if c.Length != nil {
					return errNotSupported("index prefix lengths")
				}
			}
			if ix.Info != nil && ix.Info.Fulltext {
				return errNotSupported("FULLTEXT indexes")
			}
		}
		if d.Temporary {
			// Refused before go-mysql-server makes the table, which it
			// would leave behind when adding the key failed.
			for _, c := range d.TableSpec.Constraints {
				if _, fk := c.Details.(*ast.ForeignKeyDefinition); fk {
					return errNotSupported("foreign keys on temporary tables")
				}
			}
		}
	}
	return nil
}

// unsupportedColumnType refuses UNSIGNED on DECIMAL, FLOAT and DOUBLE:
// go-mysql-server accepted it and dropped it (the column took negative
// numbers). FLOAT(M,D) and DOUBLE(M,D) are read by noteDeclared
// (coldecl.go).
func unsupportedColumnType(t ast.ColumnType) error {
	name := strings.ToUpper(t.Type)
	if t.Unsigned {
		switch name {
		case "DECIMAL", "DEC", "NUMERIC", "FIXED", "FLOAT", "DOUBLE", "REAL", "DOUBLE PRECISION", "FLOAT4", "FLOAT8":
			return errNotSupported("UNSIGNED " + name + " columns (deprecated since MySQL 8.0.17; a CHECK (column >= 0) constraint keeps negative values out)")
		}
	}
	return nil
}

func unsupportedIndexType(t string) error {
	switch strings.ToLower(t) {
	case "fulltext":
		return errNotSupported("FULLTEXT indexes")
	}
	return nil
}

func syntaxError(err error) error {
	if err == nil || errors.Is(err, ast.ErrEmpty) {
		return err
	}
	var se *mysql.SQLError
	if errors.As(err, &se) {
		return err
	}
	return mysql.NewSQLError(mysql.ERParseError, "42000",
		"You have an error in your SQL syntax; %s", err.Error())
}

// computedVariables are the (lower-case) names of variables whose value is
// computed on demand by a global value function. Set before serving.
var computedVariables = map[string]bool{}

// RegisterComputedVariable marks a variable whose global value function
// sessions must read instead of their start-time copy. Call before serving.
func RegisterComputedVariable(name string) {
	computedVariables[strings.ToLower(name)] = true
	installRegistry()
}

// variableAliases pairs variables that are one setting under two names
// (rpl_semi_sync_source_enabled and rpl_semi_sync_master_enabled, say).
var variableAliases = map[string]string{}

// RegisterVariableAlias makes SET GLOBAL of either name set both. Call
// before serving.
func RegisterVariableAlias(a, b string) {
	a, b = strings.ToLower(a), strings.ToLower(b)
	variableAliases[a], variableAliases[b] = b, a
	installRegistry()
}

func installRegistry() {
	if _, ok := sql.SystemVariables.(computedRegistry); !ok {
		sql.SystemVariables = computedRegistry{sql.SystemVariables}
	}
}

// computedRegistry makes SHOW GLOBAL VARIABLES show computed variables'
// live values (go-mysql-server lists stored values there) and keeps
// aliased variables equal.
type computedRegistry struct{ sql.SystemVariableRegistry }

// SetGlobal requires SUPER or SYSTEM_VARIABLES_ADMIN of a client's
// session, as MySQL does (go-mysql-server checks nothing): any account
// could otherwise turn off read_only or durability. Settings made by the
// server itself have no client session.
func (r computedRegistry) SetGlobal(ctx *sql.Context, name string, val any) error {
	if ctx != nil {
		if s := sessionOf(ctx); s != nil {
			db := s.eng.GMS.Analyzer.Catalog.MySQLDb
			if !db.UserHasPrivileges(ctx, sql.NewDynamicPrivilegedOperation("system_variables_admin")) {
				return mysql.NewSQLError(erSpecificAccessDenied, "42000", "Access denied; you need (at least one of) the SUPER or SYSTEM_VARIABLES_ADMIN privilege(s) for this operation")
			}
		}
	}
	if hiddenVariable(name) {
		return sql.ErrUnknownSystemVariable.New(name)
	}
	val = expandSQLMode(name, val)
	if err := checkAlwaysOn(name, val); err != nil {
		return err
	}
	if err := checkPasswordVariable(name, val); err != nil {
		return err
	}
	warnNoEffect(ctx, name)
	if err := r.SystemVariableRegistry.SetGlobal(ctx, name, val); err != nil {
		return err
	}
	if other, ok := variableAliases[strings.ToLower(name)]; ok {
		if err := r.SystemVariableRegistry.SetGlobal(ctx, other, val); err != nil {
			return err
		}
	}
	if h, ok := variableHooks[strings.ToLower(name)]; ok {
		_, v, _ := r.SystemVariableRegistry.GetGlobal(name)
		for other, ov := range h(v) {
			if err := r.SystemVariableRegistry.SetGlobal(ctx, other, ov); err != nil {
				return err
			}
		}
	}
	return nil
}

// variableHooks: after SET GLOBAL name, the hook returns other variables
// to set (read_only=OFF turns super_read_only off, for instance).
var variableHooks = map[string]func(v any) map[string]any{}

// RegisterVariableHook makes SET GLOBAL name also set the variables hook
// returns for the new value. Set before serving.
func RegisterVariableHook(name string, hook func(v any) map[string]any) {
	variableHooks[strings.ToLower(name)] = hook
	installRegistry()
}

func (r computedRegistry) GetAllGlobalVariables() map[string]any {
	m := r.SystemVariableRegistry.GetAllGlobalVariables()
	overlayComputed(m)
	dropHidden(m)
	return m
}

// GetGlobal hides the variables of components not installed
// (passwordpolicy.go).
func (r computedRegistry) GetGlobal(name string) (sql.SystemVariable, any, bool) {
	if hiddenVariable(name) {
		return nil, nil, false
	}
	return r.SystemVariableRegistry.GetGlobal(name)
}

func overlayComputed(m map[string]any) {
	for name := range computedVariables {
		if _, v, ok := sql.SystemVariables.GetGlobal(name); ok {
			m[name] = v
		}
	}
	for name := range m {
		if sv, v, ok := sql.SystemVariables.GetGlobal(name); ok && globalOnly(sv) {
			m[name] = v
		}
	}
}

// globalOnlyScope caches, by name as asked, whether a variable has a
// global value only: a variable's scope never changes once registered,
// and session variables are read on every statement.
var globalOnlyScope sync.Map // string -> bool

func globalOnlyName(name string) bool {
	if v, ok := globalOnlyScope.Load(name); ok {
		return v.(bool)
	}
	sv, _, ok := sql.SystemVariables.GetGlobal(name)
	g := ok && globalOnly(sv)
	if ok {
		globalOnlyScope.Store(name, g)
	}
	return g
}

// globalOnly reports whether sv has a global value only.
func globalOnly(sv sql.SystemVariable) bool {
	m, ok := sv.(*sql.MysqlSystemVariable)
	return ok && m.Scope != nil && m.Scope.IsGlobalOnly()
}

// SetSessionVariable refuses to turn off the variables Lockstep always
// has on (alwaysOn).
func (s *Session) SetSessionVariable(ctx *sql.Context, name string, val any) error {
	val = expandSQLMode(name, val)
	if err := checkAlwaysOn(name, val); err != nil {
		return err
	}
	if sessionReadOnly[strings.ToLower(name)] {
		return mysql.NewSQLError(1621, "HY000", "SESSION variable '%s' is read-only. Use SET GLOBAL to assign the value", strings.ToLower(name))
	}
	switch strings.ToLower(name) {
	case "transaction_read_only", "tx_read_only":
		s.readOnlyKnown = false
	case "completion_type":
		s.completionKnown = false // txnend.go
	}
	warnNoEffect(ctx, name)
	if isTimestamp(name) {
		if err := s.BaseSession.SetSessionVariable(ctx, name, val); err != nil {
			return err
		}
		v, _ := s.BaseSession.GetSessionVariable(ctx, name)
		s.setTimestamp(v)
		return nil
	}
	return s.BaseSession.SetSessionVariable(ctx, name, val)
}

// noEffect are variables MySQL has that bound nothing here, and why.
// Setting them is accepted, as configurations and tools copied from MySQL
// set them, with a warning saying so (shown by SHOW WARNINGS), never
// silently.
var noEffect = map[string]string{
	"tmp_table_size":      "sorts, groupings and set operations are held in memory and never spilled to disk; stop a large one with KILL QUERY or max_execution_time",
	"max_heap_table_size": "there are no MEMORY tables, and sorts, groupings and set operations are held in memory and never spilled to disk",
}

// erWarnNoEffect is the warning a setting with no effect gets (MySQL's
// ER_NOT_SUPPORTED_YET, as a warning).
const erWarnNoEffect = 1235

func warnNoEffect(ctx *sql.Context, name string) {
	if ctx == nil {
		return
	}
	if why, ok := noEffect[strings.ToLower(name)]; ok {
		ctx.Warn(erWarnNoEffect, "%s has no effect in this version of Lockstep: %s", strings.ToLower(name), why)
	}
}

// alwaysOn are variables that Lockstep cannot turn off, and why; setting
// them to 0 is refused (1235) instead of being accepted and ignored:
//
//   - sql_log_bin: MySQL would leave the session's transactions out of
//     the binlog; here the binlog is the only log, so they would still be
//     written and replicated, and a replica would apply what was meant to
//     stay local;
//   - explicit_defaults_for_timestamp: go-mysql-server creates TIMESTAMP
//     columns as written, never with the implicit NOT NULL DEFAULT
//     CURRENT_TIMESTAMP of the old behaviour (and the binlog says so to
//     replicas).
var alwaysOn = map[string]string{
	"sql_log_bin":                     "every transaction is written to the binlog, which is the server's only log, and is sent to replicas",
	"explicit_defaults_for_timestamp": "TIMESTAMP columns are always created as declared",
}

// fixedValues are variables with one value Lockstep supports: another is
// refused (1235), saying why, instead of being shown and not acted on.
var fixedValues = map[string]struct{ value, why string }{
	"binlog_format":    {"ROW", binlogFixed},
	"binlog_row_image": {"FULL", binlogFixed},
	"rbr_exec_mode":    {"STRICT", "row events (the BINLOG statement's too) stop at a duplicate or missing row"},
}

// binlogFixed is why binlog_format and binlog_row_image are fixed.
const binlogFixed = "the binlog is always binlog_format = ROW, binlog_row_image = FULL"

// sessionReadOnly are variables whose session value MySQL does not let a
// session set (1621): it takes the global one at connect.
var sessionReadOnly = map[string]bool{"max_allowed_packet": true}

// setVariableText is the value of SET-typed system variable name as its
// members' names ("FILE,TABLE"), whether it is held as names or, as a
// SET statement leaves it, as the members' bits.
func setVariableText(name string, val any) string {
	bits, ok := val.(uint64)
	if !ok {
		return fmt.Sprint(val)
	}
	sv, _, found := sql.SystemVariables.GetGlobal(name)
	if !found {
		return fmt.Sprint(val)
	}
	t := sv.GetType()
	if u, ok := t.(interface{ UnderlyingType() sql.Type }); ok {
		t = u.UnderlyingType()
	}
	st, ok := t.(sql.SetType)
	if !ok {
		return fmt.Sprint(val)
	}
	text, err := st.BitsToString(bits)
	if err != nil {
		return fmt.Sprint(val)
	}
	return text
}

// LogOutputHas says whether log_output value val names member (FILE,
// TABLE or NONE). MySQL writes no log where NONE is named, whatever else
// is.
func LogOutputHas(val any, member string) bool {
	for _, m := range strings.Split(setVariableText("log_output", val), ",") {
		if strings.EqualFold(strings.TrimSpace(m), member) {
			return true
		}
	}
	return false
}

// combinedSQLModes are the sql_mode names that stand for several, which
// MySQL sets with them (and shows): go-mysql-server keeps the name alone,
// so that a check of one of its modes (ONLY_FULL_GROUP_BY under ANSI,
// say) did not see it.
var combinedSQLModes = map[string][]string{
	"ANSI":        {"REAL_AS_FLOAT", "PIPES_AS_CONCAT", "ANSI_QUOTES", "IGNORE_SPACE", "ONLY_FULL_GROUP_BY"},
	"TRADITIONAL": {"STRICT_TRANS_TABLES", "STRICT_ALL_TABLES", "NO_ZERO_IN_DATE", "NO_ZERO_DATE", "ERROR_FOR_DIVISION_BY_ZERO", "NO_ENGINE_SUBSTITUTION"},
}

// expandSQLMode is val, a value of variable name, with the modes a
// combined sql_mode stands for added, as MySQL sets them.
func expandSQLMode(name string, val any) any {
	if !strings.EqualFold(name, "sql_mode") {
		return val
	}
	text := strings.ToUpper(setVariableText(name, val))
	modes := strings.Split(text, ",")
	have := map[string]bool{}
	for i, m := range modes {
		modes[i] = strings.TrimSpace(m)
		have[modes[i]] = true
	}
	n := len(modes)
	for _, m := range modes[:n] {
		for _, part := range combinedSQLModes[m] {
			if !have[part] {
				have[part] = true
				modes = append(modes, part)
			}
		}
	}
	if len(modes) == n {
		return val
	}
	return strings.Join(modes, ",")
}

// unsupportedSQLModes are the sql_mode flags MySQL has that Lockstep does
// not apply, with what it does instead: accepted, each would be silently
// ignored.
var unsupportedSQLModes = map[string]string{
	"ALLOW_INVALID_DATES":      "dates are checked in full (a day past the month's end is refused)",
	"HIGH_NOT_PRECEDENCE":      "NOT binds as without the mode (NOT a BETWEEN b AND c is NOT (a BETWEEN b AND c))",
	"PAD_CHAR_TO_FULL_LENGTH":  "CHAR values are read without their trailing spaces",
	"TIME_TRUNCATE_FRACTIONAL": "fractional seconds beyond a column's precision are rounded",
}

func checkAlwaysOn(name string, val any) error {
	n := strings.ToLower(name)
	switch {
	case n == "general_log" && isOn(val):
		return mysql.NewSQLError(mysql.ERNotSupportedYet, "42000", "This version of Lockstep doesn't yet support 'general_log = ON': there is no general query log (the slow query log is written: slow_query_log, long_query_time)")
	case n == "log_output" && LogOutputHas(val, "TABLE") && !LogOutputHas(val, "NONE"):
		return mysql.NewSQLError(mysql.ERNotSupportedYet, "42000", "This version of Lockstep doesn't yet support 'log_output = %s': the slow query log is written to a file (FILE) or not at all (NONE)", setVariableText("log_output", val))
	case n == "sql_mode":
		for _, m := range strings.Split(strings.ToUpper(setVariableText(n, val)), ",") {
			if why, ok := unsupportedSQLModes[strings.TrimSpace(m)]; ok {
				return mysql.NewSQLError(mysql.ERNotSupportedYet, "42000", "This version of Lockstep doesn't yet support 'sql_mode %s': %s", strings.TrimSpace(m), why)
			}
		}
	}
	if fixed, ok := fixedValues[n]; ok {
		if got, ok := enumText(n, val); ok && strings.ToUpper(got) != fixed.value {
			return mysql.NewSQLError(mysql.ERNotSupportedYet, "42000", "This version of Lockstep doesn't yet support '%s = %s': %s", n, strings.ToUpper(got), fixed.why)
		}
		return nil
	}
	why, ok := alwaysOn[n]
	if !ok || isOn(val) {
		return nil
	}
	return mysql.NewSQLError(mysql.ERNotSupportedYet, "42000", "This version of Lockstep doesn't yet support '%s = 0': %s", strings.ToLower(name), why)
}

// enumText is the member an ENUM-typed system variable's value names: a
// number is the member at that place in the variable's list (MySQL's
// order, registerVariables). ok is false for a value the type refuses
// (left to the type's own error, 1231).
func enumText(name string, val any) (text string, ok bool) {
	if sv, _, found := sql.SystemVariables.GetGlobal(name); found {
		v, _, err := sv.GetType().Convert(context.Background(), val)
		if err != nil {
			return "", false
		}
		return fmt.Sprint(v), true
	}
	return fmt.Sprint(val), true
}

// GetAllSessionVariables shows computed variables' live values (SHOW
// VARIABLES).
func (s *Session) GetAllSessionVariables() map[string]any {
	m := s.BaseSession.GetAllSessionVariables()
	overlayComputed(m)
	dropHidden(m)
	if s.version != "" {
		m["version"] = s.version
	}
	return m
}

// GetSessionVariable reads computed variables (such as gtid_executed) from
// their global value function; the base session holds a copy taken when the
// session started.
func (s *Session) GetSessionVariable(ctx *sql.Context, name string) (any, error) {
	if s.version != "" && strings.EqualFold(name, "version") {
		return s.version, nil
	}
	if isTimestamp(name) {
		return s.timestampValue(), nil
	}
	if computedVariables[name] || computedVariables[strings.ToLower(name)] {
		if _, val, ok := sql.SystemVariables.GetGlobal(name); ok {
			return val, nil
		}
	}
	// A variable with only a global value reads as it is now: the base
	// session keeps a copy taken when the session started, so SET GLOBAL
	// max_connections = 77 and then @@max_connections in the same
	// session read the old value, where MySQL reads 77.
	if globalOnlyName(name) {
		if _, val, ok := sql.SystemVariables.GetGlobal(name); ok {
			return val, nil
		}
	}
	return s.BaseSession.GetSessionVariable(ctx, name)
}
