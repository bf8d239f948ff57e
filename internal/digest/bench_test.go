package digest

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkRecord is the cost of recording a statement sent as text with
// its values inline (cache hits by shape) and of digesting one afresh.
func BenchmarkRecord(b *testing.B) {
	s := NewSummary(10000, 1024)
	qs := make([]string, 1000)
	for i := range qs {
		qs[i] = fmt.Sprintf("SELECT c FROM sbtest%d WHERE id=%d", i%4+1, i*7919)
	}
	now := time.Now()
	b.Run("record", func(b *testing.B) {
		for i := range b.N {
			s.Record(Statement{Schema: "sbtest", Query: qs[i%len(qs)], Start: now, Wait: time.Millisecond})
		}
	})
	b.Run("digest", func(b *testing.B) {
		for i := range b.N {
			Of(qs[i%len(qs)], 1024)
		}
	})
}

// BenchmarkRecordParallel records one prepared statement's executions
// from every core at once, as a busy server does.
func BenchmarkRecordParallel(b *testing.B) {
	s := NewSummary(10000, 1024)
	now := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.Record(Statement{Schema: "sbtest", Query: "UPDATE sbtest1 SET c=? WHERE id=?", Start: now, Wait: time.Millisecond})
		}
	})
}
