// Package commit is Lockstep's commit pipeline: binlog group commit in which
// the binlog is the only log.
//
// A transaction arrives with its binlog events already built (TrxEvents, with
// placeholder headers) and its storage changes in a batch. It first passes
// the global read lock (FLUSH TABLES WITH READ LOCK, readlock.go), which
// holds it back while a session holds the lock. It then goes through these
// stages, and commit order = binlog order = visibility order:
//
//  1. reserve (serial, under mu, a few hundred nanoseconds): GTID number,
//     sequence_number, last_committed (dependency tracking), and the
//     transaction's byte range in the binlog, rotating to a new file first
//     when the current one has reached max_binlog_size. Nothing is copied or
//     written under mu, so a huge transaction never holds up the others.
//  2. encode: the GTID event is written and every header's log_pos and
//     checksum filled in. With binlog_parallel_flush=ON each committing
//     goroutine encodes its own transaction right after reserving, in
//     parallel; with OFF the flusher encodes the group serially, as MySQL's
//     flush stage does.
//  3. write (flusher goroutine): the contiguous prefix of encoded
//     transactions is appended to the binlog file with one write.
//  4. sync (flusher): the group is closed when the sync delay
//     (binlog_group_commit_sync_delay) expires, when no_delay_count
//     transactions are queued, or when a transaction waits for a row lock
//     held by one in the queue; then fsync per the durability policy.
//     Without a sync delay, a group that will be synced gathers: it waits,
//     at most half a recent fsync time, for the sessions that committed
//     recently (policy.go says why: cohorts on a slow disk).
//     The flusher then publishes the new end of the binlog: dump threads
//     may send the group to replicas.
//  5. apply (committer goroutine): the group's batches are applied to
//     storage in order with the binlog position they reach, and become
//     visible. With semi-sync AFTER_SYNC the committer first waits for
//     replicas to acknowledge the group's end position; with AFTER_COMMIT
//     it waits after applying. Only this goroutine waits, once per group,
//     while the flusher goes on writing and syncing later groups.
//  6. release: each transaction's Commit returns; its caller releases locks
//     and answers the client.
//
// If a write or fsync fails, the pipeline stops: the failing group and every
// later transaction get the error, nothing of theirs reaches storage, and no
// further commit is accepted. A transaction is never acknowledged unless its
// bytes were written (and synced, if the policy says so). A write that
// failed for lack of space is the exception: it is cut back and undone
// (rewind), and commits resume once space is freed. If applying a group to
// storage fails, that group and every later one get the error and none is
// applied (they are in the binlog, and a restart replays them).
//
// DDL is exclusive: commitMu is held shared by every commit from reserve
// to release (for Submit, until the committer finishes it), and
// exclusively by CommitExclusive, which therefore builds and commits its
// statement with nothing else in flight. Barrier takes it for a moment to
// wait out what is in flight.
//
// The pipeline's I/O is at its edges: it writes through a Log (the binlog)
// and applies through a Store (storage), and its decisions (when a group
// closes, when to sync, where to wait for replicas) are pure functions in
// policy.go.
package commit

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// Trx is one transaction to commit.
type Trx struct {
	Events *binlog.TrxEvents
	Batch  *storage.Batch
	// WriteSet holds hashes of the keys the transaction changed, for
	// WRITESET dependency tracking. Nil means "depends on everything before"
	// (DDL, or a write set that could not be computed).
	WriteSet []uint64
	// Caller says who commits, for the global read lock (readlock.go).
	Caller
	// Catalog is set for DDL; it is published after the batch is applied.
	Catalog *storage.CatalogChange
	// ForceSync makes the group durable whatever the sync policy (DDL is
	// always durable, as MySQL 8's atomic DDL is).
	ForceSync bool
	// KeepGTID commits under the GTID already in GTID.SID/GNO instead of
	// assigning one (a replica applying its source's transactions, or
	// gtid_next). GTID.OriginalCommitUS, when set, is kept in any case.
	KeepGTID bool

	// Results.
	GTID binlog.GTIDInfo
	End  binlog.Position

	start        binlog.Position
	rotateBefore bool
	prevGTIDs    binlog.GTIDSet
	buf          []byte
	size         uint64
	rotateOnly   bool // FLUSH BINARY LOGS marker: no events, no GTID
	encoded      atomic.Bool
	selfEncode   bool // encoded by its own goroutine (parallel flush)
	async        bool // submitted with Submit: the committer releases commitMu
	err          error
	done         chan struct{}
}

