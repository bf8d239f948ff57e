package lock

import (
	"errors"
	"testing"
	"time"
)

// TestGapBlocksInsert: an insert into another owner's gap waits until
// that owner ends; inserts outside it, into its own owner's gap, and
// into a gap that has not grown over them yet do not.
func TestGapBlocksInsert(t *testing.T) {
	m := New()
	a, b := m.NewOwner(), m.NewOwner()
	g := m.LockGap(a, "t", []byte("b"))
	if _, reread, err := m.ExtendGap(bg, g, []byte("d"), time.Second, true); err != nil || reread {
		t.Fatalf("extend over nothing: %v %v", reread, err)
	}
	for _, k := range []string{"a", "d", "e"} {
		if err := m.InsertIntent(bg, b, "t", 20*time.Millisecond, []byte(k)); err != nil {
			t.Fatalf("insert %q outside [b, d): %v", k, err)
		}
	}
	if err := m.InsertIntent(bg, a, "t", 20*time.Millisecond, []byte("c")); err != nil {
		t.Fatalf("insert into its own gap: %v", err)
	}
	if err := m.InsertIntent(bg, b, "u", 20*time.Millisecond, []byte("c")); err != nil {
		t.Fatalf("insert into another space: %v", err)
	}
	c := m.NewOwner()
	if err := m.InsertIntent(bg, c, "t", 20*time.Millisecond, []byte("x"), []byte("bb")); !errors.Is(err, ErrLockWaitTimeout) {
		t.Fatalf("insert into [b, d) of another owner: %v, want a timeout", err)
	}
	got := make(chan error)
	go func() { got <- m.InsertIntent(bg, c, "t", 5*time.Second, []byte("c")) }()
	waitForWaiters(t, m, 1)
	m.ReleaseAll(a)
	if err := <-got; err != nil {
		t.Fatalf("insert after the gap's owner ended: %v", err)
	}
}

// TestGapWaitsForIntent: a gap growing over a key another owner
// announced waits for that owner and asks for the part to be read again;
// over its own keys, or keys announced elsewhere, it does not.
func TestGapWaitsForIntent(t *testing.T) {
	m := New()
	a, b := m.NewOwner(), m.NewOwner()
	if err := m.InsertIntent(bg, b, "t", time.Second, []byte("c")); err != nil {
		t.Fatal(err)
	}
	if err := m.InsertIntent(bg, a, "t", time.Second, []byte("f")); err != nil {
		t.Fatal(err)
	}
	g := m.LockGap(a, "t", []byte("a"))
	if from, reread, err := m.ExtendGap(bg, g, []byte("b"), time.Second, true); err != nil || reread || string(from) != "a" {
		t.Fatalf("extend to b: %q %v %v", from, reread, err)
	}
	if _, _, err := m.ExtendGap(bg, g, []byte("d"), 20*time.Millisecond, true); !errors.Is(err, ErrLockWaitTimeout) {
		t.Fatalf("extend over another's intent: %v, want a timeout", err)
	}
	// The failed extension still covers [a, d): b's later insert there waits.
	g2 := m.LockGap(a, "t", []byte("e"))
	if _, reread, err := m.ExtendGap(bg, g2, []byte("g"), time.Second, true); err != nil || reread {
		t.Fatalf("extend over its own intent: %v %v", reread, err)
	}
	m.ReleaseAll(a)
	a2 := m.NewOwner()
	g3 := m.LockGap(a2, "t", []byte("b"))
	type res struct {
		from   string
		reread bool
		err    error
	}
	got := make(chan res)
	go func() {
		from, reread, err := m.ExtendGap(bg, g3, nil, 5*time.Second, true)
		got <- res{string(from), reread, err}
	}()
	waitForWaiters(t, m, 1)
	m.ReleaseAll(b)
	if r := <-got; r.err != nil || !r.reread || r.from != "b" {
		t.Fatalf("extend after the inserter ended: %+v", r)
	}
	if g3.Covered() != nil {
		t.Fatal("a gap extended to nil is not open")
	}
}

