package cluster

// Driver runs a Node in real time, and is the way a node's sessions
// commit through the cluster.
//
// One goroutine (Run) owns the node and, on the leader, the certifier: it
// ticks raft's clock, steps incoming messages, takes transactions to
// certify, and after each turn has the node process its Ready, sends the
// messages and hands the committed entries to Apply. A turn takes
// everything already waiting before processing, so transactions that
// arrive together are written and synced together: one fsync per group,
// as the single server's group commit.
//
// The path of a commit (Commit, on any node):
//
//  1. The origin registers the transaction under a new id and sends it to
//     the leader (to its own Run goroutine when it leads).
//  2. The leader certifies it. Refused, it answers the origin with a
//     verdict packet: Commit returns ErrConflict. Passed, it proposes the
//     entry.
//  3. When the entry commits, every node applies it (Apply); the origin,
//     once it has applied it, completes the waiting Commit with the GTID.
//
// If the leader changes first, the outcome is still definite. The leader
// proposes a transaction only in the term its origin sent it in, and in
// a log the entries of a term follow every entry of earlier terms; so
// once the origin applies an entry of a later term, either it applied the
// transaction before (Commit succeeded) or the transaction will never
// commit (ErrNotCommitted, which can be retried). Only when no entry of a later term arrives
// before the context ends is the outcome unknown (ErrOutcomeUnknown).
//
// Every node keeps the certifier state of what it applied (committed,
// fed in log order as entries are applied, starting from its position at
// start). A node that becomes leader certifies with a copy of it that has
// also seen the rest of its log (entries it holds but has not applied):
// the same state as if it had certified its whole log (see certifier.go
// for why that makes certification independent of the leader), without
// reading more than that tail and without pausing the raft loop.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/certify"
	"github.com/lockstepdb/lockstep/internal/raftlog"
	"github.com/lockstepdb/lockstep/internal/storage"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Driver runs one node.
type Driver struct {
	node      *Node
	transport *Transport
	tick      time.Duration
	apply     func([]raftpb.Entry) error
	sid       binlog.UUID

	certs     chan Request // transactions from this node's sessions
	reads     chan *syncWait
	syncs     map[uint64]*syncWait // by request id, until raft answers
	ready     []*syncWait          // answered, until the index is applied
	nextRead  uint64
	state     atomic.Pointer[State]
	done      chan struct{}
	certifier *Certifier // on the leader, owned by Run
	committed *Certifier // of the entries applied (Run's)

	applied uint64 // the last entry applied, as Run last heard (Run's)
	handed  uint64 // the last entry handed to the apply loop (Run's)
	ticks   int    // ticks since Run started (Run's)
	nextTrx atomic.Uint64

	// The apply loop (applyloop.go).
	queue        *applyQueue
	appliedIndex atomic.Uint64 // the last entry the store holds
	handedIndex  atomic.Uint64 // d.handed, for other goroutines
	appliedWake  chan struct{} // cap 1: appliedIndex moved
	applyErr     chan error    // cap 1: apply failed
	applyDone    chan struct{} // closed when the loop has returned

	pacer *pacer // flow control (pacing.go)

	// Service and AppliedGNO, if set before Run, give what the node
	// announces of its server and its applied GTID number (members.go).
	Service    func() map[string]string
	AppliedGNO func() uint64
	// NewStoreSnapshot, if set before Run, takes a consistent view of the
	// node's store, for a joiner's state transfer (transfer.go).
	NewStoreSnapshot func() *storage.Snapshot
	// Witness, set before Run, says the node keeps the log and votes but
	// holds no data (Galera's garbd): elected leader, it hands leadership
	// to the voter furthest along, since joiners ask the leader for a
	// copy of its data.
	Witness   bool
	handOffAt int // ticks before which it does not try again (Run's)
	// This node's own transactions: committed, refused by certification.
	localCommits, localConflicts atomic.Uint64
	certKeys                     atomic.Uint64 // keys the committed certifier holds
	synced                       atomic.Bool   // see watchSync
	startGNO                     uint64        // AppliedGNO when Run started
	pmu                          sync.Mutex
	peers                        map[uint64]Member // last heard (members.go)
	roster                       Roster            // the node's, under pmu
	voters, learners             []uint64          // raft's configuration, under pmu
	change                       *joining          // a change this leader waits for (join.go; Run's)

	mu       sync.Mutex
	waiting  map[uint64]*waiter // by TrxID, until committed or refused
	commited []committedOwn     // committed, until applied, in index order
	// handedTerm is the term of the last entry handed (Run's).
	handedTerm uint64
}

