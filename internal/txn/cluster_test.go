package txn

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/certify"
	"github.com/lockstepdb/lockstep/internal/commit"
	"github.com/lockstepdb/lockstep/internal/lock"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// fakeCluster records what a member's commits hand the cluster.
type fakeCluster struct {
	snapshot uint64
	err      error
	commits  []fakeCommit
}

type fakeCommit struct {
	snapshot uint64
	keys     []certify.Key
	trx      *binlog.Transaction
}

func (f *fakeCluster) Snapshot() uint64 { return f.snapshot }

func (f *fakeCluster) Commit(_ context.Context, snapshot uint64, keys []certify.Key, events []byte) (uint64, error) {
	t, err := binlog.ParseTransaction(events)
	if err != nil {
		return 0, err
	}
	f.commits = append(f.commits, fakeCommit{snapshot, keys, t})
	return 7, f.err
}

func clusterSetup(t *testing.T) (*Manager, *fakeCluster, *storage.Table) {
	single, tab := setup(t)
	fc := &fakeCluster{}
	return NewClusterManager(single.Engine, fc, 3, lock.New()), fc, tab
}

func hasKey(keys []certify.Key, k certify.Key) bool { return slices.Contains(keys, k) }

// A member's transaction goes to the cluster with the snapshot of its
// first read (not of BEGIN), its row and unique keys exclusive, its table
// shared, and events that parse; its write buffer is not applied here.
func TestClusterCommitCarriesSnapshotAndKeys(t *testing.T) {
	m, fc, tab := clusterSetup(t)
	fc.snapshot = 4
	x := m.Begin(RepeatableRead, 1, 0)
	fc.snapshot = 5 // what BEGIN saw does not count; the first read does
	x.StatementBegin()
	if _, ok := get(t, x, tab, 1); ok {
		t.Fatal("row 1 exists before any insert")
	}
	fc.snapshot = 9 // later reads do not move it
	if err := x.Insert(tab, vals(1, 10, "u1")); err != nil {
		t.Fatal(err)
	}
	x.StatementComplete()
	if err := x.Commit(); err != nil {
		t.Fatal(err)
	}
	if len(fc.commits) != 1 {
		t.Fatalf("%d commits reached the cluster, want 1", len(fc.commits))
	}
	c := fc.commits[0]
	if c.snapshot != 5 {
		t.Fatalf("snapshot %d, want 5 (the first read's)", c.snapshot)
	}
	k, _ := tab.RowKey(nil, vals(1, 0, nil))
	if !hasKey(c.keys, certify.Key{Hash: storage.KeyHash(storage.LockKey(k))}) {
		t.Fatalf("keys %v lack the row's exclusive key", c.keys)
	}
	if !hasKey(c.keys, certify.Key{Hash: tableKey(tab.Def.ID), Shared: true}) {
		t.Fatalf("keys %v lack the table's shared key", c.keys)
	}
	if len(c.keys) != 3 { // row, unique index entry, table
		t.Fatalf("keys %v, want 3", c.keys)
	}
	types := map[byte]bool{}
	for _, e := range c.trx.Events {
		types[e.Type] = true
		if id := binary.LittleEndian.Uint32(e.Data[5:9]); id != 3 {
			t.Fatalf("event of type %d from server %d, want 3", e.Type, id)
		}
	}
	if !types[binlog.WriteRowsEventV2] || !types[binlog.XIDEvent] {
		t.Fatalf("events of types %v, want a row event and an XID", types)
	}
	y := m.Begin(RepeatableRead, 2, 0)
	defer y.Rollback()
	if _, ok := get(t, y, tab, 1); ok {
		t.Fatal("the member applied its own write buffer: only the cluster's apply may change the store")
	}
}

// A conflict comes back as the Commit's error, and the transaction is
// ended (its locks released).
func TestClusterCommitConflictEndsTheTransaction(t *testing.T) {
	m, fc, tab := clusterSetup(t)
	fc.err = errors.New("conflict")
	x := m.Begin(RepeatableRead, 1, 0)
	if err := x.Insert(tab, vals(1, 10, nil)); err != nil {
		t.Fatal(err)
	}
	if err := x.Commit(); err == nil || err.Error() != "conflict" {
		t.Fatalf("Commit: %v, want the cluster's error", err)
	}
	if !x.Ended() {
		t.Fatal("transaction still open after a refused commit")
	}
	y := m.Begin(RepeatableRead, 2, 0)
	defer y.Rollback()
	if err := y.Insert(tab, vals(1, 10, nil)); err != nil {
		t.Fatalf("the refused transaction kept its lock: %v", err)
	}
}

