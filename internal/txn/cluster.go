package txn

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"time"

	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/certify"
	"github.com/lockstepdb/lockstep/internal/lock"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// Commits of a cluster member.
//
// A member's transactions run against its own store, as on a single
// server, and commit through the cluster instead of the commit pipeline:
// the transaction's events, finalized under a placeholder GTID, go to
// certification with the transaction's snapshot and keys, and Commit
// returns once this node has applied the certified entry (so the
// transaction's locks are held until its effects are visible here).
// Every node, the origin included, applies from the events; the
// transaction's own write buffer is dropped.
//
// The snapshot is the cluster's GTID number of the last transaction the
// store showed when the transaction first read (consistent or locking
// read alike): certification refuses the transaction if a transaction
// after that number changed one of its keys, so no write is based on a
// read that missed a committed change (first committer wins, which rules
// out the lost update). The number is read before the read itself, so it
// can only be older than what the read saw: that costs a needless
// conflict at worst, never a missed one.
//
// Keys: every row key and unique index entry the transaction changed or
// locked exclusively (exclusive), a shared key per table it wrote, and a
// shared key per row it referenced (a foreign key's parent, Reference). A
// row locked and not changed (SELECT ... FOR UPDATE, an UPDATE that
// matched a row and wrote the value it had) counts as written: the
// transaction acted on the value it read, so a change of that row since
// its snapshot must fail it as a write would. A transaction that only
// locked rows commits an empty transaction (its GTID, BEGIN and COMMIT)
// so that it is certified. A DDL statement takes
// the exclusive key of each table it changes and of the catalog, so it
// conflicts with every concurrent write of its tables and with every
// other concurrent DDL statement (table ids are given out by the node
// that runs the DDL, from the catalog it sees).

// Cluster is a cluster node's commit path (package cluster's Driver and
// Applier).
type Cluster interface {
	// Snapshot is the GTID number of the last cluster transaction the
	// store shows.
	Snapshot() uint64
	// Commit certifies and commits a transaction; it returns once this
	// node has applied it, or an error saying why it did not commit.
	Commit(ctx context.Context, snapshot uint64, keys []certify.Key, events []byte) (uint64, error)
}

// MaxClusterTrx is the largest transaction a cluster member commits, in
// bytes of binlog events (Galera's wsrep_max_ws_size): one raft entry
// holds a transaction, raft keeps at most 64 MiB of entries not yet
// committed, and a larger one would be dropped by the leader rather than
// refused. A larger transaction fails at COMMIT with ErrTrxTooLarge.
const MaxClusterTrx = 32 << 20

// ErrTrxTooLarge: the transaction is larger than MaxClusterTrx.
var ErrTrxTooLarge = errors.New("the transaction is larger than a cluster member commits")

// ErrNotInCluster is what a cluster member answers to commits that only a
// single server can make (under gtid_next, or a replication source's).
var ErrNotInCluster = errors.New("not available on a cluster node")

// noteRead records the transaction's cluster snapshot before its first read.
func (t *Txn) noteRead() {
	if t.m.Cluster != nil && !t.seen {
		t.seen = true
		t.snapshot = t.m.Cluster.Snapshot()
	}
}

// noteTable records a table the transaction writes (cluster only).
func (t *Txn) noteTable(tab *storage.Table) {
	if t.m.Cluster == nil {
		return
	}
	id := tab.Def.ID
	for _, x := range t.tables {
		if x == id {
			return
		}
	}
	t.tables = append(t.tables, id)
}

// tableKey and catalogKey are the certification keys of a table's schema
// and of the catalog as a whole.
func tableKey(id uint64) uint64 {
	return storage.KeyHash(binary.BigEndian.AppendUint64([]byte("\x00table"), id))
}

var catalogKey = storage.KeyHash([]byte("\x00catalog"))

