package server

import (
	"runtime/metrics"
	"sync"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
)

// performance_schema.memory_summary_global_by_event_name, for the memory
// Lockstep can account for exactly: the Go heap, one event
// (memory/lockstep/go_heap). Its allocations and frees, in objects and
// bytes, are the Go runtime's own counts (runtime/metrics); what is in
// use is their difference. MySQL tracks LOW and HIGH on every
// allocation; the Go runtime keeps no such marks, so here they are the
// least and most in use seen by a sampler that reads the counts once a
// second and at every read of the table: a peak shorter than a second
// can be missed, and the README says so. Memory outside the Go heap (the
// block cache's manually managed buffers, goroutine stacks) has no event.
//
// TRUNCATE TABLE does what it does in MySQL: the counts start from a new
// baseline (both reduced by the frees so far, so COUNT_FREE and
// SUM_NUMBER_OF_BYTES_FREE read 0) and LOW and HIGH restart at what is
// in use; no memory is freed.

// goHeapEvent is the event name of the Go heap.
const goHeapEvent = "memory/lockstep/go_heap"

// heapCounts are the Go heap's cumulative allocations and frees.
type heapCounts struct {
	allocs, frees, allocBytes, freeBytes uint64
}

func (c heapCounts) used() (count, bytes uint64) {
	return c.allocs - c.frees, c.allocBytes - c.freeBytes
}

// readHeapCounts reads the Go runtime's counts.
func readHeapCounts() heapCounts {
	s := []metrics.Sample{
		{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/frees:objects"},
		{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/frees:bytes"},
	}
	metrics.Read(s)
	v := func(i int) uint64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[i].Value.Uint64()
	}
	return heapCounts{allocs: v(0), frees: v(1), allocBytes: v(2), freeBytes: v(3)}
}

// heapMarks keeps the baseline and the sampled low and high marks.
type heapMarks struct {
	mu                  sync.Mutex
	base                heapCounts // subtracted from what is shown (TRUNCATE)
	lowCount, highCount uint64
	lowBytes, highBytes uint64
}

// observe folds c into the marks and returns them.
func (m *heapMarks) observe(c heapCounts) (base heapCounts, lowC, highC, lowB, highB uint64) {
	n, b := c.used()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.highCount == 0 && m.highBytes == 0 {
		m.lowCount, m.lowBytes = n, b
	}
	m.lowCount, m.highCount = min(m.lowCount, n), max(m.highCount, n)
	m.lowBytes, m.highBytes = min(m.lowBytes, b), max(m.highBytes, b)
	return m.base, m.lowCount, m.highCount, m.lowBytes, m.highBytes
}

// reset starts the counts from c and the marks from what c has in use.
func (m *heapMarks) reset(c heapCounts) {
	n, b := c.used()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.base = heapCounts{allocs: c.frees, frees: c.frees, allocBytes: c.freeBytes, freeBytes: c.freeBytes}
	m.lowCount, m.highCount, m.lowBytes, m.highBytes = n, n, b, b
}

// sample observes the heap once a second until stop is closed.
func (m *heapMarks) sample(stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			m.observe(readHeapCounts())
		}
	}
}

func (s *Server) registerMemoryTable() {
	u64 := func(n string) *sql.Column { return &sql.Column{Name: n, Type: types.Uint64} }
	i64 := func(n string) *sql.Column { return &sql.Column{Name: n, Type: types.Int64} }
	sch := sql.Schema{
		{Name: "EVENT_NAME", Type: types.MustCreateStringWithDefaults(sqltypes.VarChar, 128)},
		u64("COUNT_ALLOC"), u64("COUNT_FREE"), u64("SUM_NUMBER_OF_BYTES_ALLOC"), u64("SUM_NUMBER_OF_BYTES_FREE"),
		i64("LOW_COUNT_USED"), i64("CURRENT_COUNT_USED"), i64("HIGH_COUNT_USED"),
		i64("LOW_NUMBER_OF_BYTES_USED"), i64("CURRENT_NUMBER_OF_BYTES_USED"), i64("HIGH_NUMBER_OF_BYTES_USED"),
	}
	marks := &heapMarks{}
	marks.observe(readHeapCounts())
	go marks.sample(s.stop)
	s.sql.AddTruncatableSystemTable("performance_schema", "memory_summary_global_by_event_name", sch,
		func(*sql.Context) ([]sql.Row, error) {
			c := readHeapCounts()
			base, lowC, highC, lowB, highB := marks.observe(c)
			n, b := c.used()
			return []sql.Row{{
				goHeapEvent,
				c.allocs - base.allocs, c.frees - base.frees, c.allocBytes - base.allocBytes, c.freeBytes - base.freeBytes,
				int64(lowC), int64(n), int64(highC), int64(lowB), int64(b), int64(highB),
			}}, nil
		},
		func() { marks.reset(readHeapCounts()) })
}
