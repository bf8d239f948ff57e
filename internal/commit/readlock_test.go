package commit

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestReadLock walks the global read lock's rules on the lock alone: the
// lock waits for transactions in flight, holds new ones back until the
// last holder releases it, refuses the holder's own commits, and every
// wait ends at its timeout or its context.
func TestReadLock(t *testing.T) {
	var r readLock
	ctx := context.Background()
	if err := r.enter(ctx, 1, 0); err != nil {
		t.Fatal(err)
	}
	// A transaction in flight: the lock waits for it, and gives up at its
	// timeout holding nothing.
	if err := r.lock(ctx, 9, 20*time.Millisecond); !errors.Is(err, ErrLockWaitTimeout) {
		t.Fatalf("lock with a commit in flight: %v", err)
	}
	if r.holds(9) {
		t.Fatal("a lock that timed out is held")
	}
	locked := make(chan error, 1)
	go func() { locked <- r.lock(ctx, 9, 0) }()
	select {
	case err := <-locked:
		t.Fatalf("lock returned with a commit in flight: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	// While the lock waits, new transactions wait too.
	if err := r.enter(ctx, 2, 20*time.Millisecond); !errors.Is(err, ErrLockWaitTimeout) {
		t.Fatalf("enter while a lock waits: %v", err)
	}
	r.exit()
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	// Held: the holder's own commit is refused, others wait.
	if err := r.enter(ctx, 9, time.Second); !errors.Is(err, ErrReadLocked) {
		t.Fatalf("the holder's commit: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := r.enter(cctx, 3, time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("a killed wait: %v", err)
	}
	// A second holder: commits resume only when both have released.
	if err := r.lock(ctx, 8, time.Second); err != nil {
		t.Fatal(err)
	}
	entered := make(chan error, 1)
	go func() { entered <- r.enter(ctx, 4, 0) }()
	r.unlock(9)
	select {
	case err := <-entered:
		t.Fatalf("a commit went in while a holder remained: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	r.unlock(8)
	if err := <-entered; err != nil {
		t.Fatal(err)
	}
	r.exit()
	r.unlock(8) // releasing twice is harmless
	if r.inflight != 0 || len(r.holders) != 0 {
		t.Fatalf("left: %d in flight, holders %v", r.inflight, r.holders)
	}
}

// TestBackupLock: the backup lock lets its holder's own DDL in while it
// is the only holder, and holds everyone's back while another session
// holds it too.
func TestBackupLock(t *testing.T) {
	r := readLock{ownerPasses: true}
	ctx := context.Background()
	if err := r.lock(ctx, 1, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := r.enter(ctx, 1, time.Second); err != nil {
		t.Fatalf("the only holder's own DDL: %v", err)
	}
	r.exit()
	if err := r.enter(ctx, 2, 20*time.Millisecond); !errors.Is(err, ErrLockWaitTimeout) {
		t.Fatalf("another session's DDL while held: %v", err)
	}
	if err := r.lock(ctx, 2, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := r.enter(ctx, 1, 20*time.Millisecond); !errors.Is(err, ErrLockWaitTimeout) {
		t.Fatalf("a holder's DDL while another session holds it too: %v", err)
	}
	r.unlock(2)
	r.unlock(1)
	if err := r.enter(ctx, 2, time.Second); err != nil {
		t.Fatal(err)
	}
	r.exit()
}
