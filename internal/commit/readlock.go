package commit

import (
	"context"
	"errors"
	"sync"
	"time"
)

// The global read lock (FLUSH TABLES WITH READ LOCK): while a session
// holds it, no transaction commits, so a backup or a change-data-capture
// snapshot can read the binlog position and take a read view that match
// exactly.
//
// Every way into the pipeline (Commit, Submit, CommitExclusive) enters the
// lock's shared side first and leaves it when the transaction has
// committed or failed. LockCommits takes the exclusive side: from the
// moment it is called no new transaction enters, and it returns once those
// already in the pipeline have finished, as MySQL's FTWRL waits for
// running commits and holds back new ones. Several sessions may hold it at
// once; commits resume when the last releases it.
//
// Waits are bounded: a committer waits at most Trx.LockWait (the session's
// lock_wait_timeout) or until Trx.Ctx ends (KILL), and LockCommits at most
// its own timeout, undoing itself on expiry. A session that holds the lock
// and tries to commit gets ErrReadLocked instead of waiting for itself.

// The backup lock (LOCK INSTANCE FOR BACKUP, and BACKUP STAGE
// BLOCK_DDL) is the same kind of lock on DDL only: CommitExclusive, the
// way DDL and account changes commit, enters its shared side, so while a
// session holds it no other session's DDL commits, and row transactions
// go on. Unlike the global read lock, the holder's own DDL passes while
// no other session holds it too (in MySQL a session's metadata locks do
// not conflict with its own).

// ErrReadLocked is returned to a commit by the session that holds the
// global read lock (MySQL's 1223).
var ErrReadLocked = errors.New("the session holds the global read lock")

// ErrLockWaitTimeout is returned when the global read lock was not
// granted, or not released, in time (MySQL's 1205).
var ErrLockWaitTimeout = errors.New("lock wait timeout waiting for the global read lock")

type readLock struct {
	ownerPasses bool // the holder's own transactions enter (the backup lock)

	mu       sync.Mutex
	holders  map[uint64]bool // sessions holding the lock
	released chan struct{}   // closed when the last holder releases
	inflight int             // transactions between enter and exit
	drained  chan struct{}   // closed when inflight reaches 0, if waited on
}

// Caller is who commits a transaction: its session, the context that
// ends its wait (nil: none) and how long it may wait for the global read
// lock (0: without limit).
type Caller struct {
	Session  uint64
	Ctx      context.Context
	LockWait time.Duration
}

// noLimit stands for a wait without limit (MySQL's lock_wait_timeout
// default is a year).
const noLimit = 365 * 24 * time.Hour

// enter waits until no session holds the lock and counts a transaction of
// session in.
func (r *readLock) enter(ctx context.Context, session uint64, wait time.Duration) error {
	if wait == 0 {
		wait = noLimit
	}
	deadline := time.Now().Add(wait)
	r.mu.Lock()
	for len(r.holders) > 0 {
		if r.ownerPasses && r.holders[session] && len(r.holders) == 1 {
			break // the only holder's own
		}
		if r.holders[session] && !r.ownerPasses {
			r.mu.Unlock()
			return ErrReadLocked
		}
		ch := r.released
		r.mu.Unlock()
		if err := waitFor(ctx, ch, time.Until(deadline)); err != nil {
			return err
		}
		r.mu.Lock()
	}
	r.inflight++
	r.mu.Unlock()
	return nil
}

// exit counts a transaction out.
func (r *readLock) exit() {
	r.mu.Lock()
	r.inflight--
	if r.inflight == 0 && r.drained != nil {
		close(r.drained)
		r.drained = nil
	}
	r.mu.Unlock()
}

// lock makes session a holder and waits for the transactions in flight
// (with ownerPasses, session's own may be among them: lock is then called
// outside them).
func (r *readLock) lock(ctx context.Context, session uint64, wait time.Duration) error {
	if wait == 0 {
		wait = noLimit
	}
	r.mu.Lock()
	if r.holders[session] {
		r.mu.Unlock()
		return nil
	}
	if r.holders == nil {
		r.holders = map[uint64]bool{}
	}
	if len(r.holders) == 0 {
		r.released = make(chan struct{})
	}
	r.holders[session] = true
	deadline := time.Now().Add(wait)
	for r.inflight > 0 {
		if r.drained == nil {
			r.drained = make(chan struct{})
		}
		ch := r.drained
		r.mu.Unlock()
		err := waitFor(ctx, ch, time.Until(deadline))
		r.mu.Lock()
		if err != nil {
			r.releaseLocked(session)
			r.mu.Unlock()
			return err
		}
	}
	r.mu.Unlock()
	return nil
}

// unlock releases session's hold, if it has one.
func (r *readLock) unlock(session uint64) {
	r.mu.Lock()
	r.releaseLocked(session)
	r.mu.Unlock()
}

func (r *readLock) releaseLocked(session uint64) {
	if !r.holders[session] {
		return
	}
	delete(r.holders, session)
	if len(r.holders) == 0 {
		close(r.released)
		r.released = nil
	}
}

// holds reports whether session holds the lock.
func (r *readLock) holds(session uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.holders[session]
}

// waitFor waits for ch to close, at most wait (a non-positive wait has
// already expired), or until ctx ends.
func waitFor(ctx context.Context, ch <-chan struct{}, wait time.Duration) error {
	if wait <= 0 {
		return ErrLockWaitTimeout
	}
	if ctx == nil {
		ctx = context.Background()
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-t.C:
		return ErrLockWaitTimeout
	case <-ctx.Done():
		return ctx.Err()
	}
}

// LockCommits takes the global read lock for session: new commits wait,
// and it returns once those in the pipeline have finished (or with
// ErrLockWaitTimeout after wait, 0 meaning no limit, or ctx's error,
// holding nothing).
func (p *Pipeline) LockCommits(ctx context.Context, session uint64, wait time.Duration) error {
	return p.readLock.lock(ctx, session, wait)
}

// UnlockCommits releases session's global read lock, if it holds it.
func (p *Pipeline) UnlockCommits(session uint64) { p.readLock.unlock(session) }

// HoldsCommitLock reports whether session holds the global read lock.
func (p *Pipeline) HoldsCommitLock(session uint64) bool { return p.readLock.holds(session) }

// LockBackup takes the backup lock for session: other sessions' DDL
// waits, and it returns once the DDL in the pipeline has finished (or
// with ErrLockWaitTimeout after wait, 0 meaning no limit, or ctx's error,
// holding nothing).
func (p *Pipeline) LockBackup(ctx context.Context, session uint64, wait time.Duration) error {
	return p.backupLock.lock(ctx, session, wait)
}

// UnlockBackup releases session's backup lock, if it holds it.
func (p *Pipeline) UnlockBackup(session uint64) { p.backupLock.unlock(session) }
