package binlog

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// randomIntervals returns n intervals of small numbers (so that they
// overlap and touch) in random order, as text and as a model set built
// one AddRange at a time.
func randomIntervals(r *rand.Rand, u UUID, n int) (string, GTIDSet) {
	var model GTIDSet
	var b strings.Builder
	b.WriteString(u.String())
	for range n {
		a := 1 + r.Uint64N(200)
		e := a + r.Uint64N(5)
		model.AddRange(u, a, e+1)
		if a == e {
			fmt.Fprintf(&b, ":%d", a)
		} else {
			fmt.Fprintf(&b, ":%d-%d", a, e)
		}
	}
	return b.String(), model
}

// Intervals in any order and overlapping parse to the same set as adding
// them one by one.
func TestParseGTIDSetAnyOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	u1, u2 := UUID{1}, UUID{2}
	for i := range 500 {
		t1, m1 := randomIntervals(r, u1, 1+r.IntN(30))
		t2, m2 := randomIntervals(r, u2, r.IntN(5)+1)
		m1.AddSet(m2)
		got, err := ParseGTIDSet(t1 + "," + t2 + "," + u1.String() + ":7")
		if err != nil {
			t.Fatal(err)
		}
		m1.Add(u1, 7)
		if got.String() != m1.String() {
			t.Fatalf("case %d: parsed %s, want %s", i, got, m1)
		}
	}
}

// Subtract agrees with a GTID-by-GTID model.
func TestSubtractModel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	u := UUID{1}
	for i := range 500 {
		_, a := randomIntervals(r, u, 1+r.IntN(20))
		_, b := randomIntervals(r, u, r.IntN(20))
		var want GTIDSet
		for n := uint64(1); n <= 210; n++ {
			if a.Contains(u, n) && !b.Contains(u, n) {
				want.Add(u, n)
			}
		}
		if got := a.Subtract(b); got.String() != want.String() {
			t.Fatalf("case %d: %s - %s = %s, want %s", i, a, b, got, want)
		}
	}
}

// BenchmarkParseGTIDSetDescending parses 100,000 intervals written from
// the highest down (each added at the front by one-at-a-time insertion).
func BenchmarkParseGTIDSetDescending(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(UUID{1}.String())
	for i := 100_000; i > 0; i-- {
		fmt.Fprintf(&sb, ":%d", 2*i)
	}
	text := sb.String()
	b.ResetTimer()
	for b.Loop() {
		if _, err := ParseGTIDSet(text); err != nil {
			b.Fatal(err)
		}
	}
}