// CatalogTrx builds the transaction of a DDL statement: catalog change c,
// logged as a Catalog event and the statement's Query event, with the
// storage batch that applies it.
func CatalogTrx(store *storage.Engine, c *storage.CatalogChange, db, query string, opts binlog.QueryOptions) (*Trx, error) {
	var ev binlog.TrxEvents
	ev.AddCatalog(c.Encode())
	opts.SuppressUse = c.Op == "create_db" || c.Op == "drop_db"
	ev.AddQuery(db, query, opts)
	b := store.NewBatch()
	if err := store.PrepareCatalog(b, c); err != nil {
		b.Close()
		return nil, err
	}
	return &Trx{Events: &ev, Batch: b, Catalog: c}, nil
}

// Config holds the pipeline's settings. Dynamic ones are read per group.
type Config struct {
	ServerID   uint32
	ServerUUID binlog.UUID
	// SyncBinlog: 1 fsync every group, N every N groups, 0 leave it to the OS.
	SyncBinlog atomic.Int64
	// FlushLogAtTrxCommit (innodb_flush_log_at_trx_commit): 1 demands a
	// durable commit (fsync every group, whatever sync_binlog says); 0 and 2
	// fsync the binlog once a second when sync_binlog does not.
	FlushLogAtTrxCommit atomic.Int64
	SyncDelay           atomic.Int64 // microseconds
	NoDelayCount        atomic.Int64
	// Gather lets a group without a sync delay wait for the sessions that
	// committed recently (policy.go).
	Gather        atomic.Bool
	ParallelFlush atomic.Bool
	MaxBinlogSize atomic.Int64
	Tracking      atomic.Int32 // a Tracking value
	HistorySize   atomic.Int64
	// Observer, if set before New, is told of every group and fsync (for
	// histograms); it must be cheap and must not block.
	Observer Observer
	// Acks, if set before New, holds each group back until replicas have
	// acknowledged it (semi-synchronous replication).
	Acks AckWaiter
	// Clock, if set before New, is the wall clock that dates events and
	// binlog files (nil: time.Now). Only those dates come from it: when a
	// group closes and when it syncs are measured on the monotonic clock,
	// so a jump of the wall clock, either way, changes no decision and
	// holds no commit back (TestCrashRecoveryUnderClockJumps).
	Clock func() time.Time
	// Warn, if set before New, is told when the pipeline stops on a
	// failed write or sync, and when the disk starts refusing binlog
	// writes and takes them again (one line each per episode), with the
	// binlog's last synced end: after a restart, a binlog that ends
	// before it lost bytes an fsync had reported durable.
	Warn func(msg string, args ...any)
}

// AckWaiter is semi-synchronous replication as the pipeline sees it.
type AckWaiter interface {
	// WaitPoint reports whether groups wait at all and, if so, whether they
	// wait before they are applied (AFTER_SYNC: nobody sees a transaction
	// that no replica has) or after (AFTER_COMMIT).
	WaitPoint() (wait, afterSync bool)
	// WaitAck returns when replicas have acknowledged the binlog up to end,
	// or when it gives up (timeout, no replicas, shutdown). trxs is the
	// number of transactions waiting.
	WaitAck(end binlog.Position, trxs int)
}

// Observer receives per-group measurements.
type Observer interface {
	GroupCommitted(size int)
	Fsynced(d time.Duration)
}

// Stats are the pipeline's counters (MySQL/MariaDB status names in
// comments).
type Stats struct {
	Commits         atomic.Uint64 // Binlog_commits
	Groups          atomic.Uint64 // Binlog_group_commits
	TriggerCount    atomic.Uint64 // Binlog_group_commit_trigger_count
	TriggerTimeout  atomic.Uint64 // Binlog_group_commit_trigger_timeout
	TriggerLockWait atomic.Uint64 // Binlog_group_commit_trigger_lock_wait
	// Gathering (policy.go): groups that waited, and for how long.
	GatherWaits atomic.Uint64
	GatherNanos atomic.Uint64
	// InCommitAtSync sums, over the fsyncs of groups, the transactions in
	// the pipeline (reserved and not yet released) when the fsync began:
	// divided by the fsyncs, how many could have shared one.
	InCommitAtSync atomic.Uint64
	BytesWritten   atomic.Uint64 // Binlog_bytes_written
	Fsyncs         atomic.Uint64
	FsyncNanos     atomic.Uint64
	RotateCount    atomic.Uint64
}

// ErrStopped is returned once the pipeline has failed or closed.
var ErrStopped = errors.New("binlog is not accepting commits")

// ErrOutcomeUnknown wraps the error of a transaction whose bytes may be
// in the binlog when the pipeline stopped under it: its group's fsync
// failed (the OS may have written the bytes or not), its group's write
// failed part-way and could not be cut back, or its group was written
// and its apply to storage failed (a restart replays the binlog). It was
// not acknowledged, and it may be there after a restart, so it must not
// be reported as refused: a client that took it for refused and ran it
// again could apply it twice. Transactions queued behind the group were
// never written and get a plain error.
var ErrOutcomeUnknown = errors.New("the transaction may have been committed")

