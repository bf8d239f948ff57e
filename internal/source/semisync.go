package source

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstepdb/lockstep/internal/binlog"
)

// SemiSync is semi-synchronous replication on the source side.
//
// The commit pipeline's committer calls WaitAck once per group with the
// group's end position: under AFTER_SYNC before the group is applied (no
// client sees a transaction no replica has), under AFTER_COMMIT after. Only
// that goroutine waits; the flusher keeps writing and syncing later groups
// meanwhile, so a replica's round trip overlaps the next group's fsync
// instead of adding to it.
//
// Invariants:
//   - Acknowledgements are binlog positions (file number, offset), compared
//     as such: a replica's acknowledged position only moves forward, and a
//     wait for end is satisfied when wait_for_replica_count replicas have
//     acknowledged a position >= end. No shared file offsets, no per-trx
//     bookkeeping that a lost ACK could leave dangling.
//   - A replica counts only for positions it actually acknowledged; one
//     that is catching up cannot satisfy a wait for a recent group.
//   - After a timeout (or, with wait_no_replica OFF, too few replicas) the
//     source falls back to asynchronous: status OFF, later groups do not
//     wait. It returns to semi-sync when a replica acknowledges the end of
//     the latest group that committed, i.e. has caught up.
type SemiSync struct {
	enabled       atomic.Bool
	afterCommit   atomic.Bool
	timeout       atomic.Int64 // milliseconds
	waitCount     atomic.Int64
	waitNoReplica atomic.Bool

	Stats SemiSyncStats

	mu        sync.Mutex
	active    bool // status ON (not fallen back)
	clients   map[*replica]struct{}
	positions []binlog.Position // ackedLocked's scratch
	changed   chan struct{}     // closed and replaced when an ACK or client changes
	latest    binlog.Position
	closed    bool
	onOff     func(on bool, reason string)

	// OnWait, if set before use, is told how long each acknowledged group
	// waited (for histograms); it must not block.
	OnWait func(time.Duration)
}

// SemiSyncStats are the counters behind Rpl_semi_sync_source_*.
type SemiSyncStats struct {
	YesTx        atomic.Uint64 // transactions acknowledged by replicas
	NoTx         atomic.Uint64 // transactions committed without an ACK
	WaitSessions atomic.Int64  // transactions waiting now
	Waits        atomic.Uint64 // group waits that ended in an ACK
	WaitNanos    atomic.Uint64 // total time of those waits
	Timeouts     atomic.Uint64 // waits that gave up
	Acks         atomic.Uint64 // ACK packets received
}

// NewSemiSync returns a disabled SemiSync with MySQL's defaults
// (AFTER_SYNC, 10 s timeout, one replica, wait_no_replica ON). onOff, if
// not nil, is told when the source falls back to async and when it returns.
func NewSemiSync(onOff func(on bool, reason string)) *SemiSync {
	s := &SemiSync{clients: map[*replica]struct{}{}, changed: make(chan struct{}), onOff: onOff}
	s.timeout.Store(10000)
	s.waitCount.Store(1)
	s.waitNoReplica.Store(true)
	return s
}

// SetEnabled turns semi-sync on or off (rpl_semi_sync_source_enabled).
// Turning it on starts in semi-sync mode (status ON).
func (s *SemiSync) SetEnabled(on bool) {
	s.mu.Lock()
	s.enabled.Store(on)
	if on {
		s.active = true
	}
	s.broadcastLocked()
	s.mu.Unlock()
}

// SetAfterCommit chooses the wait point (rpl_semi_sync_source_wait_point).
func (s *SemiSync) SetAfterCommit(v bool) { s.afterCommit.Store(v) }

// SetTimeout sets rpl_semi_sync_source_timeout (milliseconds).
func (s *SemiSync) SetTimeout(ms int64) { s.timeout.Store(ms) }

