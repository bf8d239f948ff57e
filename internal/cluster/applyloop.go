package cluster

// The apply loop: committed entries are applied on a goroutine of their
// own, not on the driver's.
//
// The driver's goroutine writes and syncs the log, talks to the other
// nodes and certifies; applying an entry to the store is the costliest
// step of a commit and needs none of that. So the driver hands committed
// entries to a queue and goes on: while the store takes one group, the
// next is being written, synced and replicated, as the single server's
// pipeline overlaps its fsync with its apply.
//
// Invariants:
//   - Entries are applied once each, in index order, and nothing else
//     writes the store's applied position; Applied is the last index the
//     store holds (every entry up to it visible).
//   - What the driver does with an entry at hand-off (the certification
//     state of committed entries, which of its own transactions
//     committed) depends only on the log, never on the store; what waits
//     for the store (a Commit's return, a causal read) waits for Applied.
//   - The queue holds entries in memory up to applyQueueBytes; past that
//     it holds only their indexes and the loop reads them back from the
//     log (committed entries are never cut), so a member that applies
//     slowly costs disk reads, not memory.
//   - A call queued with between runs after every entry handed before it
//     is applied and before any handed after it (a state transfer's store
//     snapshot at exactly one index).
//   - An error from apply stops the loop and the driver: nothing after
//     the failed entry is applied.

import (
	"context"
	"sync"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

const (
	// applyQueueBytes bounds the entries the queue holds in memory.
	applyQueueBytes = 64 << 20
	// applyChunkBytes bounds what one apply call is given.
	applyChunkBytes = 8 << 20
)

// applySeg is a run of consecutive committed entries: in memory, or only
// their indexes (lo..hi) to read from the log; or a call to make.
type applySeg struct {
	ents   []raftpb.Entry
	lo, hi uint64
	call   func()
}

type applyQueue struct {
	mu    sync.Mutex
	segs  []applySeg
	bytes int           // of the entries held in memory
	spill bool          // entries go as indexes until the queue drains
	wake  chan struct{} // cap 1: something was queued
}

func newApplyQueue() *applyQueue { return &applyQueue{wake: make(chan struct{}, 1)} }

// push queues committed entries (on the driver's goroutine; never
// blocks).
func (q *applyQueue) push(es []raftpb.Entry) {
	if len(es) == 0 {
		return
	}
	size := 0
	for i := range es {
		size += es[i].Size()
	}
	q.mu.Lock()
	if q.spill || q.bytes+size > applyQueueBytes {
		q.spill = true
		lo, hi := es[0].Index, es[len(es)-1].Index
		if n := len(q.segs); n > 0 && q.segs[n-1].ents == nil && q.segs[n-1].call == nil && q.segs[n-1].hi+1 == lo {
			q.segs[n-1].hi = hi
		} else {
			q.segs = append(q.segs, applySeg{lo: lo, hi: hi})
		}
	} else {
		q.bytes += size
		q.segs = append(q.segs, applySeg{ents: es})
	}
	q.mu.Unlock()
	q.notify()
}

// between queues a call to run once everything queued so far is applied.
func (q *applyQueue) between(f func()) {
	q.mu.Lock()
	q.segs = append(q.segs, applySeg{call: f})
	q.mu.Unlock()
	q.notify()
}

func (q *applyQueue) notify() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take waits for work: the next entries to apply (in-memory ones merged
// up to applyChunkBytes), or a range to read from the log, or a call.
func (q *applyQueue) take(ctx context.Context) (seg applySeg, ok bool) {
	for {
		q.mu.Lock()
		if len(q.segs) > 0 {
			seg = q.segs[0]
			switch {
			case seg.call != nil:
				q.segs = q.segs[1:]
			case seg.ents != nil:
				// Merge the in-memory segments that follow.
				size := 0
				for i := range seg.ents {
					size += seg.ents[i].Size()
				}
				n := 1
				for n < len(q.segs) && q.segs[n].ents != nil && size < applyChunkBytes {
					for i := range q.segs[n].ents {
						size += q.segs[n].ents[i].Size()
					}
					seg.ents = append(seg.ents[:len(seg.ents):len(seg.ents)], q.segs[n].ents...)
					n++
				}
				q.segs = q.segs[n:]
				q.bytes -= size
			default:
				q.segs = q.segs[1:]
			}
			if len(q.segs) == 0 {
				q.segs = nil
				q.spill = false
				q.bytes = 0
			}
			q.mu.Unlock()
			return seg, true
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-ctx.Done():
			return applySeg{}, false
		}
	}
}

// putBack returns the rest of a range taken in part (the loop reads a
// long range from the log in chunks).
func (q *applyQueue) putBack(lo, hi uint64) {
	q.mu.Lock()
	q.segs = append([]applySeg{{lo: lo, hi: hi}}, q.segs...)
	q.spill = true
	q.mu.Unlock()
}

// applyLoop applies what the queue holds until ctx ends or apply fails;
// an error goes to d.applyErr.
func (d *Driver) applyLoop(ctx context.Context) {
	defer close(d.applyDone)
	for {
		seg, ok := d.queue.take(ctx)
		if !ok {
			return
		}
		if seg.call != nil {
			seg.call()
			continue
		}
		es := seg.ents
		if es == nil {
			got, err := d.node.log.Entries(seg.lo, seg.hi+1, applyChunkBytes)
			if err != nil {
				d.applyFailed(err)
				return
			}
			if last := got[len(got)-1].Index; last < seg.hi {
				d.queue.putBack(last+1, seg.hi)
			}
			es = got
		}
		began := time.Now()
		if err := d.apply(es); err != nil {
			d.applyFailed(err)
			return
		}
		d.pacer.applyBusy.Add(int64(time.Since(began)))
		d.pacer.appliedTrxs.Add(countTrxs(es))
		d.appliedIndex.Store(es[len(es)-1].Index)
		d.finishApplied(es[len(es)-1].Index)
		select {
		case d.appliedWake <- struct{}{}:
		default:
		}
	}
}

func (d *Driver) applyFailed(err error) {
	select {
	case d.applyErr <- err:
	default:
	}
}

// Applied is the index of the last entry the store holds.
func (d *Driver) Applied() uint64 { return d.appliedIndex.Load() }

// RecvQueue is the number of committed entries handed to the apply loop
// and not applied yet (Galera's wsrep_local_recv_queue).
func (d *Driver) RecvQueue() uint64 {
	a := d.appliedIndex.Load()
	return d.handedIndex.Load() - min(a, d.handedIndex.Load())
}
