package server

import (
	"context"
	"strings"

	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// A cluster member cut off from the majority (no raft leader it follows,
// Galera's non-Primary component) cannot commit, and what it would read
// may already be overwritten on the majority side; so may what a member
// reads that has just joined the majority and not caught up yet (Galera's
// JOINED). As Galera does, such a member refuses every statement that
// reads or writes tables with 1047
// (08S01, "WSREP has not yet prepared node for application use") and
// still answers what monitoring and clients' session set-up need: SHOW,
// SET, USE, transaction control, KILL, and SELECTs that read no tables or
// only information_schema and performance_schema. wsrep_dirty_reads=ON
// lets SELECTs through, knowingly stale, as in MariaDB. A statement the
// parser cannot read is refused too: what it would touch is unknown.
//
// The member follows the majority again by itself when the partition
// heals; statements are judged as they arrive, so none waits.
//
// A member that desynced itself (its apply queue stayed over flow
// control's limit: cluster/flowcontrol.go) is in the primary component
// but behind it. With --lockstep-desynced-reads=REFUSE it refuses the
// same statements, until it has caught up; with WAIT (the default) it
// runs them after a causal wait (causalWait), as wsrep_sync_wait=15
// would.

// errNotPrimary is Galera's answer on a node outside the primary component.
func errNotPrimary() error {
	return mysql.NewSQLError(mysql.ERUnknownComError, "08S01", "WSREP has not yet prepared node for application use")
}

// refuseDetached returns errNotPrimary for a statement a member outside
// the primary component does not run, and nil for any other (and on a
// single server, or a member in the primary component).
func (s *Server) refuseDetached(c *mysql.Conn, query string) error {
	if s.member == nil || s.member.ready() && !(s.member.Desynced() && s.cfg.Cluster.DesyncedReads == "REFUSE") {
		return nil
	}
	dirty := false
	if v, ok := s.sql.SessionVariable(c.ConnectionID, "wsrep_dirty_reads"); ok {
		dirty = sqlengine.IntValue(v) != 0
	}
	if runsDetached(bareStatement(query), s.currentDB(c), dirty) {
		return nil
	}
	return errNotPrimary()
}

// answersDetached reports whether c's statement query is one a member
// outside the primary component still runs (runsDetached, in c's current
// database, without wsrep_dirty_reads).
func (s *Server) answersDetached(c *mysql.Conn, query string) bool {
	return runsDetached(bareStatement(query), s.currentDB(c), false)
}

// currentDB is c's session's current database ("" for none).
func (s *Server) currentDB(c *mysql.Conn) string {
	if ctx, ok := s.sql.SessionContext(c.ConnectionID); ok {
		return ctx.GetCurrentDatabase()
	}
	return ""
}

// runsDetached reports whether query runs on a member outside the primary
// component; db is the session's current database.
func runsDetached(query, db string, dirtyReads bool) bool {
	stmt, _, err := ast.ParseOne(context.Background(), query)
	if err != nil {
		return false
	}
	switch stmt := stmt.(type) {
	case *ast.Show, *ast.Set, *ast.Use, *ast.Begin, *ast.Commit, *ast.Rollback,
		*ast.Savepoint, *ast.RollbackSavepoint, *ast.ReleaseSavepoint, *ast.Kill:
		return true
	case *ast.Select, *ast.SetOp, *ast.ParenSelect:
		return dirtyReads || readsOnlySystemTables(stmt, db)
	}
	return false
}

// readsOnlySystemTables reports whether every table stmt names is in
// information_schema or performance_schema (none at all included).
func readsOnlySystemTables(stmt ast.SQLNode, db string) bool {
	only := true
	_ = ast.Walk(func(n ast.SQLNode) (bool, error) {
		a, ok := n.(*ast.AliasedTableExpr)
		if !ok {
			return true, nil
		}
		t, ok := a.Expr.(ast.TableName)
		if !ok {
			return true, nil
		}
		schema := t.DbQualifier.String()
		if schema == "" {
			schema = db
			if strings.EqualFold(t.Name.String(), "dual") {
				return true, nil
			}
		}
		if !strings.EqualFold(schema, "information_schema") && !strings.EqualFold(schema, "performance_schema") {
			only = false
		}
		return only, nil
	}, stmt)
	return only
}