// ErrGTIDExecuted is returned for a KeepGTID transaction whose GTID is
// already in the executed set.
var ErrGTIDExecuted = errors.New("GTID already executed")

// Log is the durable log the pipeline appends to: the binlog
// (*binlog.Log). Only the flusher calls it, except Close.
type Log interface {
	// Current is the position the next Append writes at.
	Current() binlog.Position
	Append(b []byte) error
	Sync() error
	// Rotate ends the current file and starts the next, whose header
	// records prev as its Previous_gtids.
	Rotate(now time.Time, prev binlog.GTIDSet) error
	// Rewind cuts the current file back to to, undoing appends that were
	// never published.
	Rewind(to binlog.Position) error
	// Publish lets readers (dump threads) see everything appended so far.
	Publish()
	// Name is the name of file number n, for messages.
	Name(n int) string
	Close() error
}

// Store is where committed groups become visible: storage
// (*storage.Engine). Only the committer calls Apply and PublishCatalog.
type Store interface {
	NewBatch() *storage.Batch
	// Apply applies the batches in order, recording the binlog position
	// each reaches and whether those bytes were synced.
	Apply(batches []*storage.Batch, ends []binlog.Position, synced bool) error
	// PublishCatalog makes an applied DDL's catalog change visible.
	PublishCatalog(c *storage.CatalogChange)
}

// Pipeline commits transactions. Create with New, stop with Close.
type Pipeline struct {
	cfg   *Config
	log   Log
	store Store
	Stats Stats

	wbuf []byte // the write stage's group buffer, reused

	mu       sync.Mutex // reserve stage
	nextGNO  uint64
	nextSeq  int64
	pos      binlog.Position // end of the last reservation
	gtids    binlog.GTIDSet  // every GTID reserved so far
	tracker  tracker
	failed   error
	closed   bool
	commitMu sync.RWMutex // DDL excludes other commits (see CommitExclusive)
	readLock readLock     // FLUSH TABLES WITH READ LOCK (readlock.go)
	// backupLock holds DDL back: LOCK INSTANCE FOR BACKUP (readlock.go).
	backupLock readLock

	qmu      sync.Mutex
	queue    []*Trx
	kick     chan struct{}
	lockWait atomic.Bool
	// arrived and arrivedBefore are when the newest queued transaction
	// and the one before it were queued (since epoch; under qmu).
	arrived, arrivedBefore time.Duration
	inCommit               atomic.Int64 // transactions reserved and not yet released
	epoch                  time.Time    // origin of the flusher's gathering clock

	groups    chan handoff
	committed atomic.Int64 // highest sequence_number visible in storage
	// ownVisible counts transactions committed under their own new GTID
	// (not KeepGTID: a replica applier's), once visible in storage.
	ownVisible atomic.Uint64
	visMu      sync.Mutex
	visible    binlog.GTIDSet // GTIDs of transactions visible in storage
	wg         sync.WaitGroup
	quit       chan struct{}
}

// New starts a pipeline appending to log and applying to store. gtids is
// the executed GTID set.
func New(cfg *Config, log Log, store Store, gtids binlog.GTIDSet) *Pipeline {
	p := &Pipeline{
		cfg:     cfg,
		log:     log,
		store:   store,
		pos:     log.Current(),
		gtids:   gtids.Clone(),
		visible: gtids.Clone(),
		kick:    make(chan struct{}, 1),
		groups:  make(chan handoff, 64),
		quit:    make(chan struct{}),
		epoch:   time.Now(),

		backupLock: readLock{ownerPasses: true},
	}
	p.nextGNO = gtids.MaxGNO(cfg.ServerUUID) + 1
	// sequence_number restarts in every binlog file, as in MySQL, and Open
	// always starts a new file.
	p.nextSeq = 1
	p.committed.Store(0)
	p.tracker.reset(0)
	p.wg.Add(2)
	go p.flusher()
	go p.committer()
	return p
}

// GTIDExecuted returns a copy of every GTID committed or being committed.
func (p *Pipeline) GTIDExecuted() binlog.GTIDSet {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gtids.Clone()
}

// Executed reports whether a GTID is committed or being committed, without
// copying the set.
func (p *Pipeline) Executed(sid binlog.UUID, gno uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gtids.Contains(sid, gno)
}

// GTIDVisible returns a copy of the GTIDs of every transaction visible in
// storage (@@gtid_executed: a transaction is in it once it has committed).
func (p *Pipeline) GTIDVisible() binlog.GTIDSet {
	p.visMu.Lock()
	defer p.visMu.Unlock()
	return p.visible.Clone()
}

// Committed is the highest sequence_number visible in storage.
func (p *Pipeline) Committed() int64 { return p.committed.Load() }

