// Package txn implements InnoDB-style transactions on Lockstep's storage.
//
// Invariants:
//   - Consistent reads see a Pebble snapshot (taken at the first read under
//     REPEATABLE READ, at every statement under READ COMMITTED) overlaid with
//     the transaction's own write buffer. Because storage applies commits in
//     binlog order, a snapshot is always a prefix of the commit order.
//   - Writes and locking reads act on the latest committed version under an
//     exclusive (or shared) row lock, as InnoDB's UPDATE, DELETE and
//     SELECT ... FOR UPDATE / FOR SHARE do. Together with the lock this
//     rules out lost updates.
//   - Uniqueness (primary and unique keys) is checked against the latest
//     committed data plus the buffer while holding an exclusive lock on the
//     key, so two transactions cannot both insert the same key.
//   - Every buffered write is recorded in an undo log, so a failed statement
//     or ROLLBACK TO SAVEPOINT restores the buffer (and the binlog events and
//     write set) exactly; locks stay until the transaction ends, as in
//     InnoDB.
//   - Commit turns the buffer into one storage batch plus the binlog events
//     built along the way and hands both to the commit pipeline; locks are
//     released only after the commit is durable and visible.
//
// A locking read waits for a row another transaction holds, fails at once
// (NOWAIT) or passes it by (SKIP LOCKED): WaitPolicy.
//
// Gap and next-key locks are not implemented: a locking range read does not
// block inserts into the range (phantoms are possible for locking reads).
package txn

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/commit"
	"github.com/lockstepdb/lockstep/internal/lock"
	"github.com/lockstepdb/lockstep/internal/row"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// Isolation levels.
type Isolation int

// Supported isolation levels (READ UNCOMMITTED runs as READ COMMITTED,
// SERIALIZABLE as REPEATABLE READ with shared-locking plain reads).
const (
	RepeatableRead Isolation = iota
	ReadCommitted
	Serializable
)

// Manager creates transactions.
type Manager struct {
	Engine   *storage.Engine
	Pipeline *commit.Pipeline
	Locks    *lock.Manager
	// Cluster, when set, is the commit path of a cluster member
	// (cluster.go); Pipeline is then nil.
	Cluster Cluster
	// ServerID is written in the events of a cluster member's commits.
	ServerID uint32
	// MaxTrx bounds a cluster member's transactions (0: MaxClusterTrx).
	MaxTrx int
	xid    atomic.Uint64
	ddlMu  sync.Mutex // a cluster member's DDL, one at a time (cluster.go)
}

// NewManager wires a transaction manager.
func NewManager(e *storage.Engine, p *commit.Pipeline, l *lock.Manager) *Manager {
	m := &Manager{Engine: e, Pipeline: p, Locks: l}
	m.xid.Store(uint64(time.Now().UnixNano()))
	l.OnWaitForCommitting = p.NotifyLockWait
	return m
}

// NewClusterManager wires the transaction manager of a cluster member.
func NewClusterManager(e *storage.Engine, c Cluster, serverID uint32, l *lock.Manager) *Manager {
	m := &Manager{Engine: e, Cluster: c, ServerID: serverID, Locks: l}
	m.xid.Store(uint64(time.Now().UnixNano()))
	return m
}

type item struct {
	key string
	val []byte
	del bool
	// For a row of a table without a primary key: fresh says this
	// transaction inserted it, ord when it was first written here (its
	// rows' insertion order, storage's order.go).
	fresh bool
	ord   uint32
}

func lessItem(a, b *item) bool { return a.key < b.key }

type undoRec struct {
	key  string
	prev *item  // nil: the key was not in the buffer
	fn   func() // set: undoes a change made outside the buffer (OnUndo)
}

type mark struct {
	undo   int
	events binlog.Mark
	ws     int
	refs   int
}