// SetWaitForReplicaCount sets rpl_semi_sync_source_wait_for_replica_count.
func (s *SemiSync) SetWaitForReplicaCount(n int64) {
	s.waitCount.Store(max(n, 1))
	s.mu.Lock()
	s.broadcastLocked()
	s.mu.Unlock()
}

// SetWaitNoReplica sets rpl_semi_sync_source_wait_no_replica.
func (s *SemiSync) SetWaitNoReplica(v bool) { s.waitNoReplica.Store(v) }

// Enabled reports rpl_semi_sync_source_enabled.
func (s *SemiSync) Enabled() bool { return s.enabled.Load() }

// AfterCommit reports whether the wait point is AFTER_COMMIT.
func (s *SemiSync) AfterCommit() bool { return s.afterCommit.Load() }

// Timeout is rpl_semi_sync_source_timeout in milliseconds.
func (s *SemiSync) Timeout() int64 { return s.timeout.Load() }

// WaitForReplicaCount is rpl_semi_sync_source_wait_for_replica_count.
func (s *SemiSync) WaitForReplicaCount() int64 { return s.waitCount.Load() }

// WaitNoReplica is rpl_semi_sync_source_wait_no_replica.
func (s *SemiSync) WaitNoReplica() bool { return s.waitNoReplica.Load() }

// Status reports Rpl_semi_sync_source_status: enabled and not fallen back.
func (s *SemiSync) Status() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.enabled.Load() && s.active
}

// Clients is Rpl_semi_sync_source_clients: connected semi-sync replicas.
func (s *SemiSync) Clients() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients)
}

// AvgWaitMicros is Rpl_semi_sync_source_tx_avg_wait_time.
func (s *SemiSync) AvgWaitMicros() uint64 {
	n := s.Stats.Waits.Load()
	if n == 0 {
		return 0
	}
	return s.Stats.WaitNanos.Load() / n / 1000
}

// WaitPoint implements commit.AckWaiter.
func (s *SemiSync) WaitPoint() (wait, afterSync bool) {
	return s.enabled.Load(), !s.afterCommit.Load()
}

// WaitAck implements commit.AckWaiter.
func (s *SemiSync) WaitAck(end binlog.Position, trxs int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.latest.Less(end) {
		s.latest = end
	}
	if !s.enabled.Load() || !s.active || s.closed {
		s.Stats.NoTx.Add(uint64(trxs))
		return
	}
	start := time.Now()
	deadline := start.Add(time.Duration(s.timeout.Load()) * time.Millisecond)
	s.Stats.WaitSessions.Add(int64(trxs))
	defer s.Stats.WaitSessions.Add(-int64(trxs))
	var timer *time.Timer
	for {
		switch waitStep(s.ackedLocked(end), len(s.clients), s.waitCount.Load(), s.waitNoReplica.Load(), s.enabled.Load() && !s.closed, time.Until(deadline)) {
		case waitAcked:
			d := time.Since(start)
			s.Stats.YesTx.Add(uint64(trxs))
			s.Stats.Waits.Add(1)
			s.Stats.WaitNanos.Add(uint64(d))
			if s.OnWait != nil {
				s.OnWait(d)
			}
			if timer != nil {
				timer.Stop()
			}
			return
		case waitTooFewReplicas:
			s.fallBackLocked("fewer semi-sync replicas connected than rpl_semi_sync_source_wait_for_replica_count (rpl_semi_sync_source_wait_no_replica=OFF)")
			s.Stats.NoTx.Add(uint64(trxs))
			return
		case waitOff:
			s.Stats.NoTx.Add(uint64(trxs))
			return
		case waitTimedOut:
			s.Stats.Timeouts.Add(1)
			s.fallBackLocked("timed out waiting for a replica's acknowledgement (rpl_semi_sync_source_timeout)")
			s.Stats.NoTx.Add(uint64(trxs))
			return
		}
		left := time.Until(deadline)
		if timer == nil {
			timer = time.NewTimer(left)
		} else {
			timer.Reset(left)
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
		}
		s.mu.Lock()
	}
}

