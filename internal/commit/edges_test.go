package commit

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// memLog is a Log in memory that counts what the pipeline asks of it.
type memLog struct {
	mu      sync.Mutex
	pos     binlog.Position
	appends int
	syncs   int
	failAt  int           // Append number that fails (0: none)
	slow    time.Duration // every Sync takes this long (a slow disk)
}

func (l *memLog) Current() binlog.Position { l.mu.Lock(); defer l.mu.Unlock(); return l.pos }
func (l *memLog) Append(b []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.appends++
	if l.appends == l.failAt {
		return errors.New("injected write error")
	}
	l.pos.Pos += int64(len(b))
	return nil
}
func (l *memLog) Sync() error {
	time.Sleep(l.slow)
	l.mu.Lock()
	l.syncs++
	l.mu.Unlock()
	return nil
}
func (l *memLog) Rotate(time.Time, binlog.GTIDSet) error {
	return errors.New("memLog does not rotate")
}
func (l *memLog) Rewind(binlog.Position) error { return errors.New("memLog does not rewind") }
func (l *memLog) Publish()                     {}
func (l *memLog) Name(n int) string            { return fmt.Sprintf("mem.%06d", n) }
func (l *memLog) Close() error                 { return nil }

func (l *memLog) counts() (appends, syncs int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.appends, l.syncs
}

// gateStore is a Store whose Apply calls can be held and failed.
type gateStore struct {
	*storage.Engine
	mu      sync.Mutex
	applied int
	hold    chan error // when set, the next Apply waits for a value and returns it
}

func (s *gateStore) Apply(batches []*storage.Batch, ends []binlog.Position, synced bool) error {
	s.mu.Lock()
	s.applied++
	hold := s.hold
	s.hold = nil
	s.mu.Unlock()
	if hold != nil {
		if err := <-hold; err != nil {
			return err
		}
	}
	return s.Engine.Apply(batches, ends, synced)
}

func (s *gateStore) applies() int { s.mu.Lock(); defer s.mu.Unlock(); return s.applied }

func newEdges(t *testing.T, cfg *Config) (*Pipeline, *memLog, *gateStore) {
	t.Helper()
	eng, err := storage.Open(storage.Options{FS: vfs.NewMem(), Dir: "/store"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	log := &memLog{pos: binlog.Position{File: 1, Pos: 4}}
	st := &gateStore{Engine: eng}
	p := New(cfg, log, st, binlog.GTIDSet{})
	t.Cleanup(func() { p.Close() })
	return p, log, st
}

func emptyTrx() *Trx {
	var ev binlog.TrxEvents
	ev.AddQuery("db", "BEGIN", binlog.QueryOptions{})
	ev.AddXID(1)
	return &Trx{Events: &ev}
}

// waitUntil polls cond for at most 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// A failed apply fails the groups queued behind it, which are never
// applied: storage must not show a transaction without one committed
// before it. All of them are in the binlog (a restart replays them), so
// their outcome is unknown, not refused; later commits are refused.
func TestFailedApplyFailsLaterGroups(t *testing.T) {
	p, log, st := newEdges(t, newConfig(1, false, 1<<30))
	gate := make(chan error)
	st.hold = gate
	first := emptyTrx()
	if err := p.Submit(first); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the first group's apply", func() bool { return st.applies() == 1 })
	second := emptyTrx()
	if err := p.Submit(second); err != nil {
		t.Fatal(err)
	}
	// The second group is written and handed over while the first is
	// being applied.
	waitUntil(t, "the second group's write", func() bool { a, _ := log.counts(); return a == 2 })
	gate <- errors.New("injected apply error")
	if err := first.Wait(); !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("the first transaction, whose apply failed: %v, want ErrOutcomeUnknown", err)
	}
	if err := second.Wait(); !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("a transaction written after a failed apply: %v, want ErrOutcomeUnknown", err)
	}
	if n := st.applies(); n != 1 {
		t.Fatalf("%d applies after a failed one, want none", n-1)
	}
	if err := p.Commit(emptyTrx()); !errors.Is(err, ErrStopped) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("commit after a failed apply: %v, want ErrStopped only", err)
	}
}

// A failed write fails the group and stops the pipeline before anything
// reaches storage. The group's bytes may be in the file (the write may
// have failed part-way), so its outcome is unknown; later commits are
// refused.
func TestFailedWriteStopsBeforeStorage(t *testing.T) {
	p, log, st := newEdges(t, newConfig(1, true, 1<<30))
	log.failAt = 2
	if err := p.Commit(emptyTrx()); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(emptyTrx()); !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("a transaction whose write failed: %v, want ErrOutcomeUnknown", err)
	}
	if n := st.applies(); n != 1 {
		t.Fatalf("%d applies, want 1", n)
	}
	if err := p.Commit(emptyTrx()); !errors.Is(err, ErrStopped) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("commit after a failed write: %v, want ErrStopped only", err)
	}
}

// The sync policy reaches the log: sync_binlog=1 syncs every group before
// it is acknowledged, sync_binlog=0 with flush 2 none of them.
func TestSyncPolicyReachesTheLog(t *testing.T) {
	for _, c := range []struct {
		syncBinlog int64
		want       int
	}{{1, 5}, {0, 0}} {
		p, log, _ := newEdges(t, newConfig(c.syncBinlog, false, 1<<30))
		for range 5 {
			if err := p.Commit(emptyTrx()); err != nil {
				t.Fatal(err)
			}
		}
		if _, syncs := log.counts(); syncs != c.want {
			t.Errorf("sync_binlog=%d: %d syncs after 5 commits, want %d", c.syncBinlog, syncs, c.want)
		}
	}
}

// commitAs commits an empty transaction as session id.
func commitAs(t *testing.T, p *Pipeline, id uint64) {
	t.Helper()
	trx := emptyTrx()
	trx.Session = id
	if err := p.Commit(trx); err != nil {
		t.Error(err)
	}
}

// Gathering on a slow disk: once four sessions have committed, a group
// that one of them opens waits for the other three, and the four share
// one write and one sync. The margins are wide (the patience is half of a
// 400 ms sync, the sessions arrive 20 ms apart), so a slow machine does
// not split the group.
func TestGatheringWaitsForRecentSessions(t *testing.T) {
	cfg := newConfig(1, false, 1<<30)
	cfg.Gather.Store(true)
	p, log, _ := newEdges(t, cfg)
	log.slow = 400 * time.Millisecond
	var wg sync.WaitGroup
	for id := range uint64(4) {
		wg.Go(func() { commitAs(t, p, id+1) })
	}
	wg.Wait()
	appends, syncs := log.counts()
	for id := range uint64(4) {
		wg.Go(func() { commitAs(t, p, id+1) })
		time.Sleep(20 * time.Millisecond)
	}
	wg.Wait()
	a, s := log.counts()
	if a-appends != 1 || s-syncs != 1 {
		t.Fatalf("four recent sessions committed in %d writes and %d syncs, want one of each", a-appends, s-syncs)
	}
	if n := p.Stats.GatherWaits.Load(); n == 0 {
		t.Fatal("no group waited")
	}
}

// A lone session never waits for anyone, however slow the disk.
func TestGatheringNeverHoldsALoneSession(t *testing.T) {
	cfg := newConfig(1, false, 1<<30)
	cfg.Gather.Store(true)
	p, log, _ := newEdges(t, cfg)
	log.slow = 20 * time.Millisecond
	for range 5 {
		commitAs(t, p, 7)
	}
	if n := p.Stats.GatherWaits.Load(); n != 0 {
		t.Fatalf("a lone session's groups waited %d times", n)
	}
}