// Txn is one transaction. Not safe for concurrent use.
type Txn struct {
	m          *Manager
	owner      *lock.Owner
	iso        Isolation
	snap       *storage.Snapshot
	buf        *btree.BTreeG[*item]
	undo       []undoRec
	events     binlog.TrxEvents
	ws         []uint64
	refs       []uint64          // rows referenced, not written (Reference)
	serial     bool              // wrote to a table without a primary key: no write set
	plan       storage.RowChange // the row change being made (reused)
	keep       *binlog.GTIDInfo  // the GTID to commit under (CommitAs), nil: a new one
	tables     []uint64          // ids of the tables written (cluster members only)
	seen       bool              // snapshot is set (cluster members only)
	snapshot   uint64            // the cluster snapshot of the first read (cluster.go)
	hints      map[string][]byte // keyless rows just read: image -> key (NoteRow)
	nextOrd    uint32            // the next item.ord
	savepoints map[string]mark
	stmt       mark
	inStmt     bool
	// cascades: the statement's changes of tables other than the first it
	// changed are foreign keys' referential actions (MayCascade);
	// stmtTable is that first table (0: none yet).
	cascades  bool
	stmtTable uint64
	session   uint64
	ended     bool
	direct    bool // ReadOnce
	// locked remembers the last row image read from storage under an
	// exclusive lock this transaction holds: no other transaction can change
	// the row until we end, so an UPDATE's second read of it is served from
	// here (the write buffer, checked first, has our own changes).
	locked struct {
		key string
		img []byte
	}
	LockTimeout time.Duration
	// ReadLockWait bounds the commit's wait for the global read lock
	// (lock_wait_timeout; 0: no limit).
	ReadLockWait time.Duration
	// Ctx ends lock waits (KILL QUERY, client gone).
	Ctx context.Context
	// DB is the current database, named in the BEGIN event.
	DB string
	// QueryOptions are the session settings logged with BEGIN.
	QueryOptions binlog.QueryOptions
}

// Begin starts a transaction for a session.
func (m *Manager) Begin(iso Isolation, session uint64, lockTimeout time.Duration) *Txn {
	return &Txn{
		m:           m,
		owner:       m.Locks.NewOwner(),
		iso:         iso,
		session:     session,
		LockTimeout: lockTimeout,
		Ctx:         context.Background(),
	}
}

// Isolation returns the transaction's isolation level.
func (t *Txn) Isolation() Isolation { return t.iso }

// HasWrites reports whether the transaction changed anything.
func (t *Txn) HasWrites() bool { return !t.events.Empty() }

// reader is the consistent read view.
func (t *Txn) reader() storage.Reader {
	if t.snap == nil {
		t.noteRead()
		if t.direct {
			return t.m.Engine.Latest()
		}
		t.snap = t.m.Engine.NewSnapshot()
	}
	return t.snap.Reader()
}

// ReadOnce declares a transaction that makes one consistent read (one
// point read or one scan) and ends: it reads the latest committed data
// directly, since a single Pebble read or iterator is a consistent view by
// itself, and spares taking and releasing a snapshot.
func (t *Txn) ReadOnce() { t.direct = true }

// StartSnapshot takes the read view now (START TRANSACTION WITH CONSISTENT
// SNAPSHOT).
func (t *Txn) StartSnapshot() { t.reader() }

// NewReadView starts a new consistent read view for the next statement
// under READ COMMITTED (a no-op under REPEATABLE READ).
func (t *Txn) NewReadView() {
	if t.iso == ReadCommitted && t.snap != nil {
		t.snap.Close()
		t.snap = nil
	}
}

// StatementBegin marks the start of a statement. Repeated calls within one
// statement (one per table editor) are no-ops.
func (t *Txn) StatementBegin() {
	if t.inStmt {
		return
	}
	t.inStmt = true
	t.cascades, t.stmtTable = false, 0
	t.stmt = mark{undo: len(t.undo), events: t.events.Mark(), ws: len(t.ws), refs: len(t.refs)}
	t.NewReadView()
}

// StatementComplete ends a statement successfully.
func (t *Txn) StatementComplete() {
	if !t.inStmt {
		return
	}
	t.inStmt = false
	t.events.EndStatement()
}

// StatementRollback undoes the current statement (its locks stay).
func (t *Txn) StatementRollback() {
	if !t.inStmt {
		return
	}
	t.inStmt = false
	t.rollbackTo(t.stmt)
}

func (t *Txn) rollbackTo(m mark) {
	for i := len(t.undo) - 1; i >= m.undo; i-- {
		u := t.undo[i]
		if u.fn != nil {
			u.fn()
			continue
		}
		if u.prev == nil {
			t.tree().Delete(&item{key: u.key})
		} else {
			t.tree().ReplaceOrInsert(u.prev)
		}
	}
	t.undo = t.undo[:m.undo]
	t.events.Truncate(m.events)
	t.ws = t.ws[:m.ws]
	t.refs = t.refs[:m.refs]
}

// OnUndo registers fn to run if what was done since is rolled back: the
// statement, back to a savepoint set before, or the whole transaction
// (including a commit that fails). Temporary tables, which live outside
// storage and the binlog, undo their changes so, in order with the
// transaction's other changes.
func (t *Txn) OnUndo(fn func()) {
	t.undo = append(t.undo, undoRec{fn: fn})
}

// undoOutside runs every OnUndo function, the last registered first.
func (t *Txn) undoOutside() {
	for i := len(t.undo) - 1; i >= 0; i-- {
		if fn := t.undo[i].fn; fn != nil {
			fn()
		}
	}
	t.undo = nil
}

