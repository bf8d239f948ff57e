package server

import "testing"

// TestHeapMarks: the low and high marks follow what is in use as it is
// observed, and a reset (TRUNCATE TABLE) starts the counts from a
// baseline that zeroes the frees and restarts both marks at what is in
// use.
func TestHeapMarks(t *testing.T) {
	var m heapMarks
	at := func(allocs, frees uint64) heapCounts {
		return heapCounts{allocs: allocs, frees: frees, allocBytes: 16 * allocs, freeBytes: 16 * frees}
	}
	steps := []struct {
		c                        heapCounts
		lowC, highC, lowB, highB uint64
	}{
		{at(100, 40), 60, 60, 960, 960},
		{at(150, 50), 60, 100, 960, 1600},
		{at(160, 130), 30, 100, 480, 1600},
		{at(170, 135), 30, 100, 480, 1600},
	}
	for i, s := range steps {
		base, lowC, highC, lowB, highB := m.observe(s.c)
		if base != (heapCounts{}) || lowC != s.lowC || highC != s.highC || lowB != s.lowB || highB != s.highB {
			t.Fatalf("step %d: base %+v, count %d..%d, bytes %d..%d; want no base, %d..%d, %d..%d",
				i, base, lowC, highC, lowB, highB, s.lowC, s.highC, s.lowB, s.highB)
		}
	}
	m.reset(at(170, 135))
	c := at(180, 140)
	base, lowC, highC, _, highB := m.observe(c)
	if c.allocs-base.allocs != 45 || c.frees-base.frees != 5 || c.allocBytes-base.allocBytes != 720 || c.freeBytes-base.freeBytes != 80 {
		t.Fatalf("after the reset: allocs %d, frees %d, bytes %d and %d; want 45, 5, 720, 80",
			c.allocs-base.allocs, c.frees-base.frees, c.allocBytes-base.allocBytes, c.freeBytes-base.freeBytes)
	}
	if lowC != 35 || highC != 40 || highB != 640 {
		t.Fatalf("marks after the reset: count %d..%d, high bytes %d; want 35..40, 640", lowC, highC, highB)
	}
}
