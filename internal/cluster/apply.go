package cluster

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/raftlog"
	"github.com/lockstepdb/lockstep/internal/storage"
	"go.etcd.io/raft/v3/raftpb"
)

// Applier makes committed entries visible in the store, in log order,
// with several threads (Galera's wsrep_applier_threads).
//
// Every node applies every transaction the same way, from its events
// (storage.PrepareReplay: rows and catalog changes), the origin included,
// whose own write buffer is not used: one path, and the store holds
// exactly what the log says. Each apply records the entry's end in this
// node's binlog as the store's position, so after a restart the store
// names the last entry it holds (raftlog.IndexAt) and raft hands out the
// entries after it again: nothing is applied twice or skipped.
//
// Applying a transaction is two steps. Preparing decodes its row images
// and builds its storage batch (keys, index entries): most of the work,
// and for a table with a primary key it reads nothing from the store, so
// the preparers take transactions in parallel, in any order, with no
// dependency between them. Committing applies the prepared batches in log
// order, a run of consecutive ones in one store commit, so transactions
// become visible in log order and never out of it: this is where
// Galera's appliers wait for their commit order, and it costs one store
// commit per run instead of one per transaction.
//
// What cannot be prepared ahead is prepared in its turn, once everything
// before it is visible: a catalog change (DDL), rows of a table without a
// primary key (their hidden keys depend on the rows stored), and any
// transaction prepared against a catalog that changed since
// (storage.Stale). A catalog change is committed alone.
//
// Certification gives each transaction a logical clock (last_committed,
// sequence_number), written in its GTID event for replicas of the
// member; the applier needs it only for wsrep_cert_deps_distance: the
// mean distance from a transaction back to the newest one it must
// follow, the last it conflicts with or, if that is older, its snapshot
// (as Galera counts from the last seqno a write set had seen), so about
// how many transactions could be applied at once.
type Applier struct {
	sid   binlog.UUID
	store *storage.Engine
	log   *raftlog.Log
	gno   atomic.Uint64 // GTID number of the last transaction applied

	threads atomic.Int32 // preparing goroutines wanted (1: prepare in turn)
	work    chan []*applyJob
	mu      sync.Mutex
	running int // helpers started
	quit    chan struct{}

	// Statistics: transactions applied, the sum of their dependency
	// distances, and of the ones prepared ahead.
	trxs, depsDistance, ahead atomic.Uint64
}

// applyJob is one transaction entry on its way through the applier.
type applyJob struct {
	e       *raftpb.Entry
	snap    uint64 // the transaction's snapshot (Meta.Snapshot)
	trx     *binlog.Transaction
	end     binlog.Position
	p       *storage.Prepared
	err     error
	claimed atomic.Bool   // a goroutine took it to prepare
	done    chan struct{} // closed once prepared (by a helper)
}

// maxRun bounds the transactions made visible by one store commit.
const maxRun = 256

// MaxApplierThreads bounds wsrep_applier_threads (Galera allows 512).
const MaxApplierThreads = 512

// NewApplier returns the applier of a node whose store and log are open,
// and the index of the last entry the store holds (raft's Applied). It
// prepares in one thread until SetThreads says otherwise.
func NewApplier(sid binlog.UUID, store *storage.Engine, log *raftlog.Log) (*Applier, uint64, error) {
	a := &Applier{sid: sid, store: store, log: log, work: make(chan []*applyJob, MaxApplierThreads), quit: make(chan struct{})}
	a.threads.Store(1)
	high, err := store.GTIDHighWater()
	if err != nil {
		return nil, 0, err
	}
	a.gno.Store(high[sid])
	var applied uint64
	first, _ := log.FirstIndex()
	if pos := store.Applied(); pos.File == 0 && first > 1 && store.Transferred() {
		// A store copied from another member's at the entry before the
		// log's first (a state transfer), nothing of this log applied
		// yet.
		applied = first - 1
	} else if pos.File != 0 {
		i, ok := log.IndexAt(pos)
		if !ok {
			if high[sid] > 0 || first > 1 {
				return nil, 0, fmt.Errorf("cluster: the store's position %v is not the end of any entry of the raft log", pos)
			}
			// A store that holds only history from before the node's first
			// entry (it never applied one).
		}
		applied = i
	}
	return a, applied, nil
}

// SetThreads sets how many goroutines prepare transactions (1..
// MaxApplierThreads; 1 prepares each in its turn). It takes effect from
// the next entries applied.
func (a *Applier) SetThreads(n int) {
	a.threads.Store(int32(min(max(n, 1), MaxApplierThreads)))
}

// Threads is the number of preparing goroutines set.
func (a *Applier) Threads() int { return int(a.threads.Load()) }

// Close stops the preparers.
func (a *Applier) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-a.quit:
	default:
		close(a.quit)
	}
}

// helpers makes sure n helping goroutines run (they never stop before
// Close: an idle one costs a parked goroutine). A helper given a batch
// prepares, in order, every job of it that no one has claimed yet.
func (a *Applier) helpers(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for ; a.running < n; a.running++ {
		go func() {
			for {
				select {
				case jobs := <-a.work:
					for _, j := range jobs {
						if j.claimed.CompareAndSwap(false, true) {
							a.prepare(j, true)
							a.ahead.Add(1)
							close(j.done)
						}
					}
				case <-a.quit:
					return
				}
			}
		}()
	}
}