// Savepoint records a savepoint (replacing one of the same name).
func (t *Txn) Savepoint(name string) {
	t.events.EndStatement()
	if t.savepoints == nil {
		t.savepoints = map[string]mark{}
	}
	t.savepoints[name] = mark{undo: len(t.undo), events: t.events.Mark(), ws: len(t.ws), refs: len(t.refs)}
}

// ErrNoSavepoint is MySQL's 1305 "SAVEPOINT ... does not exist".
var ErrNoSavepoint = errors.New("savepoint does not exist")

// RollbackToSavepoint undoes everything after the savepoint.
func (t *Txn) RollbackToSavepoint(name string) error {
	m, ok := t.savepoints[name]
	if !ok {
		return fmt.Errorf("SAVEPOINT %s does not exist: %w", name, ErrNoSavepoint)
	}
	t.events.EndStatement()
	t.rollbackTo(m)
	// Savepoints set after this one are gone.
	for n, o := range t.savepoints {
		if o.undo > m.undo {
			delete(t.savepoints, n)
		}
	}
	return nil
}

// ReleaseSavepoint forgets a savepoint.
func (t *Txn) ReleaseSavepoint(name string) error {
	if _, ok := t.savepoints[name]; !ok {
		return fmt.Errorf("SAVEPOINT %s does not exist: %w", name, ErrNoSavepoint)
	}
	delete(t.savepoints, name)
	return nil
}

func (t *Txn) put(key []byte, val []byte, del bool) {
	t.putItem(&item{key: string(key), val: val, del: del})
}

// putNew buffers a row this transaction inserts.
func (t *Txn) putNew(key []byte, val []byte) {
	t.putItem(&item{key: string(key), val: val, fresh: true})
}

func (t *Txn) putItem(x *item) {
	prev, had := t.tree().ReplaceOrInsert(x)
	if had {
		x.fresh = x.fresh || prev.fresh
		x.ord = prev.ord
	} else {
		prev = nil
		x.ord = t.nextOrd
		t.nextOrd++
	}
	t.undo = append(t.undo, undoRec{key: x.key, prev: prev})
}

// tree is the write buffer, made on first use (most transactions of a
// read-heavy load never write).
func (t *Txn) tree() *btree.BTreeG[*item] {
	if t.buf == nil {
		t.buf = btree.NewG(16, lessItem)
	}
	return t.buf
}

// bufGet looks a key up in the write buffer.
func (t *Txn) bufGet(key []byte) (*item, bool) {
	if t.buf == nil {
		return nil, false
	}
	return t.buf.Get(&item{key: string(key)})
}

// Get is a consistent read of one key.
func (t *Txn) Get(key []byte) ([]byte, bool, error) {
	if it, ok := t.bufGet(key); ok {
		return it.val, !it.del, nil
	}
	if t.iso == Serializable {
		return t.GetLocked(key, lock.Shared)
	}
	return t.reader().Get(key)
}

// latest reads the newest committed version overlaid with the buffer.
func (t *Txn) latest(key []byte) ([]byte, bool, error) {
	if it, ok := t.bufGet(key); ok {
		return it.val, !it.del, nil
	}
	if t.locked.img != nil && t.locked.key == string(key) && t.owner.Holds(t.locked.key, lock.Exclusive) {
		return t.locked.img, true, nil
	}
	t.noteRead()
	return t.m.Engine.Latest().Get(key)
}

// GetLatest reads the newest committed version of key overlaid with the
// buffer, without locking.
func (t *Txn) GetLatest(key []byte) ([]byte, bool, error) { return t.latest(key) }

// Lock takes a row lock.
func (t *Txn) Lock(key []byte, mode lock.Mode) error {
	return t.m.Locks.Lock(t.Ctx, t.owner, string(storage.LockKey(key)), mode, t.LockTimeout)
}

// CountLockWaits adds the time the transaction waits for row locks to
// *sink (nanoseconds).
func (t *Txn) CountLockWaits(sink *atomic.Int64) {
	t.owner.Waited = sink
}

// GetLocked locks key and reads its latest committed version.
func (t *Txn) GetLocked(key []byte, mode lock.Mode) ([]byte, bool, error) {
	if err := t.Lock(key, mode); err != nil {
		return nil, false, err
	}
	v, ok, err := t.latest(key)
	if err == nil && ok && mode == lock.Exclusive {
		if _, inBuf := t.bufGet(key); !inBuf {
			t.locked.key, t.locked.img = string(key), v
		}
	}
	return v, ok, err
}