// DDL takes the catalog's key and its tables' keys, exclusive; what only
// a single server commits is refused.
func TestClusterDDLKeys(t *testing.T) {
	m, fc, tab := clusterSetup(t)
	fc.snapshot = 11
	c := &storage.CatalogChange{Op: "drop_table", TableID: tab.Def.ID}
	if err := m.CommitDDL(commit.Caller{}, c, "db", "DROP TABLE t", binlog.QueryOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	got := fc.commits[0]
	if got.snapshot != 11 || !hasKey(got.keys, certify.Key{Hash: catalogKey}) || !hasKey(got.keys, certify.Key{Hash: tableKey(tab.Def.ID)}) {
		t.Fatalf("DDL commit: snapshot %d keys %v", got.snapshot, got.keys)
	}
	drop := &storage.CatalogChange{Op: "drop_db", DB: &storage.DatabaseDef{Name: "db"}}
	if err := m.CommitDDL(commit.Caller{}, drop, "db", "DROP DATABASE db", binlog.QueryOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	if !hasKey(fc.commits[1].keys, certify.Key{Hash: tableKey(tab.Def.ID)}) {
		t.Fatalf("DROP DATABASE keys %v lack its table's", fc.commits[1].keys)
	}
	g := binlog.GTIDInfo{SID: binlog.UUID{1}, GNO: 1}
	if err := m.CommitGTIDOnly(g); !errors.Is(err, ErrNotInCluster) {
		t.Fatalf("CommitGTIDOnly on a member: %v", err)
	}
	if err := m.CommitDDL(commit.Caller{}, c, "db", "DROP TABLE t", binlog.QueryOptions{}, &g); !errors.Is(err, ErrNotInCluster) {
		t.Fatalf("DDL under a kept GTID on a member: %v", err)
	}
}

// A transaction that only locked a row (SELECT ... FOR UPDATE, an UPDATE
// that changed nothing) is certified with the row's key, as an empty
// transaction; one that only read plainly sends nothing.
func TestClusterLockedRowIsCertified(t *testing.T) {
	m, fc, tab := clusterSetup(t)
	k, _ := tab.RowKey(nil, vals(1, 0, nil))
	x := m.Begin(RepeatableRead, 1, 0)
	if _, _, err := x.GetLocked(k, lock.Exclusive); err != nil {
		t.Fatal(err)
	}
	if err := x.Commit(); err != nil {
		t.Fatal(err)
	}
	if len(fc.commits) != 1 || !hasKey(fc.commits[0].keys, certify.Key{Hash: storage.KeyHash(storage.LockKey(k))}) {
		t.Fatalf("a locked row's transaction sent %+v", fc.commits)
	}
	for _, e := range fc.commits[0].trx.Events {
		if e.Type != binlog.QueryEvent {
			t.Fatalf("an empty transaction carries an event of type %d", e.Type)
		}
	}
	y := m.Begin(RepeatableRead, 2, 0)
	get(t, y, tab, 1)
	if err := y.Commit(); err != nil || len(fc.commits) != 1 {
		t.Fatalf("a plain read sent something to the cluster: %v, %d commits", err, len(fc.commits))
	}
}

// A transaction past the member's limit is refused before it reaches
// the cluster, and ends.
func TestClusterTrxTooLarge(t *testing.T) {
	m, fc, tab := clusterSetup(t)
	m.MaxTrx = 4096
	x := m.Begin(RepeatableRead, 1, 0)
	for i := int64(0); x.events.Len() <= m.MaxTrx; i++ {
		x.StatementBegin()
		if err := x.Insert(tab, vals(i, i, nil)); err != nil {
			t.Fatal(err)
		}
		x.StatementComplete()
	}
	if err := x.Commit(); !errors.Is(err, ErrTrxTooLarge) {
		t.Fatalf("Commit of %d bytes: %v", x.events.Len(), err)
	}
	if len(fc.commits) != 0 || !x.Ended() {
		t.Fatalf("%d commits reached the cluster; ended %v", len(fc.commits), x.Ended())
	}
}

// A row referenced (a foreign key's parent) is a shared key, unless the
// transaction also writes it; a referenced row of a statement rolled back
// is not.
func TestClusterReferencedRowIsShared(t *testing.T) {
	m, fc, tab := clusterSetup(t)
	x := m.Begin(RepeatableRead, 1, 0)
	parent, _ := tab.RowKey(nil, vals(7, 0, nil))
	gone, _ := tab.RowKey(nil, vals(8, 0, nil))
	x.StatementBegin()
	x.Reference(gone)
	x.StatementRollback()
	x.StatementBegin()
	x.Reference(parent)
	if err := x.Insert(tab, vals(1, 10, "u1")); err != nil {
		t.Fatal(err)
	}
	x.StatementComplete()
	if err := x.Commit(); err != nil {
		t.Fatal(err)
	}
	keys := fc.commits[0].keys
	if !hasKey(keys, certify.Key{Hash: storage.KeyHash(storage.LockKey(parent)), Shared: true}) {
		t.Fatalf("keys %v lack the referenced row's shared key", keys)
	}
	if hasKey(keys, certify.Key{Hash: storage.KeyHash(storage.LockKey(gone)), Shared: true}) {
		t.Fatalf("keys %v keep a reference of a statement rolled back", keys)
	}
	y := m.Begin(RepeatableRead, 2, 0)
	own, _ := tab.RowKey(nil, vals(1, 0, nil))
	y.StatementBegin()
	y.Reference(own)
	if err := y.Insert(tab, vals(2, 20, "u2")); err != nil {
		t.Fatal(err)
	}
	y.Reference(func() []byte { k, _ := tab.RowKey(nil, vals(2, 0, nil)); return k }())
	y.StatementComplete()
	if err := y.Commit(); err != nil {
		t.Fatal(err)
	}
	written, _ := tab.RowKey(nil, vals(2, 0, nil))
	if keys := fc.commits[1].keys; hasKey(keys, certify.Key{Hash: storage.KeyHash(storage.LockKey(written)), Shared: true}) {
		t.Fatalf("keys %v name a row the transaction writes as shared too", keys)
	}
}

// TestClusterRefusedCommitUndoesOutside: a commit the cluster refuses
// undoes the changes made outside the buffer too (temporary tables').
func TestClusterRefusedCommitUndoesOutside(t *testing.T) {
	m, fc, tab := clusterSetup(t)
	fc.err = errors.New("conflict")
	x := m.Begin(RepeatableRead, 1, 0)
	undone := false
	x.OnUndo(func() { undone = true })
	if err := x.Insert(tab, vals(1, 10, nil)); err != nil {
		t.Fatal(err)
	}
	if err := x.Commit(); err == nil {
		t.Fatal("the refused commit succeeded")
	}
	if !undone {
		t.Fatal("a refused commit kept a change made outside the buffer")
	}
}
