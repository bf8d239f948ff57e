package commit

// The pipeline's decisions, kept apart from its I/O (the Log and Store
// interfaces) and from the wall clock: when a group closes, when the
// binlog is synced, and where a group waits for replicas. The flusher and
// the committer ask these functions and do what they answer; the
// data-driven test (testdata/policy) drives them directly, with time given
// as numbers.
//
// Invariants:
//   - With a sync delay set, a group never stays open longer than the delay
//     after it opened (MySQL's binlog_group_commit_sync_delay).
//   - Without one, a group that will be synced may wait for sessions that
//     committed recently (gathering, below), never longer than half the
//     recent fsync time and never when no other session is expected: a
//     lone committer never waits. A group that will not be synced never
//     waits.
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
// counters count those of the sync delay, Lockstep_binlog_group_commit_
// gathers the groups that gathered.
type trigger int

const (
	triggerNone     trigger = iota // no sync delay, nothing to gather: every flush is a group
	triggerCount                   // binlog_group_commit_sync_no_delay_count reached
	triggerTimeout                 // binlog_group_commit_sync_delay expired
	triggerLockWait                // a transaction waits for a lock the group holds
	triggerOpen                    // not closed: wait for more
	triggerGathered                // gathering: every expected session queued
	triggerPatience                // gathering: the patience ran out
	triggerLull                    // gathering: arrivals stopped coming
)

func (t trigger) String() string {
	return [...]string{"none", "count", "timeout", "lock_wait", "open", "gathered", "patience", "lull"}[t]
}

// groupState is what the flusher sees of the group it is gathering.
type groupState struct {
	queued   int           // transactions queued
	lockWait bool          // a transaction waits for a lock one of them holds
	elapsed  time.Duration // since the group began gathering
	arrived  int           // transactions queued since then
	lull     time.Duration // since the last of them (or since the start)
}

// closeGroup decides whether the group being gathered closes now. delay and
// count are binlog_group_commit_sync_delay and _no_delay_count. An open
// group should be looked at again after wait, or sooner when something is
// queued. Without a delay, g may still hold the group open (gathering).
func closeGroup(delay time.Duration, count int, st groupState, g gather) (t trigger, wait time.Duration) {
	switch {
	case delay <= 0:
		return g.close(st)
	case count > 0 && st.queued >= count:
		return triggerCount, 0
	case st.lockWait:
		return triggerLockWait, 0
	case st.elapsed >= delay:
		return triggerTimeout, 0
	}
	return triggerOpen, delay - st.elapsed
}

// Gathering: why a group may wait without a sync delay.
//
// When the sync is what limits commits (a slow disk), the flusher is busy
// syncing group k while the sessions of group k-1 execute their next
// transactions. Those arrive while k is syncing and wait for it, so they
// form group k+1 without the sessions of k, which are still being
// released: the sessions settle into two (or more) cohorts that take
// turns, and each group holds a fraction of the sessions that could be
// in it. With sixteen sessions and a 1.5 ms fsync, groups held eight and
// the fsync was busy 98% of the time.
//
// Gathering merges the cohorts: when the flusher is free and something is
// queued, it counts the sessions that committed within the last few fsync
// times (they are likely to commit again soon) and waits until that many
// transactions are queued, and closes the group sooner when
//
//   - its patience, half the recent fsync time S, has run out: waiting
//     longer would cost the queued transactions more than the next sync
//     would cost the late ones;
//   - arrivals lull: once transactions arrive while it waits, a gap of
//     patience/queued without one closes it. Another arrival saves it
//     about one fsync time (S) and costs each of the q queued the wait
//     for it; past S/2q the wait costs more than it saves. Cohorts
//     released together arrive in a burst and pass; arrivals spread out
//     by a busy CPU (many sessions, where cohorts do not form) do not,
//     and the group waits only for the first of them;
//   - a transaction waits for a row lock held by a queued one, as under a
//     sync delay.
//
// Gathering only helps while the sessions wait for the disk, not for the
// CPU. With many sessions on a busy CPU, the cohort that executes while
// the other syncs keeps both the CPU and the disk busy; merging them
// would leave the disk idle while one cohort executes (64 sessions, 1.8
// ms fsync: 15,600 TPS as two cohorts, 13,500 merged). What tells the
// two apart is whether arrivals had stopped before the group began: a
// group gathers only if no transaction had arrived for half an fsync
// time (the patience) before it, or before the newest one. Merging pays
// when all the sessions execute in less than one fsync time; a cohort
// that executed in less than half of one says so of two. Arrivals that
// run on up to the moment the flusher is free mean the CPU, not the
// disk, is what sessions wait for.
//
// A fast fsync makes gathering all but vanish, and a single session (or
// one replica applier) never waits.