// WaitPolicy is what a locking read does when another transaction holds
// a conflicting lock on a row: wait for it (the default), fail at once
// (NOWAIT: ErrLockNoWait), or pass the row by (SKIP LOCKED).
type WaitPolicy uint8

// Wait policies.
const (
	Wait WaitPolicy = iota
	NoWait
	SkipLocked
)

var (
	// ErrLockNoWait: a row was locked by another transaction, under NOWAIT.
	ErrLockNoWait = errors.New("statement aborted because lock(s) could not be acquired immediately and NOWAIT is set")
	// ErrLockSkipped: a row was locked by another transaction, and SKIP
	// LOCKED passes it by.
	ErrLockSkipped = errors.New("row locked by another transaction: skipped")
)

// GetLockedWith is GetLocked under wait policy p.
func (t *Txn) GetLockedWith(key []byte, mode lock.Mode, p WaitPolicy) ([]byte, bool, error) {
	if p != Wait {
		if _, own := t.bufGet(key); !own && !t.m.Locks.TryLock(t.owner, string(storage.LockKey(key)), mode) {
			if p == NoWait {
				return nil, false, ErrLockNoWait
			}
			return nil, false, ErrLockSkipped
		}
	}
	return t.GetLocked(key, mode)
}

// KV is one key/value from an iterator.
type KV struct{ Key, Value []byte }

// Iter iterates a key range: a storage iterator merged with the write
// buffer as it was when the iterator was created (so a statement does not
// see rows it writes while scanning).
type Iter struct {
	t       *Txn
	it      storage.Iter
	started bool
	buf     []*item
	bi      int
	lockMd  lock.Mode // 0: consistent read
	policy  WaitPolicy
	cur     KV
	err     error
	// kbuf, vbuf hold the current storage key and value of a non-locking
	// iterator, reused from row to row.
	kbuf, vbuf []byte
	// ordered: the iterator walks a keyless table's rows in insertion
	// order (it is over the table's sequence index, whose values are row
	// keys, read through r); buf is in the order this transaction first
	// wrote its rows, and mine holds them by key, marked once returned.
	ordered bool
	r       storage.Reader
	mine    map[string]*item
	done    map[*item]bool
	// gap, if set, is the scan's gap lock, grown over each key before it
	// is returned (growGap); upper is the scan's end.
	gap   *lock.Gap
	upper []byte
}

// Scan returns a consistent-read iterator over [lower, upper).
func (t *Txn) Scan(lower, upper []byte) (*Iter, error) {
	if t.iso == Serializable {
		return t.LockingScan(lower, upper, lock.Shared)
	}
	return t.newIter(t.reader(), lower, upper, 0, false)
}

// ScanLatest iterates the latest committed data in [lower, upper) overlaid
// with the buffer, without locking (used for secondary index entries whose
// rows the caller then locks).
func (t *Txn) ScanLatest(lower, upper []byte) (*Iter, error) {
	t.noteRead()
	return t.newIter(t.m.Engine.Latest(), lower, upper, 0, false)
}

// LockingScan returns an iterator over the latest committed rows in
// [lower, upper) that locks each key before returning it and returns its
// latest value (rows deleted while waiting are skipped). Under REPEATABLE
// READ and SERIALIZABLE it also locks the gaps it passes over.
func (t *Txn) LockingScan(lower, upper []byte, mode lock.Mode) (*Iter, error) {
	return t.LockingScanWith(lower, upper, mode, Wait)
}

// LockingScanWith is LockingScan under wait policy p: under SKIP LOCKED
// the rows others hold are left out (and no gap is locked); under NOWAIT
// the first stops it.
func (t *Txn) LockingScanWith(lower, upper []byte, mode lock.Mode, p WaitPolicy) (*Iter, error) {
	t.noteRead()
	it, err := t.newIter(t.m.Engine.Latest(), lower, upper, mode, t.gapLocking(p))
	if it != nil {
		it.policy = p
	}
	return it, err
}

// LockingIndexScan iterates the latest committed entries of an index in
// [lower, upper), as ScanLatest, for a locking read that locks the rows
// they name: under REPEATABLE READ and SERIALIZABLE it locks the gaps it
// passes over, under wait policy p.
func (t *Txn) LockingIndexScan(lower, upper []byte, p WaitPolicy) (*Iter, error) {
	t.noteRead()
	it, err := t.newIter(t.m.Engine.Latest(), lower, upper, 0, t.gapLocking(p))
	if it != nil {
		it.policy = p
	}
	return it, err
}

// gapLocking says whether a locking scan under p locks gaps: at
// REPEATABLE READ and SERIALIZABLE, as InnoDB's next-key locks, but not
// under SKIP LOCKED (a job queue's reads must not hold off its inserts).
func (t *Txn) gapLocking(p WaitPolicy) bool {
	return t.iso != ReadCommitted && p != SkipLocked
}

