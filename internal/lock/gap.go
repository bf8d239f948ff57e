package lock

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/btree"
)

// Gap locks keep a locking range read's range free of new keys until its
// transaction ends, as InnoDB's next-key locks do at REPEATABLE READ: no
// phantom appears when the range is read again.
//
// Keys live in spaces (a table's keys, say). A scan takes a Gap at the
// start of its range and extends it over each key it reaches, to the end
// of the range if it gets there: a scan that stops early (LIMIT) leaves
// the rest of the range open, as InnoDB's does. A transaction about to
// insert keys announces them first (InsertIntent); the announcement
// stays until the transaction ends.
//
// Invariants, for any gap G of owner A and insert intent of key k by
// owner B != A in the same space, each checked under the space's mutex:
//   - If G covers k when B announces it, B waits until A ends, then
//     checks again. Gaps do not conflict with each other, nor with their
//     own owner's inserts.
//   - If k is announced when G grows over it, A waits until B ends and
//     the scan reads that part of its range again (ExtendGap says so), so
//     it sees k if B committed it.
//   - A scan's storage view must show every key whose intent is gone.
//     An owner's intents go at its end, after its commit is visible;
//     each space keeps the key span of the last maxEnded owners that
//     ended. A scan reads again from where its gap stood whenever an
//     owner that ended after its view was taken had announced a key in
//     the part the gap grows over, or when that record is lost.
//
// Waiting for an owner is waiting for a shared lock on its owner key,
// which it holds exclusively from its first gap or intent until its end:
// the lock table's deadlock detection and timeouts cover gap waits too.

// maxEnded is how many ended owners' key spans a space remembers.
const maxEnded = 1024

// maxIntents is how many keys an owner announces one by one in a space;
// past that (a bulk load) its intent becomes the span from its smallest
// to its largest key, which a gap growing over it waits for as a whole.
const maxIntents = 4096

type intent struct {
	key   string
	owner *Owner
}

// lessIntent orders intents by key, then owner; an intent without an
// owner (a search pivot) comes first among its key's.
func lessIntent(a, b intent) bool {
	if a.key != b.key {
		return a.key < b.key
	}
	return a.owner.ordinal() < b.owner.ordinal()
}

func (o *Owner) ordinal() uint64 {
	if o == nil {
		return 0
	}
	return o.id
}

// ended is the key span an owner announced in a space.
type ended struct{ lo, hi string } // smallest and largest key

type space struct {
	mu      sync.Mutex
	gaps    map[*Gap]struct{}
	intents *btree.BTreeG[intent]
	// spans are the intents of owners past maxIntents keys here.
	spans map[*Owner]*ended
	// endSeq counts the owners with intents here that ended; ends holds
	// the last maxEnded of them, the one numbered n at n % maxEnded.
	endSeq uint64
	ends   [maxEnded]ended
}

// Gap is a scan's gap lock: [lo, hi), or [lo, +inf) once open.
type Gap struct {
	s      *space
	owner  *Owner
	lo, hi []byte
	open   bool
	// seen: ends up to this sequence number are in the scan's view.
	seen uint64
}

// ownerGaps is what an owner holds in the spaces.
type ownerGaps struct {
	gaps    []*Gap
	intents map[*space][]string
}

// ownerKeyPrefix starts the owner keys, which the owners' held keys
// (EachHeld, HeldCount) leave out: they are not rows.
const ownerKeyPrefix = "\x00gap-owner/"

func ownerKey(o *Owner) string { return ownerKeyPrefix + strconv.FormatUint(o.id, 10) }

func isOwnerKey(k string) bool { return strings.HasPrefix(k, ownerKeyPrefix) }

func (m *Manager) space(name string) *space {
	if s, ok := m.spaces.Load(name); ok {
		return s.(*space)
	}
	s, _ := m.spaces.LoadOrStore(name, &space{gaps: map[*Gap]struct{}{}, intents: btree.NewG(16, lessIntent), spans: map[*Owner]*ended{}})
	return s.(*space)
}

// enter makes o waitable: it holds its owner key from its first gap or
// intent. Called from o's goroutine.
func (m *Manager) enter(o *Owner) {
	if o.gaps != nil {
		return
	}
	o.gaps = &ownerGaps{intents: map[*space][]string{}}
	m.TryLock(o, ownerKey(o), Exclusive) // nobody else ever takes it exclusively
}

// waitFor waits until each of owners has ended.
func (m *Manager) waitFor(ctx context.Context, o *Owner, owners map[*Owner]bool, timeout time.Duration) error {
	for w := range owners {
		if err := m.Lock(ctx, o, ownerKey(w), Shared, timeout); err != nil {
			return err
		}
	}
	return nil
}

// InsertIntent announces that o inserts keys (of space name), waiting
// while another owner's gap covers one of them.
func (m *Manager) InsertIntent(ctx context.Context, o *Owner, name string, timeout time.Duration, keys ...[]byte) error {
	s := m.space(name)
	m.enter(o)
	for {
		wait := s.tryAnnounce(o, keys)
		if wait == nil {
			return nil
		}
		if err := m.waitFor(ctx, o, wait, timeout); err != nil {
			return err
		}
	}
}

// tryAnnounce announces keys for o unless other owners' gaps cover one;
// it returns those owners.
func (s *space) tryAnnounce(o *Owner, keys [][]byte) (wait map[*Owner]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for g := range s.gaps {
		if g.owner == o {
			continue
		}
		for _, k := range keys {
			if g.covers(k) {
				if wait == nil {
					wait = map[*Owner]bool{}
				}
				wait[g.owner] = true
				break
			}
		}
	}
	if wait == nil {
		s.announce(o, keys)
	}
	return wait
}