// OwnCommits counts the transactions that got a new GTID here (the server's
// own clients, not a replica applier's KeepGTID commits), each counted once
// its writes are visible in storage. A reader that saw the count unchanged
// across an interval knows no such transaction became visible in it.
func (p *Pipeline) OwnCommits() uint64 { return p.ownVisible.Load() }

// Err returns the error that stopped the pipeline, if any.
func (p *Pipeline) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed
}

// EndSession forgets a session's WRITESET_SESSION history (call when the
// client disconnects).
func (p *Pipeline) EndSession(id uint64) {
	p.mu.Lock()
	delete(p.tracker.sessions, id)
	p.mu.Unlock()
}

// NotifyLockWait tells the flusher that a transaction is waiting for a row
// lock held by a committing transaction: the current group closes at once
// instead of waiting out the sync delay or gathering.
func (p *Pipeline) NotifyLockWait() {
	if p.cfg.SyncDelay.Load() > 0 || p.cfg.Gather.Load() {
		p.lockWait.Store(true)
		p.kickFlusher()
	}
}

func (p *Pipeline) kickFlusher() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Barrier returns once every transaction submitted before it is durable
// (per policy) and visible, or failed. Commits that start meanwhile wait
// for it, briefly.
func (p *Pipeline) Barrier() {
	p.commitMu.Lock()
	//lint:ignore SA2001 taking the lock is the wait; nothing is guarded
	p.commitMu.Unlock()
}

// Commit commits t and returns once it is durable (per policy) and visible,
// or with the error that stopped it.
func (p *Pipeline) Commit(t *Trx) error {
	if err := p.readLock.enter(t.Ctx, t.Session, t.LockWait); err != nil {
		return err
	}
	defer p.readLock.exit()
	p.commitMu.RLock()
	defer p.commitMu.RUnlock()
	return p.commit(t)
}

// Submit puts t in the pipeline and returns once its place in the commit
// order is reserved, without waiting for it to be durable and visible; Wait
// does that. Transactions submitted one after another commit in that order,
// so a single goroutine can keep many in flight (a replica's applier). An
// error means t was not submitted.
//
// A submitted transaction may have been built from the effects of those
// submitted before it, not yet visible: its last_committed is the
// transaction before it, or under WRITESET the last writer of its keys,
// never merely what was visible when it entered (Commit's rule, sound only
// for a transaction that held its row locks until then).
func (p *Pipeline) Submit(t *Trx) error {
	if err := p.readLock.enter(t.Ctx, t.Session, t.LockWait); err != nil {
		return err
	}
	p.commitMu.RLock()
	t.async = true
	if err := p.reserve(t); err != nil {
		p.commitMu.RUnlock()
		p.readLock.exit()
		return err
	}
	return nil
}

// Wait returns when a submitted t is durable (per policy) and visible, or
// with the error that stopped it.
func (t *Trx) Wait() error {
	<-t.done
	return t.err
}

// Done is closed when a submitted t has committed or failed.
func (t *Trx) Done() <-chan struct{} { return t.done }

// CommitExclusive commits a DDL statement while no other transaction is in
// the pipeline: it waits for commits in flight, holds new ones back, and
// only then calls build, so the statement's storage effects (an index
// build, say) are computed from a state no concurrent commit can change
// before it is applied.
//
// c is who commits, for the global read lock.
func (p *Pipeline) CommitExclusive(c Caller, build func() (*Trx, error)) error {
	if err := p.backupLock.enter(c.Ctx, c.Session, c.LockWait); err != nil {
		return err
	}
	defer p.backupLock.exit()
	if err := p.readLock.enter(c.Ctx, c.Session, c.LockWait); err != nil {
		return err
	}
	defer p.readLock.exit()
	p.commitMu.Lock()
	defer p.commitMu.Unlock()
	t, err := build()
	if err != nil {
		return err
	}
	t.Caller = c
	t.ForceSync = true
	return p.commit(t)
}

func (p *Pipeline) commit(t *Trx) error {
	if err := p.reserve(t); err != nil {
		return err
	}
	return t.Wait()
}