// prepare decodes a job's entry and prepares its batch.
func (a *Applier) prepare(j *applyJob, ahead bool) {
	if j.trx == nil {
		meta, events, err := raftlog.DecodeTrx(j.e.Data)
		if err != nil {
			j.err = fmt.Errorf("cluster: entry %d: %w", j.e.Index, err)
			return
		}
		if m, err := DecodeMeta(meta); err == nil {
			j.snap = m.Snapshot
		}
		if j.trx, err = binlog.ParseTransaction(events); err != nil {
			j.err = fmt.Errorf("cluster: entry %d: %w", j.e.Index, err)
			return
		}
	}
	p, err := a.store.PrepareReplay(j.trx, ahead)
	if err != nil {
		j.err = fmt.Errorf("cluster: applying entry %d: %w", j.e.Index, err)
		return
	}
	j.p = p
}

// Apply applies committed entries in order (on the driver's apply loop).
func (a *Applier) Apply(es []raftpb.Entry) error {
	jobs := make([]*applyJob, 0, len(es))
	for i := range es {
		e := &es[i]
		if e.Type != raftpb.EntryNormal || len(e.Data) == 0 {
			continue
		}
		end, ok := a.log.Position(e.Index)
		if !ok {
			return fmt.Errorf("cluster: committed entry %d is not in the log", e.Index)
		}
		jobs = append(jobs, &applyJob{e: e, end: end})
	}
	if len(jobs) == 0 {
		return nil
	}
	// The applier's own goroutine prepares too: it claims each job in
	// its turn unless a helper has, so it never waits for a helper that
	// has not started yet (on a busy machine, helpers may get no CPU).
	helpers := min(a.Threads()-1, len(jobs)-1)
	parallel := helpers > 0
	if parallel {
		a.helpers(helpers)
		for _, j := range jobs {
			j.done = make(chan struct{})
		}
		for range helpers {
			select {
			case a.work <- jobs:
			default: // every helper has a batch already
			}
		}
	}
	var run []*applyJob
	defer func() {
		// Whatever was prepared and not applied (an error stopped the
		// apply) is released.
		for _, j := range run {
			j.p.Close()
		}
	}()
	for i, j := range jobs {
		switch {
		case !parallel:
			a.prepare(j, true)
		case j.claimed.CompareAndSwap(false, true):
			a.prepare(j, true)
		default:
			select {
			case <-j.done:
			case <-a.quit:
				return ErrStopped
			}
		}
		if j.err != nil {
			return j.err
		}
		if j.p.Ordered || a.store.Stale(j.p) {
			// Its turn has come: everything before it is made visible,
			// then it is prepared against the store as it is.
			if err := a.commit(run); err != nil {
				return err
			}
			run = run[:0]
			j.p.Close()
			if a.prepare(j, false); j.err != nil {
				return j.err
			}
		}
		if j.p.ChangesCatalog() {
			if err := a.commit(run); err != nil {
				return err
			}
			run = run[:0]
			if err := a.commit([]*applyJob{j}); err != nil {
				return err
			}
			continue
		}
		run = append(run, j)
		// Nothing is held back waiting: a run is made visible when the
		// next transaction is being prepared by a helper and is not ready
		// yet, and at maxRun.
		next := i + 1
		if next < len(jobs) && len(run) < maxRun {
			if !parallel || !jobs[next].claimed.Load() {
				continue
			}
			select {
			case <-jobs[next].done:
				continue
			default:
			}
		}
		if err := a.commit(run); err != nil {
			return err
		}
		run = run[:0]
	}
	err := a.commit(run)
	run = nil
	return err
}

// commit applies a run of prepared transactions in one store commit.
func (a *Applier) commit(run []*applyJob) error {
	if len(run) == 0 {
		return nil
	}
	ps := make([]*storage.Prepared, len(run))
	ends := make([]binlog.Position, len(run))
	for i, j := range run {
		ps[i], ends[i] = j.p, j.end
	}
	if err := a.store.ApplyPrepared(ps, ends); err != nil {
		return fmt.Errorf("cluster: applying entries %d-%d: %w", run[0].e.Index, run[len(run)-1].e.Index, err)
	}
	for _, j := range run {
		j.p = nil
		g := j.trx.GTID
		if g.SID == a.sid {
			a.gno.Store(g.GNO)
		}
		a.trxs.Add(1)
		if from := max(g.LastCommitted, int64(j.snap)); g.SequenceNumber > from && from >= 0 {
			a.depsDistance.Add(uint64(g.SequenceNumber - from))
		}
	}
	return nil
}

// Snapshot is the GTID number of the last cluster transaction applied: the
// snapshot of a transaction that reads the store now.
func (a *Applier) Snapshot() uint64 { return a.gno.Load() }

// ApplyStats are the applier's counters since it started.
type ApplyStats struct {
	// Transactions applied, and how many of them a helper goroutine
	// prepared (in parallel with the applier's own).
	Transactions, Ahead uint64
	// DepsDistance is the mean distance from a transaction's
	// sequence_number back to the newer of its last_committed and its
	// snapshot (Galera's wsrep_cert_deps_distance).
	DepsDistance float64
}

// Stats returns the applier's counters.
func (a *Applier) Stats() ApplyStats {
	s := ApplyStats{Transactions: a.trxs.Load(), Ahead: a.ahead.Load()}
	if s.Transactions > 0 {
		s.DepsDistance = float64(a.depsDistance.Load()) / float64(s.Transactions)
	}
	return s
}
