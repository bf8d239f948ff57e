package txn

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/commit"
	"github.com/lockstepdb/lockstep/internal/lock"
	"github.com/lockstepdb/lockstep/internal/row"
	"github.com/lockstepdb/lockstep/internal/storage"
)

var cols = []row.Column{
	{Name: "id", Type: row.TypeLongLong},
	{Name: "v", Type: row.TypeLongLong},
	{Name: "u", Type: row.TypeVarchar, MaxBytes: 20, Collation: 255, Nullable: true},
}

func setup(t *testing.T) (*Manager, *storage.Table) {
	t.Helper()
	cfg := &commit.Config{ServerID: 1, ServerUUID: binlog.UUID{9}}
	cfg.SyncBinlog.Store(1)
	cfg.FlushLogAtTrxCommit.Store(1)
	cfg.MaxBinlogSize.Store(1 << 30)
	cfg.Tracking.Store(int32(commit.WriteSet))
	cfg.HistorySize.Store(25000)
	p, s, _, _, err := commit.Open(commit.OpenOptions{FS: vfs.NewMem(), Dir: "/d", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(); s.Close() })
	for _, c := range []*storage.CatalogChange{
		{Op: "create_db", DB: &storage.DatabaseDef{Name: "db"}},
		{Op: "create_table", Table: &storage.TableDef{ID: s.NewTableID(), DB: "db", Name: "t", Columns: cols, PK: []int{0},
			Indexes: []storage.IndexDef{{ID: 1, Name: "u", Columns: []int{2}, Unique: true}}}},
	} {
		err := p.CommitExclusive(commit.Caller{}, func() (*commit.Trx, error) {
			return commit.CatalogTrx(s, c, "db", "DDL", binlog.QueryOptions{})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	tab, _ := s.Table("db", "t")
	return NewManager(s, p, lock.New()), tab
}

func vals(id, v int64, u any) []row.Value { return []row.Value{id, v, u} }

func get(t *testing.T, x *Txn, tab *storage.Table, id int64) ([]row.Value, bool) {
	t.Helper()
	k, _ := tab.RowKey(nil, vals(id, 0, nil))
	img, ok, err := x.Get(k)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return nil, false
	}
	v, err := tab.Decode(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	return v, true
}

func TestNoLostUpdates(t *testing.T) {
	m, tab := setup(t)
	x := m.Begin(RepeatableRead, 1, time.Second)
	if err := x.Insert(tab, vals(1, 0, nil)); err != nil {
		t.Fatal(err)
	}
	if err := x.Commit(); err != nil {
		t.Fatal(err)
	}
	const n = 200
	var wg sync.WaitGroup
	for s := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				x := m.Begin(RepeatableRead, uint64(10+s), 5*time.Second)
				x.StartSnapshot() // an old snapshot must not cause a lost update
				k, _ := tab.RowKey(nil, vals(1, 0, nil))
				img, _, err := x.GetLocked(k, lock.Exclusive)
				if err != nil {
					t.Error(err)
					return
				}
				cur, _ := tab.Decode(img, nil)
				if err := x.Update(tab, cur, vals(1, cur[1].(int64)+1, nil)); err != nil {
					t.Error(err)
					return
				}
				if err := x.Commit(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	r := m.Begin(RepeatableRead, 3, time.Second)
	defer r.Rollback()
	if v, _ := get(t, r, tab, 1); v[1].(int64) != 2*n {
		t.Fatalf("v = %d, want %d", v[1], 2*n)
	}
}

func TestSnapshotIsolationLevels(t *testing.T) {
	m, tab := setup(t)
	w := m.Begin(RepeatableRead, 1, time.Second)
	w.Insert(tab, vals(1, 10, nil))
	w.Commit()

	rr := m.Begin(RepeatableRead, 2, time.Second)
	rc := m.Begin(ReadCommitted, 3, time.Second)
	rr.StatementBegin()
	rc.StatementBegin()
	if v, _ := get(t, rr, tab, 1); v[1] != int64(10) {
		t.Fatal("rr first read")
	}
	get(t, rc, tab, 1)
	rr.StatementComplete()
	rc.StatementComplete()

	w2 := m.Begin(RepeatableRead, 4, time.Second)
	w2.Update(tab, vals(1, 10, nil), vals(1, 20, nil))
	w2.Insert(tab, vals(2, 5, nil))
	if err := w2.Commit(); err != nil {
		t.Fatal(err)
	}
	rr.StatementBegin()
	rc.StatementBegin()
	if v, _ := get(t, rr, tab, 1); v[1] != int64(10) {
		t.Fatalf("REPEATABLE READ saw a later commit: %v", v)
	}
	if _, ok := get(t, rr, tab, 2); ok {
		t.Fatal("REPEATABLE READ saw a row inserted later")
	}
	if v, _ := get(t, rc, tab, 1); v[1] != int64(20) {
		t.Fatalf("READ COMMITTED did not see the commit: %v", v)
	}
	rr.Rollback()
	rc.Rollback()
}

func TestStatementRollbackAndSavepoints(t *testing.T) {
	m, tab := setup(t)
	x := m.Begin(RepeatableRead, 1, time.Second)
	x.StatementBegin()
	x.Insert(tab, vals(1, 1, "a"))
	x.StatementComplete()
	x.Savepoint("sp")
	x.StatementBegin()
	x.Insert(tab, vals(2, 2, "b"))
	err := x.Insert(tab, vals(3, 3, "a")) // duplicate unique key
	var dup *storage.DuplicateKeyError
	if !errors.As(err, &dup) || dup.Index != 0 {
		t.Fatalf("duplicate unique key: %v", err)
	}
	x.StatementRollback() // the whole statement goes, row 2 too
	if _, ok := get(t, x, tab, 2); ok {
		t.Fatal("statement rollback kept a row")
	}
	x.StatementBegin()
	x.Insert(tab, vals(4, 4, "d"))
	x.StatementComplete()
	if err := x.RollbackToSavepoint("sp"); err != nil {
		t.Fatal(err)
	}
	if _, ok := get(t, x, tab, 4); ok {
		t.Fatal("rollback to savepoint kept a row")
	}
	if err := x.RollbackToSavepoint("nope"); !errors.Is(err, ErrNoSavepoint) {
		t.Fatalf("unknown savepoint: %v", err)
	}
	if err := x.Commit(); err != nil {
		t.Fatal(err)
	}
	r := m.Begin(RepeatableRead, 2, time.Second)
	defer r.Rollback()
	it, _ := r.Scan(tab.PrimaryPrefix(), row.PrefixEnd(tab.PrimaryPrefix()))
	defer it.Close()
	n := 0
	for it.Next() {
		n++
	}
	if n != 1 {
		t.Fatalf("%d rows committed, want 1", n)
	}
	// The freed unique value is usable again; the taken one is not.
	y := m.Begin(RepeatableRead, 3, time.Second)
	if err := y.Insert(tab, vals(5, 5, "b")); err != nil {
		t.Fatal(err)
	}
	if err := y.Insert(tab, vals(1, 0, nil)); !errors.As(err, &dup) || dup.Index != -1 {
		t.Fatalf("duplicate primary key: %v", err)
	}
	y.Commit()
}

func TestDeadlockVictimRollsBack(t *testing.T) {
	m, tab := setup(t)
	x := m.Begin(RepeatableRead, 1, time.Second)
	x.Insert(tab, vals(1, 0, nil))
	x.Insert(tab, vals(2, 0, nil))
	x.Commit()
	a := m.Begin(RepeatableRead, 2, 5*time.Second)
	b := m.Begin(RepeatableRead, 3, 5*time.Second)
	if err := a.Update(tab, vals(1, 0, nil), vals(1, 1, nil)); err != nil {
		t.Fatal(err)
	}
	if err := b.Update(tab, vals(2, 0, nil), vals(2, 1, nil)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- a.Update(tab, vals(2, 0, nil), vals(2, 2, nil)) }()
	for deadline := time.Now().Add(10 * time.Second); m.Locks.Stats.Current.Load() < 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a never started waiting")
		}
	}
	if err := b.Update(tab, vals(1, 0, nil), vals(1, 2, nil)); !errors.Is(err, lock.ErrDeadlock) {
		t.Fatalf("expected deadlock, got %v", err)
	}
	b.Rollback()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestOnUndo: changes made outside the write buffer are undone, last
// first, with the statement, the savepoint or the transaction that made
// them, and kept by a commit.
func TestOnUndo(t *testing.T) {
	m, tab := setup(t)
	var log []string
	change := func(x *Txn, name string) {
		x.OnUndo(func() { log = append(log, "undo "+name) })
	}
	x := m.Begin(RepeatableRead, 1, time.Second)
	x.StatementBegin()
	change(x, "a")
	x.StatementComplete()
	x.Savepoint("sp")
	x.StatementBegin()
	change(x, "b")
	x.Insert(tab, vals(1, 1, "a"))
	change(x, "c")
	x.StatementRollback()
	if got := fmt.Sprint(log); got != "[undo c undo b]" {
		t.Fatalf("statement rollback: %s", got)
	}
	x.StatementBegin()
	change(x, "d")
	x.StatementComplete()
	if err := x.RollbackToSavepoint("sp"); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(log); got != "[undo c undo b undo d]" {
		t.Fatalf("rollback to savepoint: %s", got)
	}
	x.Rollback()
	if got := fmt.Sprint(log); got != "[undo c undo b undo d undo a]" {
		t.Fatalf("rollback: %s", got)
	}

	log = nil
	y := m.Begin(RepeatableRead, 2, time.Second)
	y.StatementBegin()
	change(y, "e")
	y.Insert(tab, vals(2, 2, "b"))
	y.StatementComplete()
	if err := y.Commit(); err != nil {
		t.Fatal(err)
	}
	y.Rollback()
	if log != nil {
		t.Fatalf("a committed transaction undid %v", log)
	}
}