// LockGap locks the gap of the absent key key at REPEATABLE READ and
// SERIALIZABLE: until the transaction ends, no other inserts it. A
// locking read of a unique index entry that finds none takes it.
func (t *Txn) LockGap(key []byte, p WaitPolicy) error {
	if !t.gapLocking(p) {
		return nil
	}
	g := t.m.Locks.LockGap(t.owner, storage.GapSpace(key), key)
	_, _, err := t.m.Locks.ExtendGap(t.Ctx, g, justPast(key), t.LockTimeout, p != NoWait)
	return gapError(err)
}

// justPast is the smallest key after k.
func justPast(k []byte) []byte {
	return append(append(make([]byte, 0, len(k)+1), k...), 0)
}

// gapError is a gap lock's error as a locking read reports it.
func gapError(err error) error {
	if errors.Is(err, lock.ErrWouldWait) {
		return ErrLockNoWait
	}
	return err
}

func (t *Txn) newIter(r storage.Reader, lower, upper []byte, mode lock.Mode, gap bool) (*Iter, error) {
	slo, shi, ordered := storage.InsertionOrder(lower, upper)
	var g *lock.Gap
	if gap {
		// Before the storage view is taken (lock/gap.go).
		g = t.m.Locks.LockGap(t.owner, storage.GapSpace(lower), lower)
		if ordered {
			// Rows in insertion order do not come in key order: the
			// whole range is locked at once.
			if _, _, err := t.m.Locks.ExtendGap(t.Ctx, g, upper, t.LockTimeout, true); err != nil {
				return nil, err
			}
			g = nil
		}
	}
	var it storage.Iter
	var err error
	if ordered {
		it, err = r.NewIter(slo, shi)
	} else {
		it, err = r.NewIter(lower, upper)
	}
	if err != nil {
		return nil, err
	}
	i := &Iter{t: t, it: it, lockMd: mode, ordered: ordered, r: r, gap: g, upper: upper}
	lo := &item{key: string(lower)}
	visit := func(x *item) bool { i.buf = append(i.buf, x); return true }
	if t.buf == nil {
		// nothing written
	} else if upper == nil {
		t.buf.AscendGreaterOrEqual(lo, visit)
	} else {
		t.buf.AscendRange(lo, &item{key: string(upper)}, visit)
	}
	if ordered && len(i.buf) > 0 {
		i.mine = make(map[string]*item, len(i.buf))
		i.done = make(map[*item]bool, len(i.buf))
		for _, x := range i.buf {
			i.mine[x.key] = x
		}
		sort.Slice(i.buf, func(a, b int) bool { return i.buf[a].ord < i.buf[b].ord })
	}
	return i, nil
}

// Next advances; it returns false at the end or on error (see Err).
func (i *Iter) Next() bool {
	if i.ordered {
		return i.nextOrdered()
	}
	for {
		if !i.started {
			i.started = true
			i.it.First()
		}
		var pk []byte
		if i.it.Valid() {
			pk = i.it.Key()
		}
		var bk *item
		if i.bi < len(i.buf) {
			bk = i.buf[i.bi]
		}
		if i.gap != nil {
			next := pk // the key about to be returned; nil at the end
			if bk != nil && (pk == nil || bk.key <= string(pk)) {
				next = []byte(bk.key)
			}
			if reread, err := i.growGap(next); err != nil {
				i.err = err
				return false
			} else if reread {
				continue
			}
		}
		switch {
		case pk == nil && bk == nil:
			i.err = i.it.Error()
			return false
		case bk != nil && (pk == nil || bk.key <= string(pk)):
			if pk != nil && bk.key == string(pk) {
				i.it.Next()
			}
			i.bi++
			if bk.del {
				continue
			}
			i.cur = KV{Key: []byte(bk.key), Value: bk.val}
			return true
		default:
			if i.lockMd == 0 {
				i.kbuf = append(i.kbuf[:0], pk...)
				i.vbuf = append(i.vbuf[:0], i.it.Value()...)
				i.it.Next()
				i.cur = KV{Key: i.kbuf, Value: i.vbuf}
				return true
			}
			// A locking read returns the latest version, read under the
			// lock.
			key := append([]byte(nil), pk...)
			i.it.Next()
			val, ok := i.lockedRow(key)
			if i.err != nil {
				return false
			}
			if !ok {
				continue
			}
			i.cur = KV{Key: key, Value: val}
			return true
		}
	}
}