// committedOwn is a Commit whose entry has committed, waiting for this
// node to apply it.
type committedOwn struct {
	index, gno uint64
	w          *waiter
}

// waiter is a Commit waiting for its outcome; term is the term the node
// knew when it sent the transaction.
type waiter struct {
	ch   chan outcome
	term uint64
}

type outcome struct {
	gno uint64
	err error
}

// State is a node's raft state as last seen by its driver.
type State struct {
	ID, Lead, Term, Commit, Applied uint64
	Leader                          bool
}

// NewDriver prepares a driver for cluster UUID sid; Run starts it. apply
// receives the committed entries in order, on the apply loop's goroutine
// (applyloop.go; an Applier's Apply); an error from it stops the node.
func NewDriver(n *Node, t *Transport, sid binlog.UUID, tick time.Duration, apply func([]raftpb.Entry) error) *Driver {
	d := &Driver{node: n, transport: t, sid: sid, tick: tick, apply: apply, certs: make(chan Request, 1024), reads: make(chan *syncWait, 1024), syncs: map[uint64]*syncWait{}, done: make(chan struct{}), waiting: map[uint64]*waiter{}, peers: map[uint64]Member{},
		queue: newApplyQueue(), appliedWake: make(chan struct{}, 1), applyErr: make(chan error, 1), applyDone: make(chan struct{}),
		pacer: newPacer(DefaultFlowConfig)}
	d.state.Store(&State{ID: n.ID()})
	d.SetFlowConfig(DefaultFlowConfig)
	d.roster = n.Roster()
	// Transaction ids must not repeat across restarts: entries of an
	// earlier run are applied again after one, and must not complete a
	// new transaction's Commit. A run numbers its transactions from a
	// random point of the 64-bit space (not the clock, which can step
	// back), so two runs' ranges meet with a chance of about n/2^64.
	d.nextTrx.Store(rand.Uint64())
	return d
}

// Errors of Commit.
var (
	// ErrStopped: the node's driver had stopped before the transaction
	// was sent (a transaction sent before the stop gets
	// ErrOutcomeUnknown: it may commit, and the node apply it when it
	// starts again).
	ErrStopped = errors.New("cluster: node stopped")
	// ErrConflict: certification refused the transaction (1213).
	ErrConflict = errors.New("cluster: the transaction conflicts with one committed on another node since its snapshot")
	// ErrNoLeader: no leader is known (the node is not in a primary
	// component).
	ErrNoLeader = errors.New("cluster: no leader")
	// ErrNotCommitted: the leader changed before the transaction
	// committed, and it did not: it may be run again.
	ErrNotCommitted = errors.New("cluster: the leader changed and the transaction did not commit")
	// ErrOutcomeUnknown: no answer came in time; the transaction may
	// still commit.
	ErrOutcomeUnknown = errors.New("cluster: the transaction's outcome is unknown")
)