// gather is what gathering knows when a group starts to gather.
type gather struct {
	expected int           // sessions that committed recently
	patience time.Duration // how long the group may wait for them; 0: not at all
	// quiet is how long the sessions had stopped arriving before the
	// group began to gather: the longer of the gap before the newest
	// arrival and the time since it.
	quiet time.Duration
}

// close answers closeGroup without a sync delay.
func (g gather) close(st groupState) (trigger, time.Duration) {
	switch {
	case g.patience <= 0 || g.expected <= 1 || g.quiet < g.patience:
		return triggerNone, 0
	case st.queued >= g.expected:
		return triggerGathered, 0
	case st.lockWait:
		return triggerLockWait, 0
	case st.elapsed >= g.patience:
		return triggerPatience, 0
	case st.arrived == 0:
		return triggerOpen, g.patience - st.elapsed
	}
	gap := g.patience / time.Duration(max(st.queued, 1))
	if st.lull >= gap {
		return triggerLull, 0
	}
	return triggerOpen, min(gap-st.lull, g.patience-st.elapsed)
}

// gatherWindow is how many recent fsync times back a session's last
// commit still counts it as expected; gatherPatience the fraction of one
// fsync time a group may wait.
const (
	gatherWindow   = 4
	gatherPatience = 2 // patience = fsync time / gatherPatience
)

// committers remembers when each session last entered a commit group, and
// the recent fsync time, to plan gathering. Times are offsets from any
// fixed origin (the flusher's start). The flusher owns it.
type committers struct {
	last  map[uint64]time.Duration
	fsync time.Duration // moving average of recent fsync times
}

// grouped records that session's transaction entered a group at now.
func (c *committers) grouped(session uint64, now time.Duration) {
	if c.last == nil {
		c.last = make(map[uint64]time.Duration)
	}
	c.last[session] = now
}

// forget forgets every session.
func (c *committers) forget() {
	if len(c.last) > 0 {
		clear(c.last)
	}
}

// synced records an fsync that took d: a moving average over about the
// last eight.
func (c *committers) synced(d time.Duration) {
	if c.fsync == 0 {
		c.fsync = d
		return
	}
	c.fsync += (d - c.fsync) / 8
}

// plan says how a group that starts gathering at now gathers. sync says
// whether the group will be synced; a group that will not be has nothing
// to gather for, and every session is forgotten. Otherwise sessions not
// seen within the window are.
func (c *committers) plan(now time.Duration, sync bool) gather {
	if !sync || c.fsync <= 0 {
		c.forget()
		return gather{}
	}
	window := gatherWindow * c.fsync
	n := 0
	for s, t := range c.last {
		if now-t > window {
			delete(c.last, s)
			continue
		}
		n++
	}
	return gather{expected: n, patience: c.fsync / gatherPatience}
}

// syncPolicy decides when the binlog is synced. The flusher owns it.
type syncPolicy struct {
	groups int64 // groups written, for sync_binlog=N
	dirty  bool  // bytes written and not synced
}

// willSync reports whether the next group written will be synced unless
// a transaction in it forces it (written's answer for force=false).
func (s *syncPolicy) willSync(syncBinlog, flushAtCommit int64) bool {
	return syncBinlog == 1 || flushAtCommit == 1 || syncBinlog > 1 && (s.groups+1)%syncBinlog == 0
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