// reserve runs stage 1 for t, starts its encoding and queues it.
func (p *Pipeline) reserve(t *Trx) error {
	t.Events.Close()
	t.done = make(chan struct{})
	parent := p.committed.Load()
	now := time.Now()
	wall := now
	if p.cfg.Clock != nil {
		wall = p.cfg.Clock()
	}
	us := uint64(wall.UnixMicro())
	if t.GTID.OriginalCommitUS == 0 {
		t.GTID.OriginalCommitUS = us
	}
	t.GTID.ImmediateCommitUS = us
	t.size = t.Events.FinalSize(t.GTID.OriginalCommitUS != us)

	// 1. reserve
	p.mu.Lock()
	if err := p.stoppedLocked(); err != nil {
		p.mu.Unlock()
		return err
	}
	if p.pos.Pos >= p.cfg.MaxBinlogSize.Load() {
		// Rotate before this transaction: the Rotate event ends the current
		// file and the next file starts with its header.
		t.rotateBefore = true
		t.prevGTIDs = p.gtids.Clone()
		p.pos = binlog.Position{File: p.pos.File + 1, Pos: binlog.HeaderLen(t.prevGTIDs)}
		p.nextSeq = 1
		p.tracker.reset(0)
		parent = 0
	}
	if t.KeepGTID {
		if p.gtids.Contains(t.GTID.SID, t.GTID.GNO) {
			p.mu.Unlock()
			return fmt.Errorf("%w: %s:%d", ErrGTIDExecuted, t.GTID.SID, t.GTID.GNO)
		}
		if t.GTID.SID == p.cfg.ServerUUID {
			p.nextGNO = max(p.nextGNO, t.GTID.GNO+1)
		}
	} else {
		t.GTID.SID = p.cfg.ServerUUID
		t.GTID.GNO = p.nextGNO
		p.nextGNO++
	}
	t.GTID.SequenceNumber = p.nextSeq
	p.nextSeq++
	commitParent := min(parent, t.GTID.SequenceNumber-1)
	if t.async {
		// Submitted behind transactions not yet visible, whose effects
		// it may have read (a replica's applier reads through them):
		// that it entered commit after the last visible one proves
		// nothing, so in commit order it follows the one before it.
		// Its write set, under WRITESET, can still say more.
		commitParent = t.GTID.SequenceNumber - 1
	}
	t.GTID.LastCommitted = p.tracker.lastCommitted(Tracking(p.cfg.Tracking.Load()), int(p.cfg.HistorySize.Load()), t.WriteSet, t.GTID.SequenceNumber, commitParent, t.Session)
	t.start = p.pos
	p.pos.Pos += int64(t.size)
	t.End = p.pos
	p.gtids.Add(t.GTID.SID, t.GTID.GNO)
	t.selfEncode = p.cfg.ParallelFlush.Load()
	p.inCommit.Add(1)
	p.qmu.Lock()
	p.queue = append(p.queue, t)
	p.arrivedBefore, p.arrived = p.arrived, now.Sub(p.epoch)
	p.qmu.Unlock()
	p.mu.Unlock()

	// 2. encode, here in parallel, or by the flusher.
	if t.selfEncode {
		p.encode(t)
	}
	p.kickFlusher()
	return nil
}

// stoppedLocked returns the error for a pipeline that failed or closed.
// Called with mu held.
func (p *Pipeline) stoppedLocked() error {
	if p.failed == nil && !p.closed {
		return nil
	}
	err := p.failed
	if err == nil {
		err = ErrStopped
	}
	return fmt.Errorf("%w: %v", ErrStopped, err)
}

// Rotate closes the current binlog file and starts the next (FLUSH BINARY
// LOGS), and returns once the next file is the current one, as MySQL's
// statement does (SHOW BINARY LOGS then lists it). The rotation is
// ordered with commits like a transaction: it waits for those queued
// before it, and holds later ones up only for its turn.
func (p *Pipeline) Rotate() error {
	t := &Trx{rotateOnly: true, selfEncode: true, done: make(chan struct{})}
	t.encoded.Store(true)
	p.mu.Lock()
	if err := p.stoppedLocked(); err != nil {
		p.mu.Unlock()
		return err
	}
	t.rotateBefore = true
	t.prevGTIDs = p.gtids.Clone()
	p.pos = binlog.Position{File: p.pos.File + 1, Pos: binlog.HeaderLen(t.prevGTIDs)}
	p.nextSeq = 1
	p.tracker.reset(0)
	t.start, t.End = p.pos, p.pos
	p.qmu.Lock()
	p.queue = append(p.queue, t)
	p.qmu.Unlock()
	p.mu.Unlock()
	p.kickFlusher()
	return t.Wait()
}

func (p *Pipeline) encode(t *Trx) {
	t.buf = t.Events.Finalize(make([]byte, 0, t.size), uint64(t.start.Pos), uint32(t.GTID.ImmediateCommitUS/1e6), p.cfg.ServerID, t.GTID)
	t.encoded.Store(true)
}