// Run drives the node until ctx ends or the log fails (the error).
func (d *Driver) Run(ctx context.Context) error {
	defer close(d.done)
	defer d.failWaiting(ErrOutcomeUnknown) // they were sent
	// Stopped, the node follows no leader: nothing may take it as
	// current (Synced) from a state it had before.
	defer func() {
		d.state.Store(&State{ID: d.node.ID()})
		d.synced.Store(false)
	}()
	if err := d.startCertifier(); err != nil {
		close(d.applyDone)
		return err
	}
	actx, stopApply := context.WithCancel(ctx)
	go d.applyLoop(actx)
	defer func() {
		stopApply()
		<-d.applyDone
	}()
	if d.AppliedGNO != nil {
		d.startGNO = d.AppliedGNO()
	}
	d.noteConfig()
	go d.watchSync(ctx)
	ticker := time.NewTicker(d.tick)
	defer ticker.Stop()
	recv := d.transport.Recv()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-ticker.C:
			d.node.Tick()
			d.flowTick(now)
			if d.ticks++; d.ticks%announceTicks == 0 {
				d.announce()
				d.askAgain()
				d.expireChange()
				d.promote()
			}
		case pk := <-recv:
			d.receive(pk)
		case r := <-d.certs:
			d.certify(r)
		case w := <-d.reads:
			d.readIndex(w)
		case <-d.appliedWake:
			d.applied = d.appliedIndex.Load()
		case err := <-d.applyErr:
			return err
		}
		// Take what else is waiting, then process once.
	more:
		for {
			select {
			case pk := <-recv:
				d.receive(pk)
			case r := <-d.certs:
				d.certify(r)
			case w := <-d.reads:
				d.readIndex(w)
			default:
				break more
			}
		}
		for d.node.HasReady() {
			out, err := d.node.Process(d.transport.Send)
			if err != nil {
				return err
			}
			d.transport.Send(out.Messages)
			if out.Roster != nil {
				d.noteConfig()
				d.changed(*out.Roster)
				if d.node.Removed() {
					return ErrRemoved
				}
			}
			if len(out.Committed) > 0 {
				if err := d.complete(out.Committed); err != nil {
					return err
				}
				d.queue.push(out.Committed)
				d.pacer.handedTrxs += countTrxs(out.Committed)
				d.handed = out.Committed[len(out.Committed)-1].Index
				d.handedIndex.Store(d.handed)
			}
			for _, rs := range out.ReadStates {
				if len(rs.RequestCtx) == 8 {
					id := binary.BigEndian.Uint64(rs.RequestCtx)
					if w := d.syncs[id]; w != nil {
						delete(d.syncs, id)
						w.index = rs.Index
						d.ready = append(d.ready, w)
					}
				}
			}
			d.releaseReads()
		}
		d.releaseReads()
		st := d.node.rn.BasicStatus()
		leader := st.RaftState == raft.StateLeader
		if leader && d.Witness && d.ticks >= d.handOffAt && d.handOff() {
			d.handOffAt = d.ticks + announceTicks
		}
		if leader && d.certifier == nil {
			c, err := d.rebuild()
			if err != nil {
				return err
			}
			d.certifier = c
		} else if !leader {
			d.certifier = nil
		}
		d.state.Store(&State{ID: d.node.ID(), Lead: st.Lead, Term: st.Term, Commit: st.Commit, Applied: st.Applied, Leader: leader})
		d.certKeys.Store(uint64(d.committed.Keys()))
	}
}

// handOff asks raft to transfer leadership to a data member (on a
// witness that was elected). Raft refuses proposals while a transfer is
// pending, until the transferee wins or an election timeout passes; a
// transfer to a member that is down would thus stall the cluster's
// writes for that long each time it is tried. It reports whether it
// asked for one.
func (d *Driver) handOff() bool {
	to := handOffTarget(d.node.Status(), d.node.ID())
	if to != 0 {
		d.node.rn.TransferLeader(to)
	}
	return to != 0
}

// handOffTarget is the voter to hand leadership to: among the others the
// leader heard from within the last election timeout (raft's
// RecentActive, kept by CheckQuorum), the one whose log matches the most
// of the leader's (raft catches it up first); the lowest id among equals.
// 0: none is active.
func handOffTarget(st raft.Status, self uint64) uint64 {
	var to, match uint64
	for id := range st.Config.Voters.IDs() {
		pr, ok := st.Progress[id]
		if !ok || id == self || !pr.RecentActive {
			continue
		}
		if to == 0 || pr.Match > match || pr.Match == match && id < to {
			to, match = id, pr.Match
		}
	}
	return to
}

// noteConfig keeps the roster and raft's configuration for other
// goroutines (on Run's goroutine, after a change).
func (d *Driver) noteConfig() {
	r := d.node.Roster()
	v, l := d.node.Config()
	d.pmu.Lock()
	d.roster, d.voters, d.learners = r, v, l
	d.pmu.Unlock()
}

// Config is raft's configuration as of the last change applied: its
// voters and its learners (members still catching up, join.go).
func (d *Driver) Config() (voters, learners []uint64) {
	d.pmu.Lock()
	defer d.pmu.Unlock()
	return slices.Clone(d.voters), slices.Clone(d.learners)
}