// announce records o's intent to insert keys. Called with s.mu held.
func (s *space) announce(o *Owner, keys [][]byte) {
	if sp := s.spans[o]; sp != nil {
		for _, k := range keys {
			sp.lo, sp.hi = min(sp.lo, string(k)), max(sp.hi, string(k))
		}
		return
	}
	for _, k := range keys {
		ks := string(k)
		if _, had := s.intents.ReplaceOrInsert(intent{key: ks, owner: o}); !had {
			o.gaps.intents[s] = append(o.gaps.intents[s], ks)
		}
	}
	mine := o.gaps.intents[s]
	if len(mine) <= maxIntents {
		return
	}
	sp := &ended{lo: mine[0], hi: mine[0]}
	for _, k := range mine {
		s.intents.Delete(intent{key: k, owner: o})
		sp.lo, sp.hi = min(sp.lo, k), max(sp.hi, k)
	}
	s.spans[o] = sp
	o.gaps.intents[s] = []string{sp.lo, sp.hi}
}

func (g *Gap) covers(k []byte) bool {
	return bytes.Compare(k, g.lo) >= 0 && (g.open || bytes.Compare(k, g.hi) < 0)
}

// LockGap starts o's gap at lo (space name), covering nothing yet. Take
// the scan's storage view after it.
func (m *Manager) LockGap(o *Owner, name string, lo []byte) *Gap {
	s := m.space(name)
	m.enter(o)
	g := &Gap{s: s, owner: o, lo: append([]byte(nil), lo...)}
	g.hi = g.lo
	s.mu.Lock()
	s.gaps[g] = struct{}{}
	g.seen = s.endSeq
	s.mu.Unlock()
	o.gaps.gaps = append(o.gaps.gaps, g)
	return g
}

// Covered is where g ends (nil once open).
func (g *Gap) Covered() []byte {
	if g.open {
		return nil
	}
	return g.hi
}

// ErrWouldWait: ExtendGap, told not to wait, had to.
var ErrWouldWait = errors.New("a gap lock would wait")

// ExtendGap grows g to end at to (nil: open to +inf). If the part it grows
// over [from, to) may hold keys the scan's view lacks, it waits for the
// owners announcing keys there to end (or, unless wait, fails with
// ErrWouldWait) and reports reread: the scan must read from from again,
// with a view taken after this call.
func (m *Manager) ExtendGap(ctx context.Context, g *Gap, to []byte, timeout time.Duration, wait bool) (from []byte, reread bool, err error) {
	if g.open || (to != nil && bytes.Compare(to, g.hi) <= 0) {
		return g.hi, false, nil
	}
	from = g.hi
	owners, stale := g.s.grow(g, from, to)
	if owners == nil && !stale {
		return from, false, nil
	}
	if owners != nil && !wait {
		return from, false, ErrWouldWait
	}
	if err := m.waitFor(ctx, g.owner, owners, timeout); err != nil {
		return from, false, err
	}
	g.s.mu.Lock()
	g.seen = g.s.endSeq
	g.s.mu.Unlock()
	return from, true, nil
}

// grow extends g over [from, to) and returns the other owners with keys
// announced there, and whether an owner that ended after g's view was
// taken may have added keys there (stale).
func (s *space) grow(g *Gap, from, to []byte) (owners map[*Owner]bool, stale bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	add := func(o *Owner) {
		if owners == nil {
			owners = map[*Owner]bool{}
		}
		owners[o] = true
	}
	s.intents.AscendGreaterOrEqual(intent{key: string(from)}, func(it intent) bool {
		if to != nil && it.key >= string(to) {
			return false
		}
		if it.owner != g.owner {
			add(it.owner)
		}
		return true
	})
	for o, sp := range s.spans {
		if o != g.owner && sp.hi >= string(from) && (to == nil || sp.lo < string(to)) {
			add(o)
		}
	}
	stale = s.endSeq-g.seen > maxEnded // some ends are no longer known
	for n := g.seen + 1; !stale && n <= s.endSeq; n++ {
		e := &s.ends[n%maxEnded]
		stale = e.hi >= string(from) && (to == nil || e.lo < string(to))
	}
	if to == nil {
		g.open = true
	} else {
		g.hi = append([]byte(nil), to...)
	}
	return owners, stale
}

// releaseGaps drops o's gaps and intents, before its locks go (a waiter
// woken by its end must find them gone).
func (m *Manager) releaseGaps(o *Owner) {
	og := o.gaps
	if og == nil {
		return
	}
	spaces := map[*space]bool{}
	for _, g := range og.gaps {
		spaces[g.s] = true
	}
	for s := range og.intents {
		spaces[s] = true
	}
	for s := range spaces {
		s.release(o, og)
	}
	o.gaps = nil
}

// release drops og's gaps and intents in s, remembering the span of the
// keys it announced there.
func (s *space) release(o *Owner, og *ownerGaps) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range og.gaps {
		if g.s == s {
			delete(s.gaps, g)
		}
	}
	keys := og.intents[s]
	if len(keys) == 0 {
		return
	}
	e := ended{lo: keys[0], hi: keys[0]}
	if sp := s.spans[o]; sp != nil {
		e = *sp
		delete(s.spans, o)
	} else {
		for _, k := range keys {
			s.intents.Delete(intent{key: k, owner: o})
			e.lo, e.hi = min(e.lo, k), max(e.hi, k)
		}
	}
	s.endSeq++
	s.ends[s.endSeq%maxEnded] = e
}