// flusher runs stages 3 and 4.
func (p *Pipeline) flusher() {
	defer p.wg.Done()
	defer close(p.groups)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var policy syncPolicy
	var seen committers
	// synced is the binlog's end at the last successful sync; refusing
	// says the disk refused the last group's write (rewind).
	synced := p.log.Current()
	refusing := false
	for {
		select {
		case <-p.kick:
		case <-tick.C:
			if policy.tick(p.cfg.FlushLogAtTrxCommit.Load()) {
				if _, err := p.sync(); err != nil {
					p.fail(err, nil, synced)
					return
				}
				synced = p.log.Current()
				policy.synced()
			}
			continue
		case <-p.quit:
			if policy.dirty {
				_, _ = p.sync()
			}
			return
		}
		var plan gather
		gathering := p.cfg.Gather.Load()
		if gathering {
			plan = seen.plan(time.Since(p.epoch), policy.willSync(p.cfg.SyncBinlog.Load(), p.cfg.FlushLogAtTrxCommit.Load()))
		} else {
			seen.forget()
		}
		trigger := p.waitForGroup(plan)
		group := p.takeEncodedPrefix()
		// A lock wait noticed so far concerns a transaction now in group
		// (or released): it must not close the next group.
		p.lockWait.Store(false)
		if len(group) == 0 {
			continue
		}
		if gathering {
			now := time.Since(p.epoch)
			for _, t := range group {
				seen.grouped(t.Session, now)
			}
		}
		switch trigger {
		case triggerCount:
			p.Stats.TriggerCount.Add(1)
		case triggerTimeout:
			p.Stats.TriggerTimeout.Add(1)
		case triggerLockWait:
			p.Stats.TriggerLockWait.Add(1)
		}
		// 3. write
		if err := p.write(group); err != nil {
			if p.rewind(err, group, synced, !refusing) {
				refusing = true
				continue
			}
			p.fail(err, group, synced)
			return
		}
		if refusing {
			refusing = false
			p.warn("the disk takes binlog writes again", "synced_end", p.posName(synced))
		}
		// 4. sync
		force, trxs := false, 0
		for _, t := range group {
			force = force || t.ForceSync
			if !t.rotateOnly {
				trxs++
			}
		}
		if policy.written(force, p.cfg.SyncBinlog.Load(), p.cfg.FlushLogAtTrxCommit.Load()) {
			p.Stats.InCommitAtSync.Add(uint64(p.inCommit.Load()))
			d, err := p.sync()
			if err != nil {
				p.fail(err, group, synced)
				return
			}
			synced = p.log.Current()
			seen.synced(d)
			policy.synced()
		}
		g := handoff{trxs: group, count: trxs, synced: !policy.dirty, ack: p.ackWaitPoint(trxs)}
		// Replicas may read the group now: under AFTER_SYNC semi-sync the
		// committer waits for their acknowledgement before applying it.
		// The goroutine woken last runs next on this thread, so when the
		// committer will only wait for a replica, the dump that serves the
		// replica is woken last; otherwise the committer is.
		p.Stats.Groups.Add(1)
		if p.cfg.Observer != nil {
			p.cfg.Observer.GroupCommitted(len(group))
		}
		if g.ack == ackBeforeApply {
			p.groups <- g
			p.log.Publish()
		} else {
			p.log.Publish()
			p.groups <- g
		}
		// More may have queued while we wrote and synced.
		p.qmu.Lock()
		more := len(p.queue) > 0
		p.qmu.Unlock()
		if more {
			p.kickFlusher()
		}
	}
}

// handoff is what the flusher hands the committer: transactions written
// (and synced, if synced) to the binlog, in order; count of them are
// transactions (not rotations), and ack is where the group waits for
// replicas.
type handoff struct {
	trxs   []*Trx
	count  int
	synced bool
	ack    ackPoint
}

// waitForGroup applies the sync delay or gathers as g says (closeGroup
// has the rules) and returns why the group closed.
func (p *Pipeline) waitForGroup(g gather) trigger {
	delay := time.Duration(p.cfg.SyncDelay.Load()) * time.Microsecond
	if delay <= 0 && (g.patience <= 0 || g.expected <= 1) {
		// closeGroup's first rule, answered before reading the clock or
		// taking the queue's lock: the usual case costs nothing per group.
		return triggerNone
	}
	count := int(p.cfg.NoDelayCount.Load())
	start := time.Now()
	if delay <= 0 {
		p.qmu.Lock()
		g.quiet = max(p.arrived-p.arrivedBefore, start.Sub(p.epoch)-p.arrived)
		p.qmu.Unlock()
	}
	last, first, prev := start, -1, 0
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for waited := false; ; waited = true {
		p.qmu.Lock()
		n := len(p.queue)
		p.qmu.Unlock()
		now := time.Now()
		if first < 0 {
			first, prev = n, n
		} else if n > prev {
			last, prev = now, n
		}
		st := groupState{queued: n, lockWait: p.lockWait.Load(), elapsed: now.Sub(start), arrived: n - first, lull: now.Sub(last)}
		t, wait := closeGroup(delay, count, st, g)
		if t != triggerOpen {
			if waited && delay <= 0 {
				p.Stats.GatherWaits.Add(1)
				p.Stats.GatherNanos.Add(uint64(now.Sub(start)))
			}
			return t
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-timer.C:
		case <-p.kick:
		case <-p.quit:
			return triggerNone
		}
	}
}