// growGap extends the scan's gap lock over next, or to the scan's end
// when next is nil. When the part it grew over must be read again
// (lock/gap.go), it repositions the storage iterator there, on a new view
// of the latest data, and reports reread.
func (i *Iter) growGap(next []byte) (reread bool, err error) {
	to := i.upper
	if next != nil {
		to = justPast(next)
	}
	t := i.t
	from, reread, err := t.m.Locks.ExtendGap(t.Ctx, i.gap, to, t.LockTimeout, i.policy != NoWait)
	if err != nil || !reread {
		return false, gapError(err)
	}
	it, err := i.r.NewIter(from, i.upper)
	if err != nil {
		return false, err
	}
	old := i.it
	i.it, i.started = it, false
	return true, old.Close()
}

// lockedRow reads key's latest version under the iterator's lock. ok is
// false for a row to pass by: one SKIP LOCKED skips, or one deleted while
// the read waited. An error is left in i.err.
func (i *Iter) lockedRow(key []byte) (val []byte, ok bool) {
	val, ok, err := i.t.GetLockedWith(key, i.lockMd, i.policy)
	if errors.Is(err, ErrLockSkipped) {
		return nil, false
	}
	if err != nil {
		i.err = err
		return nil, false
	}
	return val, ok
}

// nextOrdered is Next in insertion order: the rows in the store, each
// overlaid with this transaction's write of it, then the rows this
// transaction added, in the order it added them.
func (i *Iter) nextOrdered() bool {
	if !i.started {
		i.started = true
		i.it.First()
	}
	for i.it.Valid() {
		key := append(i.kbuf[:0], i.it.Value()...)
		i.kbuf = key
		i.it.Next()
		if x, ok := i.mine[string(key)]; ok {
			i.done[x] = true
			if x.del {
				continue
			}
			i.cur = KV{Key: key, Value: x.val}
			return true
		}
		var val []byte
		var ok bool
		if i.lockMd == 0 {
			var err error
			ok, err = i.r.View(key, func(v []byte) error {
				i.vbuf = append(i.vbuf[:0], v...)
				return nil
			})
			val, i.err = i.vbuf, err
		} else {
			key = append([]byte(nil), key...)
			val, ok = i.lockedRow(key)
		}
		if i.err != nil {
			return false
		}
		if !ok {
			continue // skipped, or deleted since the entry was read
		}
		i.cur = KV{Key: key, Value: val}
		return true
	}
	if err := i.it.Error(); err != nil {
		i.err = err
		return false
	}
	for i.bi < len(i.buf) {
		x := i.buf[i.bi]
		i.bi++
		if x.del || i.done[x] {
			continue
		}
		i.cur = KV{Key: []byte(x.key), Value: x.val}
		return true
	}
	return false
}

// KV returns the current key/value. A non-locking iterator's KV is valid
// until the next call to Next.
func (i *Iter) KV() KV { return i.cur }

// Err is the error that stopped the iterator.
func (i *Iter) Err() error { return i.err }

// Close releases the iterator.
func (i *Iter) Close() error { return i.it.Close() }

func (t *Txn) beginWrite() {
	if t.events.Empty() {
		t.events.AddQuery(t.DB, "BEGIN", t.QueryOptions)
		// BEGIN is part of the transaction, not of the statement: keep it
		// out of statement rollback.
		if t.inStmt {
			t.stmt.events = t.events.Mark()
		}
	}
}

// dupError builds the duplicate-key error with the existing row.
func (t *Txn) dupError(tab *storage.Table, index int, key []byte, rowKey []byte) error {
	e := &storage.DuplicateKeyError{Table: tab, Index: index, Key: key}
	if img, ok, err := t.latest(rowKey); err == nil && ok {
		e.Existing = img
	}
	return e
}

// Insert adds a row, failing with a DuplicateKeyError on a key collision.
func (t *Txn) Insert(tab *storage.Table, vals []row.Value) error {
	img, err := tab.Encode(nil, vals)
	if err != nil {
		return err
	}
	c := t.change()
	if tab.Keyless() {
		t.serial = true
	}
	if err := tab.PlanInsert(c, img, vals, t.latest, t.lockX); err != nil {
		return err
	}
	if err := t.check(tab, c); err != nil {
		return err
	}
	t.write(c, true)
	t.addRow(binlog.WriteRowsEventV2, tab, nil, img)
	t.noteTable(tab)
	return nil
}

// change returns the transaction's row-change plan, reset.
func (t *Txn) change() *storage.RowChange {
	t.plan.Reset()
	return &t.plan
}

