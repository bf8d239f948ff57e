package txn

import (
	"fmt"

	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/commit"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// Commits that are not row transactions: DDL and statements or GTIDs with
// nothing to store. They go through the Manager like every other write, so
// the path to the pipeline is one: sqlengine and the server ask txn, and
// only txn calls commit.

// CommitDDL commits catalog change c as its own binlog transaction (its
// catalog event and the statement stmt on database db) with no other
// commit in flight. A rebuild the change needs (an index, a rewritten
// table) is written first, with every earlier commit visible, so only its
// publication holds other commits back; if the commit fails the rebuilt
// data is dropped. keep, when not nil, is the GTID to commit under (a
// statement from a replication source, or under gtid_next).
//
// The caller holds the metadata locks of the tables c changes and has
// ended the session's open transaction.
func (m *Manager) CommitDDL(c commit.Caller, change *storage.CatalogChange, db, stmt string, opts binlog.QueryOptions, keep *binlog.GTIDInfo) error {
	if m.Cluster != nil {
		if keep != nil {
			return fmt.Errorf("a statement under gtid_next or from a replication source: %w", ErrNotInCluster)
		}
		return m.commitDDLCluster(c.Ctx, change, db, stmt, opts)
	}
	m.Pipeline.Barrier()
	if err := m.Engine.Stage(change); err != nil {
		return err
	}
	err := m.Pipeline.CommitExclusive(c, func() (*commit.Trx, error) {
		t, err := commit.CatalogTrx(m.Engine, change, db, stmt, opts)
		if err == nil && keep != nil {
			t.KeepGTID, t.GTID = true, *keep
		}
		return t, err
	})
	if err != nil {
		if uerr := m.Engine.Unstage(change); uerr != nil {
			err = fmt.Errorf("%w (and clearing the staged rebuild failed: %v)", err, uerr)
		}
	}
	return err
}

// CommitStatement commits a statement that changed nothing Lockstep stores
// (DROP TABLE IF EXISTS of a missing table, from a source) under the
// source's GTID g, alone and with no other commit in flight, as MySQL
// records it.
func (m *Manager) CommitStatement(c commit.Caller, db, query string, g binlog.GTIDInfo) error {
	if m.Cluster != nil {
		return fmt.Errorf("a statement from a replication source: %w", ErrNotInCluster)
	}
	return m.Pipeline.CommitExclusive(c, func() (*commit.Trx, error) {
		var ev binlog.TrxEvents
		ev.AddQuery(db, query, binlog.QueryOptions{})
		return &commit.Trx{Events: &ev, Batch: m.Engine.NewBatch(), KeepGTID: true, GTID: g}, nil
	})
}

// CommitGTIDOnly commits an empty transaction (BEGIN; COMMIT) under g, the
// way a GTID is skipped under gtid_next. A g already executed gives
// commit.ErrGTIDExecuted.
func (m *Manager) CommitGTIDOnly(g binlog.GTIDInfo) error {
	if m.Cluster != nil {
		return fmt.Errorf("a transaction under gtid_next: %w", ErrNotInCluster)
	}
	var ev binlog.TrxEvents
	ev.AddQuery("", "BEGIN", binlog.QueryOptions{})
	ev.AddQuery("", "COMMIT", binlog.QueryOptions{})
	return m.Pipeline.Commit(&commit.Trx{Events: &ev, Batch: m.Engine.NewBatch(), KeepGTID: true, GTID: g})
}