// commitCluster is Commit on a cluster member.
func (t *Txn) commitCluster() error {
	keys := make([]certify.Key, 0, len(t.ws)+len(t.tables))
	seen := make(map[uint64]bool, len(t.ws))
	for _, h := range t.ws {
		if !seen[h] {
			seen[h] = true
			keys = append(keys, certify.Key{Hash: h})
		}
	}
	t.owner.EachHeld(lock.Exclusive, func(k string) {
		if strings.HasPrefix(k, "mdl:") {
			return // a table's metadata lock, not a row
		}
		if h := storage.KeyHash([]byte(k)); !seen[h] {
			seen[h] = true
			keys = append(keys, certify.Key{Hash: h})
		}
	})
	if t.events.Empty() {
		if len(keys) == 0 {
			return nil // read only: nothing to certify
		}
		t.events.AddQuery(t.DB, "BEGIN", t.QueryOptions)
		t.events.AddQuery(t.DB, "COMMIT", t.QueryOptions)
	}
	for _, id := range t.tables {
		keys = append(keys, certify.Key{Hash: tableKey(id), Shared: true})
	}
	for _, h := range t.refs {
		if !seen[h] {
			seen[h] = true
			keys = append(keys, certify.Key{Hash: h, Shared: true})
		}
	}
	ctx := t.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	limit := t.m.MaxTrx
	if limit == 0 {
		limit = MaxClusterTrx
	}
	if t.events.Len() > limit {
		return ErrTrxTooLarge
	}
	_, err := t.m.Cluster.Commit(ctx, t.snapshot, keys, t.m.finalize(&t.events))
	return err
}

// finalize encodes a transaction's events for the cluster, under a
// placeholder GTID the certifier replaces.
func (m *Manager) finalize(ev *binlog.TrxEvents) []byte {
	now := time.Now()
	g := binlog.GTIDInfo{OriginalCommitUS: uint64(now.UnixMicro()), ImmediateCommitUS: uint64(now.UnixMicro())}
	return ev.Finalize(make([]byte, 0, ev.FinalSize(false)), 4, uint32(now.Unix()), m.ServerID, g)
}

// commitDDLCluster is CommitDDL on a cluster member: the change is
// certified against every write of its tables and every DDL statement
// after the snapshot taken now (the caller holds the tables' metadata
// locks), and every node, this one included, rebuilds what it needs
// when it applies it.
func (m *Manager) commitDDLCluster(ctx context.Context, change *storage.CatalogChange, db, stmt string, opts binlog.QueryOptions) error {
	// One DDL statement of this node at a time: each then sees the one
	// before it (applied here before its Commit returned), and only DDL
	// run at once on different nodes can conflict.
	m.ddlMu.Lock()
	defer m.ddlMu.Unlock()
	snapshot := m.Cluster.Snapshot()
	var ev binlog.TrxEvents
	ev.AddCatalog(change.Encode())
	opts.SuppressUse = change.Op == "create_db" || change.Op == "drop_db"
	ev.AddQuery(db, stmt, opts)
	keys := []certify.Key{{Hash: catalogKey}}
	for _, id := range m.ddlTables(change) {
		keys = append(keys, certify.Key{Hash: tableKey(id)})
	}
	if ctx == nil {
		ctx = context.Background()
	}
	_, err := m.Cluster.Commit(ctx, snapshot, keys, m.finalize(&ev))
	return err
}

// ddlTables are the ids of the tables a catalog change alters (for
// DROP DATABASE, every table of the database as this node sees it, which
// is the catalog of the change's snapshot).
func (m *Manager) ddlTables(c *storage.CatalogChange) []uint64 {
	var ids []uint64
	if c.Op == "drop_db" && c.DB != nil {
		for _, t := range m.Engine.Tables(c.DB.Name) {
			ids = append(ids, t.Def.ID)
		}
	}
	if c.TableID != 0 {
		ids = append(ids, c.TableID)
	}
	if c.Table != nil && c.Table.ID != 0 && c.Table.ID != c.TableID {
		ids = append(ids, c.Table.ID)
	}
	if c.Trigger != nil && c.Trigger.TableID != 0 {
		// A write certified after the trigger must have fired it.
		ids = append(ids, c.Trigger.TableID)
	}
	return ids
}