// takeEncodedPrefix removes the queued transactions up to the first one
// still being encoded by its own goroutine (which kicks the flusher when
// done), encoding the others here.
func (p *Pipeline) takeEncodedPrefix() []*Trx {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	n := 0
	for ; n < len(p.queue); n++ {
		t := p.queue[n]
		if t.selfEncode {
			if !t.encoded.Load() {
				break
			}
		} else {
			p.encode(t)
		}
	}
	group := append([]*Trx(nil), p.queue[:n]...)
	p.queue = p.queue[n:]
	return group
}

// maxKeptWriteBuffer bounds the group buffer kept between groups.
const maxKeptWriteBuffer = 4 << 20

func (p *Pipeline) write(group []*Trx) error {
	// A group's events are copied into one buffer, kept for the next group
	// (only this goroutine writes). A lone transaction is written from
	// its own buffer.
	buf := p.wbuf[:0]
	defer func() {
		if len(group) > 1 && cap(buf) <= maxKeptWriteBuffer {
			p.wbuf = buf[:0]
		}
	}()
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		err := p.log.Append(buf)
		p.Stats.BytesWritten.Add(uint64(len(buf)))
		buf = buf[:0]
		return err
	}
	for _, t := range group {
		if t.rotateBefore {
			if err := flush(); err != nil {
				return err
			}
			if err := p.log.Rotate(p.wallNow(), t.prevGTIDs); err != nil {
				return err
			}
			p.Stats.RotateCount.Add(1)
		}
		if cur := p.log.Current(); cur != t.start && len(buf) == 0 {
			return fmt.Errorf("binlog position mismatch: writing %v at %v", t.start, cur)
		}
		if len(group) == 1 {
			buf = t.buf
		} else {
			buf = append(buf, t.buf...)
		}
	}
	return flush()
}

// wallNow is the time of day that dates events and files (Config.Clock).
func (p *Pipeline) wallNow() time.Time {
	if p.cfg.Clock != nil {
		return p.cfg.Clock()
	}
	return time.Now()
}

// sync syncs the binlog and returns how long it took.
func (p *Pipeline) sync() (time.Duration, error) {
	start := time.Now()
	err := p.log.Sync()
	d := time.Since(start)
	p.Stats.Fsyncs.Add(1)
	p.Stats.FsyncNanos.Add(uint64(d))
	if p.cfg.Observer != nil {
		p.cfg.Observer.Fsynced(d)
	}
	return d, err
}

// ErrWriteRefused wraps a binlog write the disk refused (full, or
// read-only: storage.IsWriteRefused) and that was undone: the
// transactions it carried and those queued behind it were not committed;
// later ones are tried again.
var ErrWriteRefused = errors.New("the disk refused the binlog write; the transaction was not committed")

// rewind undoes a group whose write the disk refused, so that commits
// resume by themselves once space is freed or the disk is writable
// again, instead of stopping the pipeline: the file is cut back to where
// the group started, the group and everything queued behind it fail with
// ErrWriteRefused, and the
// reservations they made (positions, GTID numbers, sequence numbers,
// dependency history) are taken back, so the next transaction is reserved
// as if they had never been. None of them was acknowledged, published to
// replicas or applied. A group that rotated the file, and a write the log
// cannot cut back, still stop the pipeline.
//
// If first, the episode of refusals starts here: it is logged, with
// synced, the binlog's end at the last successful sync.
func (p *Pipeline) rewind(err error, group []*Trx, synced binlog.Position, first bool) bool {
	if !storage.IsWriteRefused(err) {
		return false
	}
	for _, t := range group {
		if t.rotateBefore {
			return false
		}
	}
	start := group[0].start
	if p.log.Rewind(start) != nil {
		return false
	}
	p.mu.Lock()
	p.qmu.Lock()
	failed := append(group, p.queue...)
	p.queue = nil
	p.qmu.Unlock()
	var gone binlog.GTIDSet
	for _, t := range failed {
		if !t.rotateOnly {
			gone.Add(t.GTID.SID, t.GTID.GNO)
		}
	}
	p.gtids = p.gtids.Subtract(gone)
	p.nextGNO = p.gtids.MaxGNO(p.cfg.ServerUUID) + 1
	p.pos = start
	p.nextSeq = group[0].GTID.SequenceNumber
	p.tracker.rollback(p.nextSeq - 1)
	p.mu.Unlock()
	if first {
		p.warn("the disk refused a binlog write: commits fail until it takes writes again", "error", err, "synced_end", p.posName(synced))
	}
	err = fmt.Errorf("%w: %w", ErrWriteRefused, err)
	for _, t := range failed {
		if t.Batch != nil {
			t.Batch.Close()
		}
		p.finish(t, err)
	}
	return true
}

