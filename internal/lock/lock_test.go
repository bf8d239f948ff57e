package lock

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var bg = context.Background()

// waitForWaiters blocks until n lock requests are waiting (instead of
// sleeping and hoping the other goroutine got there).
func waitForWaiters(t *testing.T, m *Manager, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for m.Stats.Current.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters never appeared", n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestSharedCompatibleExclusiveBlocks(t *testing.T) {
	m := New()
	a, b, c := m.NewOwner(), m.NewOwner(), m.NewOwner()
	if err := m.Lock(bg, a, "k", Shared, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(bg, b, "k", Shared, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(bg, c, "k", Exclusive, 20*time.Millisecond); !errors.Is(err, ErrLockWaitTimeout) {
		t.Fatalf("X over two S: %v", err)
	}
	m.ReleaseAll(a)
	m.ReleaseAll(b)
	if err := m.Lock(bg, c, "k", Exclusive, time.Second); err != nil {
		t.Fatal(err)
	}
	if m.Stats.Timeouts.Load() != 1 || m.Stats.Waits.Load() != 1 {
		t.Fatalf("stats: %d timeouts, %d waits", m.Stats.Timeouts.Load(), m.Stats.Waits.Load())
	}
}

func TestWaiterGrantedOnRelease(t *testing.T) {
	m := New()
	a, b := m.NewOwner(), m.NewOwner()
	if err := m.Lock(bg, a, "k", Exclusive, time.Second); err != nil {
		t.Fatal(err)
	}
	got := make(chan error)
	go func() { got <- m.Lock(bg, b, "k", Exclusive, 5*time.Second) }()
	waitForWaiters(t, m, 1)
	m.ReleaseAll(a)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if !b.Holds("k", Exclusive) {
		t.Fatal("b does not hold k")
	}
}

func TestDeadlockDetected(t *testing.T) {
	m := New()
	a, b := m.NewOwner(), m.NewOwner()
	m.Lock(bg, a, "x", Exclusive, time.Second)
	m.Lock(bg, b, "y", Exclusive, time.Second)
	got := make(chan error)
	go func() { got <- m.Lock(bg, a, "y", Exclusive, time.Minute) }()
	waitForWaiters(t, m, 1)
	// b closes the cycle. It is refused before it waits: a detector that
	// only ran after b's lock wait timeout (a minute) would answer with
	// ErrLockWaitTimeout instead, well after the bound below.
	victim := make(chan error, 1)
	go func() { victim <- m.Lock(bg, b, "x", Exclusive, time.Minute) }()
	select {
	case err := <-victim:
		if !errors.Is(err, ErrDeadlock) {
			t.Fatalf("b: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("deadlock not detected within 20 s (b's lock wait timeout is a minute)")
	}
	m.ReleaseAll(b) // the victim rolls back
	if err := <-got; err != nil {
		t.Fatalf("a: %v", err)
	}
	if m.Stats.Deadlocks.Load() != 1 {
		t.Fatal("deadlock not counted")
	}
}

func TestUpgradeDeadlock(t *testing.T) {
	m := New()
	a, b := m.NewOwner(), m.NewOwner()
	m.Lock(bg, a, "k", Shared, time.Second)
	m.Lock(bg, b, "k", Shared, time.Second)
	got := make(chan error)
	go func() { got <- m.Lock(bg, a, "k", Exclusive, 5*time.Second) }()
	waitForWaiters(t, m, 1)
	if err := m.Lock(bg, b, "k", Exclusive, 5*time.Second); !errors.Is(err, ErrDeadlock) {
		t.Fatalf("second upgrade: %v", err)
	}
	m.ReleaseAll(b)
	if err := <-got; err != nil {
		t.Fatalf("first upgrade: %v", err)
	}
}

func TestCancelledWait(t *testing.T) {
	m := New()
	a, b := m.NewOwner(), m.NewOwner()
	m.Lock(bg, a, "k", Exclusive, time.Second)
	ctx, cancel := context.WithCancel(bg)
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	if err := m.Lock(ctx, b, "k", Exclusive, 5*time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	m.ReleaseAll(a)
	if len(m.keys) != 0 {
		t.Fatalf("lock table not empty: %d keys", len(m.keys))
	}
}

func TestFIFONoWriterStarvation(t *testing.T) {
	m := New()
	r1, w, r2 := m.NewOwner(), m.NewOwner(), m.NewOwner()
	m.Lock(bg, r1, "k", Shared, time.Second)
	go m.Lock(bg, w, "k", Exclusive, 5*time.Second)
	waitForWaiters(t, m, 1)
	// A new reader queues behind the waiting writer.
	if err := m.Lock(bg, r2, "k", Shared, 20*time.Millisecond); !errors.Is(err, ErrLockWaitTimeout) {
		t.Fatalf("reader jumped the queue: %v", err)
	}
}

// TestRandomizedMutualExclusion runs many owners locking random keys in
// random order: exclusive holders must be alone, and every transaction ends
// (granted, deadlock victim or timeout) with nothing left in the table.
func TestRandomizedMutualExclusion(t *testing.T) {
	m := New()
	const keys = 6
	var readers [keys]atomic.Int32
	var writers [keys]atomic.Int32
	var wg sync.WaitGroup
	var deadlocks, granted atomic.Int64
	names := []string{"a", "b", "c", "d", "e", "f"}
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 5))
			for range 200 {
				o := m.NewOwner()
				var held []int
				var heldMode []Mode
				ok := true
				for range 1 + r.IntN(3) {
					k := r.IntN(keys)
					mode := Shared
					if r.IntN(2) == 0 {
						mode = Exclusive
					}
					err := m.Lock(bg, o, names[k], mode, 50*time.Millisecond)
					if errors.Is(err, ErrDeadlock) {
						deadlocks.Add(1)
						ok = false
						break
					}
					if err != nil {
						ok = false
						break
					}
					held = append(held, k)
					heldMode = append(heldMode, mode)
				}
				if ok {
					granted.Add(1)
					// While holding: an exclusive holder is alone, a
					// shared one sees no exclusive holder.
					strongest := map[int]Mode{}
					for i, k := range held {
						strongest[k] = max(strongest[k], heldMode[i])
					}
					for k, mode := range strongest {
						if mode == Exclusive {
							if writers[k].Add(1) != 1 || readers[k].Load() != 0 {
								t.Errorf("key %s: exclusive holder not alone", names[k])
							}
						} else {
							readers[k].Add(1)
							if writers[k].Load() != 0 {
								t.Errorf("key %s: shared holder beside an exclusive one", names[k])
							}
						}
					}
					time.Sleep(time.Duration(r.IntN(200)) * time.Microsecond)
					for k, mode := range strongest {
						if mode == Exclusive {
							writers[k].Add(-1)
						} else {
							readers[k].Add(-1)
						}
					}
				}
				m.ReleaseAll(o)
			}
		}()
	}
	wg.Wait()
	if len(m.keys) != 0 {
		t.Fatalf("%d keys left in the lock table", len(m.keys))
	}
	if granted.Load() == 0 {
		t.Fatal("no transaction got its locks")
	}
	t.Logf("granted %d, deadlocks %d, waits %d", granted.Load(), deadlocks.Load(), m.Stats.Waits.Load())
}
