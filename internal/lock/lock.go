// Package lock is Lockstep's row lock manager: shared and exclusive locks on
// byte-string keys, and gap locks on key ranges (gap.go), held by
// transactions until they end.
//
// Invariants:
//   - A key's holders are mutually compatible (any number of shared, or one
//     exclusive). A request is granted at once if it is compatible with the
//     holders and no incompatible request waits ahead of it (FIFO, so
//     writers are not starved), or if it is a re-request or upgrade by a
//     holder that conflicts with no other holder.
//   - Deadlocks are detected when a request would wait: the waits-for graph
//     (waiter -> holders and earlier incompatible waiters of the key it waits
//     on) is searched from the new waiter; a cycle back to it makes it the
//     victim (ErrDeadlock, MySQL 1213), before it ever sleeps. Since every
//     wait is checked when it starts, the graph never holds a cycle.
//   - A wait ends with the grant, ErrLockWaitTimeout (1205) after the
//     timeout, or the context's error (KILL, client gone).
//
// One mutex guards the table; the work under it is a map lookup and a few
// slice operations. Waiting happens outside it.
package lock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Mode is a lock mode.
type Mode uint8

// Lock modes.
const (
	Shared Mode = iota + 1
	Exclusive
)

func compatible(a, b Mode) bool { return a == Shared && b == Shared }

// Errors. The SQL layer maps them to MySQL error numbers.
var (
	ErrLockWaitTimeout = errors.New("lock wait timeout exceeded; try restarting transaction")
	ErrDeadlock        = errors.New("deadlock found when trying to get lock; try restarting transaction")
)

// Owner is a transaction as the lock manager sees it. Use one per
// transaction; it is not safe for concurrent use by several goroutines.
type Owner struct {
	id      uint64
	held    map[string]Mode
	waiting *entry // guarded by Manager.mu
	// Committing is set while the owner's commit is in the pipeline, so a
	// waiter can ask the pipeline to close its group early.
	Committing atomic.Bool
	// Waited, if set, adds up the nanoseconds the owner waits for locks
	// (a session's statements' lock time).
	Waited *atomic.Int64
	// gaps are its gap locks and insert intents (gap.go).
	gaps *ownerGaps
}

type request struct {
	owner *Owner
	mode  Mode
	done  chan error // buffered(1)
}

type entry struct {
	holders []holder
	waiters []*request
}

type holder struct {
	owner *Owner
	mode  Mode
}

// Stats are counters under InnoDB's status names.
type Stats struct {
	Waits     atomic.Uint64 // Innodb_row_lock_waits
	Deadlocks atomic.Uint64 // Innodb_deadlocks
	Timeouts  atomic.Uint64
	WaitNanos atomic.Uint64 // Innodb_row_lock_time (ns here)
	Current   atomic.Int64  // Innodb_row_lock_current_waits
}

// Manager is the lock table.
type Manager struct {
	mu     sync.Mutex
	keys   map[string]*entry
	nextID atomic.Uint64
	Stats  Stats
	// OnWaitForCommitting is called (outside the mutex) when a request
	// starts waiting for a holder whose commit is in progress.
	OnWaitForCommitting func()
	// spaces holds the gap locks and insert intents by key space
	// (gap.go).
	spaces sync.Map
}

// New returns an empty lock table.
func New() *Manager { return &Manager{keys: make(map[string]*entry)} }

// NewOwner returns a new owner.
func (m *Manager) NewOwner() *Owner {
	return &Owner{id: m.nextID.Add(1)}
}

// Holds reports whether o holds key in at least mode.
func (o *Owner) Holds(key string, mode Mode) bool {
	h, ok := o.held[key]
	return ok && h >= mode
}

// EachHeld calls fn for each key o holds in at least mode (from o's own
// goroutine, as every use of an owner).
func (o *Owner) EachHeld(mode Mode, fn func(key string)) {
	for k, h := range o.held {
		if h >= mode && !isOwnerKey(k) {
			fn(k)
		}
	}
}

// HeldCount is the number of keys o holds.
func (o *Owner) HeldCount() int {
	n := len(o.held)
	for k := range o.held {
		if isOwnerKey(k) {
			n--
		}
	}
	return n
}