// fail stops the pipeline: group and everything queued get err. synced
// is the binlog's end at the last successful sync, for the log.
func (p *Pipeline) fail(err error, group []*Trx, synced binlog.Position) {
	p.warn("a binlog write or sync failed: refusing further commits until restarted", "error", err, "synced_end", p.posName(synced))
	err = fmt.Errorf("binlog write failed, refusing further commits: %w", err)
	unknown := fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	p.mu.Lock()
	p.failed = err
	p.qmu.Lock()
	rest := p.queue
	p.queue = nil
	p.qmu.Unlock()
	p.mu.Unlock()
	for i, t := range append(group, rest...) {
		if t.Batch != nil {
			t.Batch.Close()
		}
		if i < len(group) {
			p.finish(t, unknown) // its bytes may be in the binlog
		} else {
			p.finish(t, err) // never written
		}
	}
}

// posName names binlog position pos as file:offset.
func (p *Pipeline) posName(pos binlog.Position) string {
	return fmt.Sprintf("%s:%d", p.log.Name(pos.File), pos.Pos)
}

// warn passes msg to Config.Warn, if set.
func (p *Pipeline) warn(msg string, args ...any) {
	if p.cfg.Warn != nil {
		p.cfg.Warn(msg, args...)
	}
}

// finish releases t's committer with err.
func (p *Pipeline) finish(t *Trx, err error) {
	if !t.rotateOnly {
		p.inCommit.Add(-1)
	}
	t.err = err
	async := t.async
	close(t.done)
	if async {
		p.commitMu.RUnlock()
		p.readLock.exit()
	}
}

// ackWaitPoint is where a group of trxs transactions waits for replicas.
func (p *Pipeline) ackWaitPoint(trxs int) ackPoint {
	if p.cfg.Acks == nil {
		return ackNone
	}
	wait, afterSync := p.cfg.Acks.WaitPoint()
	return waitPoint(wait, afterSync, trxs)
}

// committer runs stage 5: apply in order, make visible, release.
//
// Once an apply has failed, no later group is applied: storage would show
// a transaction without one committed before it. Those groups are in the
// binlog, like the failed one, so a restart replays them all; here their
// transactions get the error.
func (p *Pipeline) committer() {
	defer p.wg.Done()
	batches := make([]*storage.Batch, 0, 64)
	ends := make([]binlog.Position, 0, 64)
	var applyErr error
	for g := range p.groups {
		group := g.trxs
		if applyErr != nil {
			for _, t := range group {
				if t.Batch != nil {
					t.Batch.Close()
				}
				p.finish(t, applyErr)
			}
			continue
		}
		batches, ends = batches[:0], ends[:0]
		for _, t := range group {
			if t.Batch == nil {
				t.Batch = p.store.NewBatch()
			}
			if !t.rotateOnly {
				t.Batch.SetGTID(t.GTID.SID, t.GTID.GNO)
			}
			batches = append(batches, t.Batch)
			ends = append(ends, t.End)
		}
		last := group[len(group)-1]
		if g.ack == ackBeforeApply {
			p.cfg.Acks.WaitAck(last.End, g.count)
		}
		err := p.store.Apply(batches, ends, g.synced)
		if err != nil {
			applyErr = fmt.Errorf("%w: storage apply failed after the binlog was written: %w", ErrOutcomeUnknown, err)
			p.mu.Lock()
			p.failed = applyErr
			p.mu.Unlock()
			for _, t := range group {
				p.finish(t, applyErr)
			}
			continue
		}
		for _, t := range group {
			if t.Catalog != nil {
				p.store.PublishCatalog(t.Catalog)
			}
		}
		p.committed.Store(last.GTID.SequenceNumber)
		own := 0
		for _, t := range group {
			if !t.rotateOnly && !t.KeepGTID {
				own++
			}
		}
		if own > 0 {
			p.ownVisible.Add(uint64(own))
		}
		p.visMu.Lock()
		for _, t := range group {
			if !t.rotateOnly {
				p.visible.Add(t.GTID.SID, t.GTID.GNO)
			}
		}
		p.visMu.Unlock()
		p.Stats.Commits.Add(uint64(g.count))
		if g.ack == ackAfterApply {
			p.cfg.Acks.WaitAck(last.End, g.count)
		}
		for _, t := range group {
			p.finish(t, nil)
		}
	}
}

// Close stops the pipeline after the queued transactions are committed.
func (p *Pipeline) Close() error {
	p.commitMu.Lock()
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.commitMu.Unlock()
	close(p.quit)
	p.wg.Wait()
	return p.log.Close()
}

// Config returns the pipeline's settings (their atomics may be changed
// while it runs).
func (p *Pipeline) Config() *Config { return p.cfg }