// check makes the checks of a planned change: gap locks first, as
// InnoDB's insert intention (a gap's owner may then insert the same key
// itself, and this change finds it a duplicate), then each key that must
// not exist, locked and read.
func (t *Txn) check(tab *storage.Table, c *storage.RowChange) error {
	if len(c.Adds) > 0 {
		if err := t.m.Locks.InsertIntent(t.Ctx, t.owner, storage.GapSpace(c.Key), t.LockTimeout, c.Adds...); err != nil {
			return err
		}
	}
	for _, a := range c.Absent {
		if err := t.Lock(a.Key, lock.Exclusive); err != nil {
			return err
		}
		v, exists, err := t.latest(a.Key)
		if err != nil {
			return err
		}
		if exists {
			rowKey := a.Key
			if a.Index >= 0 {
				rowKey = v // a unique entry's value is its row's key
			}
			return t.dupError(tab, a.Index, a.Key, rowKey)
		}
	}
	return nil
}

// write buffers a planned change's writes and adds its write set; fresh
// says the row is inserted.
func (t *Txn) write(c *storage.RowChange, fresh bool) {
	t.beginWrite()
	for _, k := range c.Deletes {
		t.put(k, nil, true)
	}
	for i, w := range c.Sets {
		if i == 0 && fresh {
			t.putNew(w.Key, w.Value)
		} else {
			t.put(w.Key, w.Value, false)
		}
	}
	t.ws = append(t.ws, c.WriteSet...)
}

// MayCascade says the current statement changes a table with foreign
// keys, through go-mysql-server's foreign key handler, which changes the
// statement's own table first (a parent row deleted, then its children):
// the statement's changes of other tables are then referential actions,
// logged as such (binlog.TrxEvents.AddCascadeRow). A constraint with an
// action on its own table is refused in the SQL layer, so the two never
// share a table.
func (t *Txn) MayCascade() { t.cascades = true }

// addRow logs a row change of tab.
func (t *Txn) addRow(typ byte, tab *storage.Table, before, after []byte) {
	if t.stmtTable == 0 {
		t.stmtTable = tab.Def.ID
	}
	if t.cascades && tab.Def.ID != t.stmtTable {
		t.events.AddCascadeRow(typ, tab.Ref(), before, after)
		return
	}
	t.events.AddRow(typ, tab.Ref(), before, after)
}

// Reference records that the transaction's writes rely on the row at key
// staying as it is, without writing it: the parent row a foreign key
// check found (read under a shared lock). The binlog's write set names it,
// so a replica applies the transaction after the one that wrote the row
// (MySQL's write sets name foreign-key parents for the same reason), and a
// cluster member certifies it as a shared key.
func (t *Txn) Reference(key []byte) {
	t.refs = append(t.refs, storage.KeyHash(storage.LockKey(key)))
}

// ErrRowNotFound means the row to change no longer exists.
var ErrRowNotFound = errors.New("row not found")

// Update replaces the row old by new. The row must have been read under a
// lock (or is locked here), and old must match its latest version's key.
func (t *Txn) Update(tab *storage.Table, old, new []row.Value) error {
	at, err := t.locate(tab, old)
	if err != nil {
		return err
	}
	if at.Key == nil {
		return ErrRowNotFound
	}
	before, exists, err := t.GetLocked(at.Key, lock.Exclusive)
	if err != nil {
		return err
	}
	if !exists {
		return ErrRowNotFound
	}
	curVals, err := tab.Decode(before, nil)
	if err != nil {
		return err
	}
	img, err := tab.Encode(nil, new)
	if err != nil {
		return err
	}
	c := t.change()
	if err := tab.PlanUpdate(c, at, before, curVals, img, new, t.latest, t.lockX); err != nil {
		return err
	}
	if err := t.check(tab, c); err != nil {
		return err
	}
	t.write(c, false)
	t.addRow(binlog.UpdateRowsEventV2, tab, before, img)
	t.noteTable(tab)
	return nil
}

// Delete removes the row with vals' primary key. It reports whether a row
// was deleted.
func (t *Txn) Delete(tab *storage.Table, vals []row.Value) (bool, error) {
	at, err := t.locate(tab, vals)
	if err != nil || at.Key == nil {
		return false, err
	}
	before, exists, err := t.GetLocked(at.Key, lock.Exclusive)
	if err != nil || !exists {
		return false, err
	}
	cur, err := tab.Decode(before, nil)
	if err != nil {
		return false, err
	}
	c := t.change()
	if err := tab.PlanDelete(c, at, cur); err != nil {
		return false, err
	}
	t.write(c, false)
	t.addRow(binlog.DeleteRowsEventV2, tab, before, nil)
	t.noteTable(tab)
	return true, nil
}

