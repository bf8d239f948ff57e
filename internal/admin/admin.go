// Package admin answers the replication and binlog administration
// statements Lockstep handles before go-mysql-server: SET gtid_next and
// the transaction after it; CHANGE REPLICATION SOURCE, START / STOP /
// RESET REPLICA and SHOW REPLICA STATUS; PURGE BINARY LOGS, FLUSH (the
// binlog rotates), SHOW MASTER LOGS and SHOW REPLICAS; the binary log
// statements go-mysql-server asks its primary controller for (SHOW
// BINARY LOGS, SHOW BINARY LOG STATUS); and the system and status
// variables of replication and semi-sync. It also expires binlog files.
//
// It works on the components it is given (Components), not on the
// server: the binlog, the store, the commit pipeline, the replication
// source and replica, and the SQL engine for sessions and privileges.
// Every statement checks the privilege MySQL requires (sqlengine.Need)
// before it does anything.
package admin

import (
	"log/slog"

	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/commit"
	"github.com/lockstepdb/lockstep/internal/replica"
	"github.com/lockstepdb/lockstep/internal/source"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// Member is what administration needs of a cluster member.
type Member interface {
	// Compact removes the binlog files before number keep that the
	// cluster's log no longer needs, returning their names.
	Compact(keep int) ([]string, error)
	// ResetFlowStats starts the flow control counters again (FLUSH
	// STATUS).
	ResetFlowStats()
}

// Components are what the statements work on.
type Components struct {
	SQL    *sqlengine.Engine
	Binlog *binlog.Log
	Store  *storage.Engine
	// Pipe is the commit pipeline; nil on a cluster member, whose log
	// raft orders and rotates.
	Pipe *commit.Pipeline
	// Member is set on a cluster member.
	Member  Member
	Source  *source.Source
	Replica *replica.Replica
	Log     *slog.Logger
	// GTIDVisible is @@gtid_executed: the GTIDs whose effects clients can
	// see.
	GTIDVisible func() binlog.GTIDSet
	// ReopenSlowLog closes the slow query log, to be opened again at its
	// next entry (FLUSH LOGS, FLUSH SLOW LOGS).
	ReopenSlowLog func()
	// FlushStatus resets the status variables FLUSH STATUS resets
	// outside replication (the session's, Max_used_connections).
	FlushStatus func(connID uint32)

	// Settings the variables start from.
	ServerID      uint32
	GTIDDomainID  int64
	ReadOnly      bool
	SuperReadOnly bool
}

// Admin answers the statements.
type Admin struct{ Components }

// New returns the administration of c.
func New(c Components) *Admin { return &Admin{c} }
