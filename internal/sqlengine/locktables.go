package sqlengine

// LOCK TABLES and UNLOCK TABLES. go-mysql-server skips, with a warning,
// every table that does not lock itself, and reports a lock it could not
// take as a note while the statement succeeds; Lockstep's tables do not
// lock themselves, so LOCK TABLES ... WRITE locked nothing. Lockstep runs
// the statement itself:
//
//   - Each table named is locked with its exclusive metadata lock, held by
//     the session (not by a transaction) until UNLOCK TABLES, the next
//     LOCK TABLES, or the end of the connection. Every other session's
//     reads and writes of the table take the shared metadata lock, so
//     they wait. That is MySQL's WRITE lock, and stronger than its READ
//     lock (other sessions' reads wait too): never weaker than asked.
//   - The tables are locked in a fixed order (by table id), so two
//     LOCK TABLES statements cannot deadlock each other; a wait is bounded
//     by lock_wait_timeout (1205). If any lock cannot be taken, none is
//     held and the statement fails.
//   - As in MySQL, LOCK TABLES first commits the session's transaction and
//     releases the locks it held, and the session's own statements on the
//     tables it locked (DDL included) do not wait for its lock.
//   - An ALTER TABLE that rewrites a locked table gives it a new table id;
//     the lock follows it (taken before the new id is published).
//   - Not yet: MySQL's 1100 for tables a locked session did not lock.

import (
	"slices"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/lockstepdb/lockstep/internal/lock"
)

// sessionTableLocks are the tables a session locked with LOCK TABLES.
type sessionTableLocks struct {
	owner *lock.Owner
	ids   map[uint64]bool
}

// holdsTableLock reports whether the session locked table id (or holds it
// for the statement's DDL, checks.go).
func (s *Session) holdsTableLock(id uint64) bool { return s.tableLocks.ids[id] || s.ddlHold.ids[id] }

// lockTableID adds table id to the session's LOCK TABLES locks (a table
// that DDL under the lock gives a new id).
func (s *Session) lockTableID(ctx *sql.Context, id uint64) error {
	if s.tableLocks.owner == nil || s.tableLocks.ids[id] {
		return nil
	}
	if err := s.eng.locks.Lock(ctx, s.tableLocks.owner, mdlKey(id), lock.Exclusive, time.Second); err != nil {
		return mysqlError(err)
	}
	s.tableLocks.ids[id] = true
	return nil
}

// releaseTableLocks releases the session's LOCK TABLES locks.
func (s *Session) releaseTableLocks() {
	if s.tableLocks.owner != nil {
		s.eng.locks.ReleaseAll(s.tableLocks.owner)
	}
	s.tableLocks = sessionTableLocks{}
}

// lockTables runs LOCK TABLES st.
func (e *Engine) lockTables(ctx *sql.Context, st *ast.LockTables) error {
	s := sessionOf(ctx)
	if s == nil {
		return errNotSupported("LOCK TABLES outside a Lockstep session")
	}
	var ids []uint64
	for _, tl := range st.Tables {
		ate, ok := tl.Table.(*ast.AliasedTableExpr)
		if !ok {
			return errNotSupported("this LOCK TABLES form")
		}
		tn, ok := ate.Expr.(ast.TableName)
		if !ok {
			return errNotSupported("this LOCK TABLES form")
		}
		db := tn.DbQualifier.String()
		if db == "" {
			db = ctx.GetCurrentDatabase()
		}
		if db == "" {
			return sql.ErrNoDatabaseSelected.New()
		}
		if err := e.checkLockTablesPrivilege(ctx, db); err != nil {
			return err
		}
		if _, temp := s.tempTable(db, tn.Name.String()); temp {
			continue // the session's own: nobody else can use it (as in MySQL)
		}
		t, ok := e.store.Table(strings.ToLower(db), strings.ToLower(tn.Name.String()))
		if !ok {
			t, ok = e.store.Table(db, tn.Name.String())
		}
		if !ok {
			// A view: its tables are locked, as in MySQL.
			base, isView, err := e.viewTables(ctx, db, tn.Name.String(), 0)
			if err != nil {
				return err
			}
			if !isView {
				return sql.ErrTableNotFound.New(tn.Name.String())
			}
			ids = append(ids, base...)
			continue
		}
		ids = append(ids, t.Def.ID)
	}
	// MySQL commits the open transaction and drops earlier table locks.
	if s.tx != nil && !s.tx.Ended() {
		if err := s.tx.Commit(); err != nil {
			return mysqlError(err)
		}
		s.tx = nil
	}
	s.releaseTableLocks()
	slices.Sort(ids)
	ids = slices.Compact(ids)
	owner := e.locks.NewOwner()
	wait := s.readLockWait(ctx)
	if wait <= 0 {
		wait = 365 * 24 * time.Hour
	}
	held := map[uint64]bool{}
	for _, id := range ids {
		if err := e.locks.Lock(ctx, owner, mdlKey(id), lock.Exclusive, wait); err != nil {
			e.locks.ReleaseAll(owner)
			return mysqlError(err)
		}
		held[id] = true
	}
	s.tableLocks = sessionTableLocks{owner: owner, ids: held}
	return nil
}

// checkLockTablesPrivilege requires LOCK TABLES on db (and SELECT, as
// MySQL does).
func (e *Engine) checkLockTablesPrivilege(ctx *sql.Context, db string) error {
	mdb := e.GMS.Analyzer.Catalog.MySQLDb
	if !mdb.Enabled() {
		return nil
	}
	set := mdb.UserActivePrivilegeSet(ctx)
	if s := sessionOf(ctx); s != nil {
		set = s.privileges(ctx)
	}
	if set.Has(sql.PrivilegeType_LockTables, sql.PrivilegeType_Select) {
		return nil
	}
	d := set.Database(db)
	if d.Has(sql.PrivilegeType_LockTables, sql.PrivilegeType_Select) {
		return nil
	}
	return dbAccessDenied(ctx, db)
}