// locate finds the row a change of the row vals acts on. A row of a
// table without a primary key is found by its image (see package
// storage), preferring the one the statement read (NoteRow).
// Such tables' transactions get no write set, as in MySQL (WRITESET
// dependency tracking needs a primary key): a replica applies them in
// commit order.
func (t *Txn) locate(tab *storage.Table, vals []row.Value) (storage.Located, error) {
	if !tab.Keyless() {
		return tab.Locate(nil, vals, nil, nil, nil)
	}
	img, err := tab.Encode(nil, vals)
	if err != nil {
		return storage.Located{}, err
	}
	t.serial = true
	return tab.Locate(img, vals, t.hints[string(img)], t.latest, t.lockX)
}

func (t *Txn) lockX(k []byte) error { return t.Lock(k, lock.Exclusive) }

// maxHints bounds the rows NoteRow remembers.
const maxHints = 4096

// NoteRow tells the transaction that the statement has just read the
// keyless row at key with image img, so that an update or delete of that
// image changes this row rather than an identical one (which the
// statement may visit next). Only the most recent rows are remembered;
// GMS changes a row right after reading it.
func (t *Txn) NoteRow(key, img []byte) {
	if t.hints == nil || len(t.hints) >= maxHints {
		t.hints = make(map[string][]byte)
	}
	t.hints[string(img)] = append([]byte(nil), key...)
}

// Commit makes the transaction durable and visible, then releases its locks.
func (t *Txn) Commit() (err error) {
	if t.ended {
		return nil
	}
	defer t.end()
	defer func() {
		if err != nil {
			t.undoOutside()
		}
	}()
	if t.m.Cluster != nil {
		if !t.events.Empty() {
			t.events.AddXID(t.m.xid.Add(1))
		}
		return t.commitCluster()
	}
	if t.events.Empty() {
		return nil
	}
	t.events.AddXID(t.m.xid.Add(1))
	b, err := t.batch()
	if err != nil {
		return err
	}
	t.owner.Committing.Store(true)
	ws := t.ws
	if len(t.refs) > 0 {
		ws = append(ws[:len(ws):len(ws)], t.refs...)
	}
	if len(ws) == 0 || t.serial {
		ws = nil
	}
	ct := &commit.Trx{Events: &t.events, Batch: b, WriteSet: ws,
		Caller: commit.Caller{Session: t.session, Ctx: t.Ctx, LockWait: t.ReadLockWait}}
	if t.keep != nil {
		ct.KeepGTID, ct.GTID = true, *t.keep
	}
	return t.m.Pipeline.Commit(ct)
}

// CommitAs commits the transaction under GTID g instead of a new one
// (gtid_next). A g already executed gives commit.ErrGTIDExecuted, and
// nothing of the transaction commits.
func (t *Txn) CommitAs(g binlog.GTIDInfo) error {
	if t.m.Cluster != nil {
		return fmt.Errorf("a transaction under gtid_next: %w", ErrNotInCluster)
	}
	t.keep = &g
	return t.Commit()
}

// batch turns the write buffer into a storage batch. Rows of tables
// without a primary key are written last, in the order this transaction
// first wrote them, and those it inserted as new rows: storage takes their
// insertion order from that (its order.go).
func (t *Txn) batch() (*storage.Batch, error) {
	b := t.m.Engine.NewBatch()
	var keyless []*item
	var err error
	t.tree().Ascend(func(x *item) bool {
		switch {
		case storage.IsKeylessRow(x.key):
			keyless = append(keyless, x)
		case x.del:
			err = b.Delete([]byte(x.key))
		default:
			err = b.Set([]byte(x.key), x.val)
		}
		return err == nil
	})
	if len(keyless) > 1 {
		sort.Slice(keyless, func(i, j int) bool { return keyless[i].ord < keyless[j].ord })
	}
	for _, x := range keyless {
		if err != nil {
			break
		}
		switch {
		case x.del:
			err = b.Delete([]byte(x.key))
		case x.fresh:
			err = b.SetNew([]byte(x.key), x.val)
		default:
			err = b.Set([]byte(x.key), x.val)
		}
	}
	if err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// Ended reports whether the transaction committed or rolled back.
func (t *Txn) Ended() bool { return t.ended }

// Rollback discards the transaction and releases its locks.
func (t *Txn) Rollback() {
	if !t.ended {
		t.undoOutside()
		t.end()
	}
}

func (t *Txn) end() {
	t.ended = true
	t.m.Locks.ReleaseAll(t.owner)
	t.owner.Committing.Store(false)
	if t.snap != nil {
		t.snap.Close()
		t.snap = nil
	}
	if t.buf != nil {
		t.buf.Clear(false)
	}
	t.undo = nil
	t.locked.key, t.locked.img = "", nil
}
