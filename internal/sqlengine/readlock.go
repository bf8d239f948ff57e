package sqlengine

import (
	"context"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// Consistent snapshots for backups and change-data capture, as InnoDB
// gives them:
//
//   - FLUSH TABLES WITH READ LOCK takes the commit pipeline's global read
//     lock (commit/readlock.go): it waits for the commits in flight and
//     holds every later one back until the session runs UNLOCK TABLES or
//     ends. It needs RELOAD and LOCK TABLES. FLUSH TABLES t, ... WITH READ
//     LOCK takes the same global lock (stricter than MySQL's per-table
//     lock, never weaker). The holder's own commits get 1223.
//   - START TRANSACTION WITH CONSISTENT SNAPSHOT takes the transaction's
//     read view at once, not at its first read, so that a binlog position
//     read under the global read lock right after it is exactly the
//     snapshot's (mysqldump --single-transaction --master-data, Debezium).
//     The parser drops WITH CONSISTENT SNAPSHOT and refuses it beside READ
//     ONLY or READ WRITE: the characteristics are read here, before
//     parsing, and the statement passed on without it.

// rewriteBegin notes WITH CONSISTENT SNAPSHOT in START TRANSACTION's
// characteristics for the session and returns the statement without it.
func rewriteBegin(ctx context.Context, query string) string {
	if len(query) > 4096 || !containsFold(query, "consistent") {
		return query
	}
	toks := lexTokens(query)
	if len(toks) < 2 || !toks[0].is("start") || !toks[1].is("transaction") {
		return query
	}
	var keep []string
	consistent := false
	i := 2
	for i < len(toks) {
		switch {
		case i+2 < len(toks) && toks[i].is("with") && toks[i+1].is("consistent") && toks[i+2].is("snapshot"):
			consistent, i = true, i+3
		case i+1 < len(toks) && toks[i].is("read") && (toks[i+1].is("only") || toks[i+1].is("write")):
			keep, i = append(keep, "READ "+strings.ToUpper(toks[i+1].word)), i+2
		default:
			return query // not a characteristic: the parser reports it
		}
		if i < len(toks) && toks[i].text(query) == "," {
			i++
			continue
		}
		break
	}
	if !consistent || len(keep) > 1 {
		return query
	}
	tail := ""
	if i < len(toks) {
		if toks[i].text(query) != ";" {
			return query
		}
		tail = query[toks[i].start:]
	}
	if c, ok := ctx.(*sql.Context); ok {
		if s := sessionOf(c); s != nil {
			s.consistentSnapshot = true
		}
	}
	return strings.TrimSpace("START TRANSACTION "+strings.Join(keep, " ")) + tail
}

// MaybeReadLockStatement is a cheap test of query's first word: false
// means ReadLockStatement would not handle it.
func MaybeReadLockStatement(query string) bool {
	q := strings.TrimLeft(query, " \t\r\n")
	return hasPrefixFold(q, "flush") || hasPrefixFold(q, "unlock") || hasPrefixFold(q, "lock")
}

// ReadLockStatement runs query if it is FLUSH TABLES ... WITH READ LOCK,
// LOCK TABLES (locktables.go) or UNLOCK TABLES. UNLOCK TABLES releases the
// global read lock and the session's table locks and is then left to
// go-mysql-server too: handled is false for it.
func (e *Engine) ReadLockStatement(ctx *sql.Context, query string) (handled bool, err error) {
	if len(query) > 1<<16 || !containsFold(query, "lock") {
		return false, nil
	}
	toks := lexTokens(query)
	for len(toks) > 0 && toks[len(toks)-1].text(query) == ";" {
		toks = toks[:len(toks)-1]
	}
	n := len(toks)
	switch {
	case n == 2 && toks[0].is("unlock") && (toks[1].is("tables") || toks[1].is("table")):
		e.ReleaseReadLock(ctx.Session.ID())
		if s := sessionOf(ctx); s != nil {
			s.releaseTableLocks()
		}
		return false, nil
	case n >= 3 && toks[0].is("lock") && (toks[1].is("tables") || toks[1].is("table")):
		st, _, err := ParseOne(ctx, query, ParserOptions(ctx))
		if err != nil {
			return false, nil // go-mysql-server reports the syntax error
		}
		lt, ok := st.(*ast.LockTables)
		if !ok {
			return false, nil
		}
		return true, e.lockTables(ctx, lt)
	case n >= 5 && toks[0].is("flush") && (toks[1].is("tables") || toks[1].is("table")) &&
		toks[n-3].is("with") && toks[n-2].is("read") && toks[n-1].is("lock"):
	default:
		return false, nil
	}
	db := e.GMS.Analyzer.Catalog.MySQLDb
	if db.Enabled() && !db.UserActivePrivilegeSet(ctx).Has(sql.PrivilegeType_Reload, sql.PrivilegeType_LockTables) {
		return true, mysql.NewSQLError(erSpecificAccessDenied, "42000", "Access denied; you need (at least one of) the RELOAD, LOCK TABLES privilege(s) for this operation")
	}
	s := sessionOf(ctx)
	if s == nil {
		return true, nil
	}
	if e.pipe == nil {
		// A cluster member's store also changes by what other nodes
		// commit, which a read lock here would not hold back.
		return true, errNotSupported("FLUSH TABLES WITH READ LOCK on a cluster node")
	}
	return true, mysqlError(e.pipe.LockCommits(ctx, uint64(s.ID()), s.readLockWait(ctx)))
}

// ReleaseReadLock releases connection connID's global read lock and
// backup lock, if it holds them (the connection ended).
func (e *Engine) ReleaseReadLock(connID uint32) {
	if e.pipe != nil {
		e.pipe.UnlockCommits(uint64(connID))
		e.pipe.UnlockBackup(uint64(connID))
	}
}

// LockInstanceForBackup takes the backup lock for the session (LOCK
// INSTANCE FOR BACKUP; its privilege is checked by the caller): other
// sessions' DDL and account changes wait until UNLOCK INSTANCE or the
// session's end, row changes go on. It waits for DDL in flight, at most
// lock_wait_timeout (1205).
func (e *Engine) LockInstanceForBackup(ctx *sql.Context) error {
	s := sessionOf(ctx)
	if s == nil {
		return nil
	}
	if e.pipe == nil {
		return errNotSupported("LOCK INSTANCE FOR BACKUP on a cluster node")
	}
	return mysqlError(e.pipe.LockBackup(ctx, uint64(s.ID()), s.readLockWait(ctx)))
}

// UnlockInstance releases the session's backup lock, if it holds it.
func (e *Engine) UnlockInstance(ctx *sql.Context) {
	if e.pipe != nil {
		e.pipe.UnlockBackup(uint64(ctx.Session.ID()))
	}
}