// startCertifier sets up the certifier state of what the node applied
// before this run: it starts at the GTID number of the last transaction
// entry at or below the applied index (snapshots older than that are too
// old; a restart costs only transactions in flight across it).
func (d *Driver) startCertifier() error {
	applied := d.node.rn.BasicStatus().Applied
	d.applied, d.handed = applied, applied
	d.appliedIndex.Store(applied)
	d.handedIndex.Store(applied)
	first, _ := d.node.log.FirstIndex()
	for i := applied; i >= first && i > 0; i-- {
		es, err := d.node.log.Entries(i, i+1, 1<<30)
		if err != nil {
			return err
		}
		if e := es[0]; e.Type == raftpb.EntryNormal && len(e.Data) > 0 {
			gno, err := gnoOf(e.Data)
			if err != nil {
				return fmt.Errorf("cluster: entry %d: %w", i, err)
			}
			d.committed = NewCertifierAt(d.sid, 0, gno)
			return nil
		}
	}
	// No transaction entry at or below the applied index in the log: its
	// start was compacted away, or the store was copied from another
	// member's (transfer.go). The store knows the last one it holds.
	if d.AppliedGNO != nil {
		d.committed = NewCertifierAt(d.sid, 0, d.AppliedGNO())
		return nil
	}
	d.committed = NewCertifier(d.sid, 0)
	return nil
}

// EntryGNO is the GTID number of a transaction entry's data.
func EntryGNO(entry []byte) (uint64, error) { return gnoOf(entry) }

// gnoOf is the GTID number of a transaction entry.
func gnoOf(entry []byte) (uint64, error) {
	_, events, err := raftlog.DecodeTrx(entry)
	if err != nil {
		return 0, err
	}
	g, err := firstGTID(events)
	return g.GNO, err
}

// rebuild makes the certifier of a new leader: a copy of the state of
// the committed entries (those handed to the apply loop) that has also
// seen the entries after them in the log.
func (d *Driver) rebuild() (*Certifier, error) {
	c := d.committed.Clone()
	last, _ := d.node.log.LastIndex()
	for lo := d.handed + 1; lo <= last; {
		es, err := d.node.log.Entries(lo, last+1, 16<<20)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			if e.Type == raftpb.EntryNormal && len(e.Data) > 0 {
				if err := c.Observe(e.Data); err != nil {
					return nil, fmt.Errorf("cluster: certification state at entry %d: %w", e.Index, err)
				}
			}
		}
		lo = es[len(es)-1].Index + 1
	}
	return c, nil
}

func (d *Driver) receive(pk Packet) {
	if pk.Kind == kindRaft || pk.Kind == kindAnnounce {
		if fresh, err := d.node.NoteSeen(pk.From); fresh && err == nil {
			d.noteConfig()
		}
	}
	switch pk.Kind {
	case kindRaft:
		// A message raft refuses is dropped, as a lost one would be.
		_ = d.node.Step(pk.Msg)
	case kindCertify:
		meta, events, err := raftlog.DecodeTrx(pk.Payload)
		if err != nil {
			return
		}
		m, err := DecodeMeta(meta)
		if err != nil || m.Origin != pk.From {
			return
		}
		d.certify(Request{Meta: m, Events: events})
	case kindVerdict:
		if len(pk.Payload) != 9 {
			return
		}
		err := ErrConflict
		if pk.Payload[8] == verdictNotLeader {
			err = ErrNoLeader
		}
		d.finish(binary.BigEndian.Uint64(pk.Payload), outcome{err: err})
	case kindAnnounce:
		d.heard(pk.From, pk.Payload)
	case kindFlow:
		d.flowHeard(pk.From, pk.Payload)
	case kindJoin:
		d.answerJoin(pk)
	case kindState:
		d.answerState(pk)
	}
}

const (
	verdictConflict  byte = 1
	verdictNotLeader byte = 2
)

// certify handles a transaction on the node that received it: certify
// and propose it on the leader, or answer its origin.
func (d *Driver) certify(r Request) {
	// Proposed only in the term its origin knew, so that an entry of a
	// later term tells the origin it will never commit (see Commit).
	if d.certifier == nil || r.Meta.Term != d.node.rn.BasicStatus().Term {
		d.refuse(r.Meta, verdictNotLeader)
		return
	}
	entry, _, v, err := d.certifier.Certify(r)
	switch {
	case err != nil:
		d.refuse(r.Meta, verdictConflict)
	case !v.OK:
		d.refuse(r.Meta, verdictConflict)
	default:
		if err := d.node.Propose(entry); err != nil {
			// Leadership was lost in this turn: forget the certifier's
			// state with it.
			d.certifier = nil
			d.refuse(r.Meta, verdictNotLeader)
		}
	}
}