// ackedLocked reports whether enough replicas acknowledged end.
func (s *SemiSync) ackedLocked(end binlog.Position) bool {
	s.positions = s.positions[:0]
	for r := range s.clients {
		s.positions = append(s.positions, r.acked)
	}
	return acked(s.positions, end, s.waitCount.Load())
}

// The decisions of semi-sync, apart from its locks, timers and sockets;
// testdata/semisync drives them directly.

// acked reports whether need of the replicas' acknowledged positions
// reach end.
func acked(positions []binlog.Position, end binlog.Position, need int64) bool {
	var n int64
	for _, p := range positions {
		if !p.Less(end) {
			n++
		}
	}
	return n >= need
}

// waitOutcome is what a group's wait for acknowledgements does next.
type waitOutcome int

const (
	waitAcked          waitOutcome = iota // enough replicas acknowledged: commit
	waitTooFewReplicas                    // fall back to async (wait_no_replica OFF)
	waitOff                               // semi-sync off or shutting down: commit without waiting
	waitTimedOut                          // fall back to async (timeout)
	waitMore                              // keep waiting
)

func (w waitOutcome) String() string {
	return [...]string{"acked", "fall_back_too_few_replicas", "off", "fall_back_timeout", "wait"}[w]
}

// waitStep decides a wait's next step: ackedEnough says whether enough
// replicas acknowledged the group, clients how many semi-sync replicas are
// connected, need rpl_semi_sync_source_wait_for_replica_count, on whether
// semi-sync is enabled and running, and left the time until the timeout.
func waitStep(ackedEnough bool, clients int, need int64, waitNoReplica, on bool, left time.Duration) waitOutcome {
	switch {
	case ackedEnough:
		return waitAcked
	case !waitNoReplica && int64(clients) < need:
		return waitTooFewReplicas
	case !on:
		return waitOff
	case left <= 0:
		return waitTimedOut
	}
	return waitMore
}

// returns reports whether an acknowledgement of pos brings a source that
// fell back to async back to semi-sync: the replica has caught up with the
// latest group that committed.
func returns(enabled, active bool, pos, latest binlog.Position) bool {
	return enabled && !active && !pos.Less(latest)
}

func (s *SemiSync) fallBackLocked(reason string) {
	s.active = false
	if s.onOff != nil {
		s.onOff(false, reason)
	}
}

func (s *SemiSync) broadcastLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// addClient registers a semi-sync replica's dump connection.
func (s *SemiSync) addClient(r *replica) {
	s.mu.Lock()
	s.clients[r] = struct{}{}
	s.broadcastLocked()
	s.mu.Unlock()
}

// removeClient forgets a replica whose dump ended.
func (s *SemiSync) removeClient(r *replica) {
	s.mu.Lock()
	delete(s.clients, r)
	s.broadcastLocked()
	s.mu.Unlock()
}

// ack records that r has received (and, for AFTER_SYNC purposes, holds)
// the binlog up to pos.
func (s *SemiSync) ack(r *replica, pos binlog.Position) {
	s.Stats.Acks.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.acked.Less(pos) {
		r.acked = pos
	}
	if returns(s.enabled.Load(), s.active, r.acked, s.latest) {
		s.active = true
		if s.onOff != nil {
			s.onOff(true, "a replica caught up")
		}
	}
	s.broadcastLocked()
}

// holds records that r holds the binlog up to pos without its having
// acknowledged it: its dump skipped those transactions because the
// replica said it has them (dump.go, heldPrefix).
func (s *SemiSync) holds(r *replica, pos binlog.Position) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !r.acked.Less(pos) {
		return
	}
	r.acked = pos
	if returns(s.enabled.Load(), s.active, r.acked, s.latest) {
		s.active = true
		if s.onOff != nil {
			s.onOff(true, "a replica caught up")
		}
	}
	s.broadcastLocked()
}

// Close ends every wait (server shutdown).
func (s *SemiSync) Close() {
	s.mu.Lock()
	s.closed = true
	s.broadcastLocked()
	s.mu.Unlock()
}
