package commit

// The pipeline's decisions, kept apart from its I/O (the Log and Store
// interfaces) and from the wall clock: when a group closes, when the
// binlog is synced, and where a group waits for replicas. The flusher and
// the committer ask these functions and do what they answer; the
// data-driven test (testdata/policy) drives them directly, with time given
// as numbers.
//
// Invariants:
//   - A group never stays open longer than the sync delay after it opened,
//     and never waits at all without a delay.
//   - Under a durable policy (sync_binlog=1, innodb_flush_log_at_trx_commit=1,
//     or a transaction that forces it: DDL) every group is synced before
//     the committer sees it. Otherwise the binlog is synced every
//     sync_binlog groups and, when innodb_flush_log_at_trx_commit is not 1,
//     at least once a second while written bytes are unsynced.
//   - A group waits for replicas at one point only: before it is applied
//     (AFTER_SYNC) or after (AFTER_COMMIT); a group without transactions
//     (a rotation) never waits.

import "time"

// trigger says why a group closed: the Binlog_group_commit_trigger_*
// counters count them.
type trigger int

const (
	triggerNone     trigger = iota // no sync delay: every flush is a group
	triggerCount                   // binlog_group_commit_sync_no_delay_count reached
	triggerTimeout                 // binlog_group_commit_sync_delay expired
	triggerLockWait                // a transaction waits for a lock the group holds
	triggerOpen                    // not closed: wait for more
)

func (t trigger) String() string {
	return [...]string{"none", "count", "timeout", "lock_wait", "open"}[t]
}

// closeGroup decides whether the group being gathered closes now. delay and
// count are binlog_group_commit_sync_delay and _no_delay_count, queued the
// transactions queued, lockWait whether a transaction waits for a lock one
// of them holds, and elapsed the time since the group began gathering. An
// open group should be looked at again after wait, or sooner when
// something is queued.
func closeGroup(delay time.Duration, count, queued int, lockWait bool, elapsed time.Duration) (t trigger, wait time.Duration) {
	switch {
	case delay <= 0:
		return triggerNone, 0
	case count > 0 && queued >= count:
		return triggerCount, 0
	case lockWait:
		return triggerLockWait, 0
	case elapsed >= delay:
		return triggerTimeout, 0
	}
	return triggerOpen, delay - elapsed
}

// syncPolicy decides when the binlog is synced. The flusher owns it.
type syncPolicy struct {
	groups int64 // groups written, for sync_binlog=N
	dirty  bool  // bytes written and not synced
}

// written records a written group and reports whether to sync now. force
// is set when a transaction of the group demands durability (DDL).
func (s *syncPolicy) written(force bool, syncBinlog, flushAtCommit int64) bool {
	s.groups++
	s.dirty = true
	return force || syncBinlog == 1 || flushAtCommit == 1 || syncBinlog > 1 && s.groups%syncBinlog == 0
}

// tick reports whether the once-a-second sync is due:
// innodb_flush_log_at_trx_commit=0 or 2 syncs the binlog once a second
// when groups left it unsynced.
func (s *syncPolicy) tick(flushAtCommit int64) bool {
	return s.dirty && flushAtCommit != 1
}

// synced records a successful sync.
func (s *syncPolicy) synced() { s.dirty = false }

// ackPoint is where a group waits for replicas' acknowledgements.
type ackPoint int

const (
	ackNone        ackPoint = iota
	ackBeforeApply          // AFTER_SYNC: nobody sees what no replica has
	ackAfterApply           // AFTER_COMMIT
)

func (a ackPoint) String() string {
	return [...]string{"none", "before_apply", "after_apply"}[a]
}

// waitPoint answers where a group of trxs transactions waits, given
// whether semi-sync waits at all and its wait point.
func waitPoint(wait, afterSync bool, trxs int) ackPoint {
	switch {
	case !wait || trxs == 0:
		return ackNone
	case afterSync:
		return ackBeforeApply
	}
	return ackAfterApply
}