func (d *Driver) refuse(m Meta, verdict byte) {
	if m.Origin == d.node.ID() {
		err := ErrConflict
		if verdict == verdictNotLeader {
			err = ErrNoLeader
		}
		d.finish(m.TrxID, outcome{err: err})
		return
	}
	p := binary.BigEndian.AppendUint64(nil, m.TrxID)
	d.transport.SendPacket(Packet{Kind: kindVerdict, From: d.node.ID(), To: m.Origin, Payload: append(p, verdict)})
}

// complete takes committed entries, as they are handed to the apply
// loop, into the certification state of committed entries, notes which
// of this node's transactions they commit (their Commits return once
// applied here: finishApplied), then finishes those sent in a term before
// the last entry's: they never will commit.
func (d *Driver) complete(es []raftpb.Entry) error {
	for _, e := range es {
		if e.Type != raftpb.EntryNormal || len(e.Data) == 0 {
			continue
		}
		m, g, err := decodeEntry(e.Data)
		if err == nil {
			err = d.committed.observe(m, g)
		}
		if err != nil {
			return fmt.Errorf("cluster: certification state at entry %d: %w", e.Index, err)
		}
		if m.Origin == d.node.ID() {
			d.mu.Lock()
			if w := d.waiting[m.TrxID]; w != nil {
				delete(d.waiting, m.TrxID)
				d.commited = append(d.commited, committedOwn{index: e.Index, gno: g.GNO, w: w})
			}
			d.mu.Unlock()
		}
	}
	if t := es[len(es)-1].Term; t > d.handedTerm {
		d.handedTerm = t
		d.mu.Lock()
		for id, w := range d.waiting {
			if w.term < t {
				w.ch <- outcome{err: ErrNotCommitted}
				delete(d.waiting, id)
			}
		}
		d.mu.Unlock()
	}
	return nil
}

// finishApplied returns the Commits of this node's transactions up to
// entry index, now applied (on the apply loop's goroutine).
func (d *Driver) finishApplied(index uint64) {
	d.mu.Lock()
	n := 0
	for n < len(d.commited) && d.commited[n].index <= index {
		d.commited[n].w.ch <- outcome{gno: d.commited[n].gno}
		n++
	}
	d.commited = d.commited[n:]
	d.mu.Unlock()
}

func (d *Driver) finish(id uint64, o outcome) {
	d.mu.Lock()
	w := d.waiting[id]
	delete(d.waiting, id)
	d.mu.Unlock()
	if w != nil {
		w.ch <- o
	}
}

func (d *Driver) forget(id uint64) {
	d.mu.Lock()
	delete(d.waiting, id)
	d.mu.Unlock()
}

// failWaiting ends every Commit still waiting when the driver stops:
// those whose entry committed succeed (the cluster has them; this node
// applies them when it starts again), the others get err.
func (d *Driver) failWaiting(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.commited {
		c.w.ch <- outcome{gno: c.gno}
	}
	d.commited = nil
	for id, w := range d.waiting {
		w.ch <- outcome{err: err}
		delete(d.waiting, id)
	}
}

// Commit commits a transaction through the cluster: events are its
// binlog events finalized under a placeholder GTID, snapshot the GTID
// number of the last cluster transaction its reads saw, keys its write
// set. It returns the GTID number it committed under once this node has
// applied it, ErrConflict if certification refused it, ErrNoLeader if
// there is no leader to certify it, ErrNotCommitted if the leader changed
// before it committed, or ErrOutcomeUnknown if ctx ended, or the node
// stopped, after it was sent. While flow control paces this node it
// first waits for its turn (ctx's error if ctx ends first: nothing was
// sent).
func (d *Driver) Commit(ctx context.Context, snapshot uint64, keys []certify.Key, events []byte) (uint64, error) {
	if err := d.admit(ctx); err != nil {
		return 0, err
	}
	id := d.nextTrx.Add(1)
	st := d.State()
	ch := make(chan outcome, 1)
	d.mu.Lock()
	d.waiting[id] = &waiter{ch: ch, term: st.Term}
	d.mu.Unlock()
	r := Request{Meta: Meta{Origin: d.node.ID(), TrxID: id, Snapshot: snapshot, Term: st.Term, Keys: keys}, Events: events}
	switch {
	case st.Leader:
		select {
		case d.certs <- r:
		case <-d.done:
			d.forget(id)
			return 0, ErrStopped
		}
	case st.Lead == 0:
		d.forget(id)
		return 0, ErrNoLeader
	default:
		payload := raftlog.EncodeTrx(r.Meta.Encode(nil), events)
		if !d.transport.SendPacket(Packet{Kind: kindCertify, From: d.node.ID(), To: st.Lead, Payload: payload}) {
			d.forget(id)
			return 0, ErrNoLeader
		}
	}
	var o outcome
	select {
	case o = <-ch:
	case <-d.done:
		// The driver answers every waiting Commit before it is done.
		select {
		case o = <-ch:
		default:
			return 0, ErrOutcomeUnknown
		}
	case <-ctx.Done():
		d.forget(id)
		return 0, ErrOutcomeUnknown
	}
	switch {
	case o.err == nil:
		d.localCommits.Add(1)
	case errors.Is(o.err, ErrConflict):
		d.localConflicts.Add(1)
	}
	return o.gno, o.err
}