// Lock acquires key in mode for o, waiting up to timeout.
func (m *Manager) Lock(ctx context.Context, o *Owner, key string, mode Mode, timeout time.Duration) error {
	if h, ok := o.held[key]; ok && h >= mode {
		return nil
	}
	m.mu.Lock()
	e := m.keys[key]
	if e == nil {
		e = &entry{}
		m.keys[key] = e
	}
	if m.grantable(e, o, mode, len(e.waiters)) {
		m.grant(e, o, mode)
		m.mu.Unlock()
		m.noteHeld(o, key, mode)
		return nil
	}
	r := &request{owner: o, mode: mode, done: make(chan error, 1)}
	e.waiters = append(e.waiters, r)
	o.waiting = e
	if m.deadlocked(o) {
		m.removeWaiter(e, r)
		o.waiting = nil
		m.mu.Unlock()
		m.Stats.Deadlocks.Add(1)
		return ErrDeadlock
	}
	committing := false
	for _, h := range e.holders {
		committing = committing || h.owner.Committing.Load()
	}
	m.mu.Unlock()
	if committing && m.OnWaitForCommitting != nil {
		m.OnWaitForCommitting()
	}

	m.Stats.Waits.Add(1)
	m.Stats.Current.Add(1)
	start := time.Now()
	defer func() {
		m.Stats.Current.Add(-1)
		d := time.Since(start)
		m.Stats.WaitNanos.Add(uint64(d))
		if o.Waited != nil {
			o.Waited.Add(int64(d))
		}
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var err error
	select {
	case err = <-r.done:
	case <-timer.C:
		err = ErrLockWaitTimeout
		m.Stats.Timeouts.Add(1)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		m.mu.Lock()
		select {
		case e2 := <-r.done:
			// Granted while we were giving up: keep the grant.
			if e2 == nil {
				m.mu.Unlock()
				m.noteHeld(o, key, mode)
				return nil
			}
		default:
			m.removeWaiter(e, r)
			o.waiting = nil
			m.promote(key, e)
		}
		m.mu.Unlock()
		return err
	}
	m.noteHeld(o, key, mode)
	return nil
}

// TryLock acquires key in mode for o if that can be done at once (no
// conflicting holder and no waiter ahead, as Lock would grant it), and
// reports whether it did. It never waits, so it never deadlocks (NOWAIT
// and SKIP LOCKED).
func (m *Manager) TryLock(o *Owner, key string, mode Mode) bool {
	if h, ok := o.held[key]; ok && h >= mode {
		return true
	}
	m.mu.Lock()
	e := m.keys[key]
	if e == nil {
		e = &entry{}
		m.keys[key] = e
	}
	if !m.grantable(e, o, mode, len(e.waiters)) {
		m.mu.Unlock()
		return false
	}
	m.grant(e, o, mode)
	m.mu.Unlock()
	m.noteHeld(o, key, mode)
	return true
}

func (m *Manager) noteHeld(o *Owner, key string, mode Mode) {
	if o.held == nil {
		o.held = make(map[string]Mode)
	}
	if o.held[key] < mode {
		o.held[key] = mode
	}
}

// grantable: compatible with every other holder and, unless o already holds
// the key, with every waiter among the first ahead.
func (m *Manager) grantable(e *entry, o *Owner, mode Mode, ahead int) bool {
	already := false
	for _, h := range e.holders {
		if h.owner == o {
			already = true
			continue
		}
		if !compatible(h.mode, mode) {
			return false
		}
	}
	if already {
		return true
	}
	for _, w := range e.waiters[:ahead] {
		if w.owner != o && !compatible(w.mode, mode) {
			return false
		}
	}
	return true
}

func (m *Manager) grant(e *entry, o *Owner, mode Mode) {
	for i := range e.holders {
		if e.holders[i].owner == o {
			if mode > e.holders[i].mode {
				e.holders[i].mode = mode
			}
			return
		}
	}
	e.holders = append(e.holders, holder{o, mode})
}

func (m *Manager) removeWaiter(e *entry, r *request) {
	for i, w := range e.waiters {
		if w == r {
			e.waiters = append(e.waiters[:i], e.waiters[i+1:]...)
			return
		}
	}
}

// blockers lists the owners o waits for on e.
func blockers(e *entry, o *Owner) []*Owner {
	var mode Mode
	pos := -1
	for i, w := range e.waiters {
		if w.owner == o {
			mode, pos = w.mode, i
			break
		}
	}
	if pos < 0 {
		return nil
	}
	var out []*Owner
	for _, h := range e.holders {
		if h.owner != o && !compatible(h.mode, mode) {
			out = append(out, h.owner)
		}
	}
	holdsAlready := false
	for _, h := range e.holders {
		holdsAlready = holdsAlready || h.owner == o
	}
	if !holdsAlready {
		for _, w := range e.waiters[:pos] {
			if w.owner != o && !compatible(w.mode, mode) {
				out = append(out, w.owner)
			}
		}
	}
	return out
}

// deadlocked reports whether the waits-for graph has a path from o back to
// o. Called with mu held, after o's request was queued.
func (m *Manager) deadlocked(o *Owner) bool {
	seen := map[*Owner]bool{}
	stack := blockers(o.waiting, o)
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if x == o {
			return true
		}
		if seen[x] || x.waiting == nil {
			continue
		}
		seen[x] = true
		stack = append(stack, blockers(x.waiting, x)...)
	}
	return false
}

// promote grants waiting requests of key that have become grantable, in
// order. Called with mu held.
func (m *Manager) promote(key string, e *entry) {
	for len(e.waiters) > 0 {
		w := e.waiters[0]
		if !m.grantable(e, w.owner, w.mode, 0) {
			// An upgrade further back may still be grantable.
			granted := false
			for i, x := range e.waiters[1:] {
				for _, h := range e.holders {
					if h.owner == x.owner && m.grantable(e, x.owner, x.mode, 0) {
						m.grant(e, x.owner, x.mode)
						x.owner.waiting = nil
						e.waiters = append(e.waiters[:i+1], e.waiters[i+2:]...)
						x.done <- nil
						granted = true
						break
					}
				}
				if granted {
					break
				}
			}
			if !granted {
				break
			}
			continue
		}
		m.grant(e, w.owner, w.mode)
		w.owner.waiting = nil
		e.waiters = e.waiters[1:]
		w.done <- nil
	}
	if len(e.holders) == 0 && len(e.waiters) == 0 {
		delete(m.keys, key)
	}
}

// ReleaseAll releases every lock o holds (transaction end).
func (m *Manager) ReleaseAll(o *Owner) {
	m.releaseGaps(o)
	if len(o.held) == 0 {
		return
	}
	m.mu.Lock()
	for key := range o.held {
		e := m.keys[key]
		if e == nil {
			continue
		}
		for i, h := range e.holders {
			if h.owner == o {
				e.holders = append(e.holders[:i], e.holders[i+1:]...)
				break
			}
		}
		m.promote(key, e)
	}
	m.mu.Unlock()
	clear(o.held)
}