// TestGapRereadsAfterEnd: an owner that announced a key in the part a gap
// grows over and ended after the gap's view was taken makes the scan read
// again; one whose keys lie elsewhere does not.
func TestGapRereadsAfterEnd(t *testing.T) {
	m := New()
	a, b, c := m.NewOwner(), m.NewOwner(), m.NewOwner()
	g := m.LockGap(a, "t", []byte("a"))
	if err := m.InsertIntent(bg, b, "t", time.Second, []byte("x"), []byte("y")); err != nil {
		t.Fatal(err)
	}
	if err := m.InsertIntent(bg, c, "t", time.Second, []byte("c")); err != nil {
		t.Fatal(err)
	}
	m.ReleaseAll(b)
	m.ReleaseAll(c)
	if _, reread, err := m.ExtendGap(bg, g, []byte("b"), time.Second, true); err != nil || reread {
		t.Fatalf("extend over [a, b): %v %v; nobody wrote there", reread, err)
	}
	if from, reread, err := m.ExtendGap(bg, g, []byte("d"), time.Second, true); err != nil || !reread || string(from) != "b" {
		t.Fatalf("extend over [b, d) where c committed: %q %v %v", from, reread, err)
	}
	if _, reread, err := m.ExtendGap(bg, g, []byte("w"), time.Second, true); err != nil || reread {
		t.Fatalf("extend over [d, w), read after every end: %v %v", reread, err)
	}
}

// TestGapDeadlock: a gap holder waiting for a row the inserter it blocks
// holds is a deadlock, found by the lock table.
func TestGapDeadlock(t *testing.T) {
	m := New()
	a, b := m.NewOwner(), m.NewOwner()
	g := m.LockGap(a, "t", []byte("a"))
	if _, _, err := m.ExtendGap(bg, g, nil, time.Second, true); err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(bg, b, "row", Exclusive, time.Second); err != nil {
		t.Fatal(err)
	}
	got := make(chan error)
	go func() { got <- m.InsertIntent(bg, b, "t", 5*time.Second, []byte("k")) }()
	waitForWaiters(t, m, 1)
	if err := m.Lock(bg, a, "row", Exclusive, 5*time.Second); !errors.Is(err, ErrDeadlock) {
		t.Fatalf("a waits for b's row while b waits for a's gap: %v, want a deadlock", err)
	}
	m.ReleaseAll(a)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// TestGapManyIntents: an owner announcing more keys than are kept one by
// one is waited for over the span of its keys, and forgotten at its end.
func TestGapManyIntents(t *testing.T) {
	m := New()
	a, b := m.NewOwner(), m.NewOwner()
	for i := range maxIntents + 10 {
		k := []byte{'k', byte(i >> 8), byte(i)}
		if err := m.InsertIntent(bg, b, "t", time.Second, k); err != nil {
			t.Fatal(err)
		}
	}
	s := m.space("t")
	if s.intents.Len() != 0 || s.spans[b] == nil {
		t.Fatalf("%d intents kept one by one, span %v", s.intents.Len(), s.spans[b])
	}
	g := m.LockGap(a, "t", []byte("a"))
	if _, reread, err := m.ExtendGap(bg, g, []byte("k"), time.Second, true); err != nil || reread {
		t.Fatalf("extend below the span: %v %v", reread, err)
	}
	if _, _, err := m.ExtendGap(bg, g, []byte("k\x00\x05"), time.Second, false); !errors.Is(err, ErrWouldWait) {
		t.Fatalf("extend into the span: %v, want ErrWouldWait", err)
	}
	m.ReleaseAll(b)
	if len(s.spans) != 0 {
		t.Fatal("an ended owner's span is kept")
	}
}

// TestGapOverAnnouncedBound: a gap that starts exactly at a key another
// owner announced finds it (the search starts at the gap's first key).
func TestGapOverAnnouncedBound(t *testing.T) {
	m := New()
	a, b := m.NewOwner(), m.NewOwner()
	if err := m.InsertIntent(bg, b, "t", time.Second, []byte("k")); err != nil {
		t.Fatal(err)
	}
	g := m.LockGap(a, "t", []byte("k"))
	if _, _, err := m.ExtendGap(bg, g, []byte("k\x00"), time.Second, false); !errors.Is(err, ErrWouldWait) {
		t.Fatalf("a gap over an announced key: %v, want ErrWouldWait", err)
	}
}