// syncWait is a causal read waiting for its index to be applied.
type syncWait struct {
	ctx   context.Context
	index uint64
	done  chan struct{}
	asked int // the tick its read index was last asked for at
}

// readIndex asks raft for the read index of w (on Run's goroutine).
func (d *Driver) readIndex(w *syncWait) {
	d.nextRead++
	d.syncs[d.nextRead] = w
	w.asked = d.ticks
	d.node.ReadIndex(binary.BigEndian.AppendUint64(nil, d.nextRead))
}

// askAgain asks again for the read indexes not answered within an
// election timeout: raft drops a request made without a leader, or lost
// with a leader that stepped down, and says nothing. An index confirmed
// later is still at or past everything committed before the first ask,
// so the wait keeps its meaning.
func (d *Driver) askAgain() {
	for id, w := range d.syncs {
		if d.ticks-w.asked >= announceTicks && w.ctx.Err() == nil {
			delete(d.syncs, id)
			d.readIndex(w)
		}
	}
}

// releaseReads ends the causal reads whose index is applied, and forgets
// those whose caller gave up (raft drops a request it cannot answer).
func (d *Driver) releaseReads() {
	for id, w := range d.syncs {
		if w.ctx.Err() != nil {
			delete(d.syncs, id)
		}
	}
	kept := d.ready[:0]
	for _, w := range d.ready {
		if w.index <= d.applied {
			close(w.done)
		} else {
			kept = append(kept, w)
		}
	}
	d.ready = kept
}

// SyncWait returns once this node has applied everything committed in
// the cluster before the call, so that a read after it sees every write
// acknowledged before it, on any node (wsrep_sync_wait, MySQL Group
// Replication's BEFORE). The leader confirms its commit index with a
// quorum first (raft's ReadIndex, never a lease); a request raft dropped
// is made again after an election timeout (askAgain). Without a leader
// or a quorum no answer comes, and ctx's end is returned (1205 at the
// SQL level).
func (d *Driver) SyncWait(ctx context.Context) error {
	w := &syncWait{ctx: ctx, done: make(chan struct{})}
	select {
	case d.reads <- w:
	case <-d.done:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-w.done:
		return nil
	case <-d.done:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watchSync keeps Synced: false while the node follows no leader, and,
// once it follows one again (or first, after a start), until it has
// applied everything the cluster had committed by then (a read index
// confirmed by the leader). A node back from a partition or a restart is
// thus not taken as current while it catches up, as a Galera node is
// JOINED before it is SYNCED. A leader lost and found again between two
// ticks may go unnoticed; a partition lasts an election timeout at least.
func (d *Driver) watchSync(ctx context.Context) {
	t := time.NewTicker(d.tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if d.State().Lead == 0 {
			d.synced.Store(false)
			continue
		}
		if d.synced.Load() {
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := d.SyncWait(wctx)
		cancel()
		if err == nil && d.State().Lead != 0 {
			d.synced.Store(true)
		}
	}
}

// Synced reports whether the node follows a leader and has caught up
// with what the cluster had committed when it found it (watchSync).
func (d *Driver) Synced() bool { return d.synced.Load() && d.State().Lead != 0 }

// State is the node's raft state after the driver's last turn, with
// Applied the last entry its store holds now.
func (d *Driver) State() State {
	s := *d.state.Load()
	s.Applied = d.appliedIndex.Load()
	return s
}
