package digest

import (
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Statement is what the server measured of one statement.
type Statement struct {
	Schema string // the current database, "" for none
	Query  string
	Start  time.Time
	// Wait is the time the statement took; LockWait the part it spent
	// waiting for row locks.
	Wait, LockWait time.Duration
	Error          bool
	Warnings       uint64
	RowsAffected   uint64
	RowsSent       uint64
	RowsExamined   uint64 // rows read from the store
}

// Row is one digest's summary, in events_statements_summary_by_digest's
// terms. Times are in picoseconds, as performance_schema gives them.
type Row struct {
	Schema      string // "" for statements run with no current database
	Digest      string // "" for the row that counts statements past the table's size
	Text        string
	Count       uint64
	SumWait     uint64
	MinWait     uint64
	MaxWait     uint64
	SumLockTime uint64
	Errors      uint64
	Warnings    uint64
	Affected    uint64
	Sent        uint64
	Examined    uint64
	FirstSeen   time.Time
	LastSeen    time.Time
	// Quantiles of the statements' times: the upper bound of the bucket
	// that holds the 95th, 99th and 99.9th percentile.
	Q95, Q99, Q999 uint64
	// The statement of the digest that took longest, its time and when.
	Sample     string
	SampleSeen time.Time
	SampleWait uint64
}

// Summary is events_statements_summary_by_digest: one row per schema and
// digest, at most size of them; statements past that are counted in one
// row with no digest, as MySQL does.
//
// Statements are recorded concurrently from every connection: the rows
// are a sync.Map of entries each with its own lock, and the digests of
// recent statement texts are cached (a prepared statement's text is the
// same at each execution), so that recording costs a map lookup and a
// short critical section, not a tokenization and a global lock. The cache
// is keyed by the statement's shape (shape.go), so that statements sent
// with their values inline hit it too.
type Summary struct {
	size      int
	maxLength int

	rows     sync.Map // key -> *entry
	count    atomic.Int64
	overflow atomic.Pointer[entry]

	texts     sync.Map // statement shape -> digested
	textCount atomic.Int64
}

type key struct{ schema, digest string }

type entry struct {
	mu sync.Mutex
	Row
	buckets [nBuckets]uint64
}

type digested struct{ text, digest string }

// maxCachedTexts bounds the cache of statement shapes' digests; it is
// emptied when full.
const maxCachedTexts = 4096

// NewSummary returns a summary of at most size digests, whose texts are
// cut at maxLength bytes (max_digest_length).
func NewSummary(size, maxLength int) *Summary {
	return &Summary{size: size, maxLength: maxLength}
}

// digestOf is Of(query), cached by the statement's shape.
func (s *Summary) digestOf(query string) digested {
	sh := shape(query)
	if d, ok := s.texts.Load(sh); ok {
		return d.(digested)
	}
	text, digest := Of(query, s.maxLength)
	d := digested{text, digest}
	if s.textCount.Add(1) > maxCachedTexts {
		s.texts.Clear()
		s.textCount.Store(1)
	}
	s.texts.Store(sh, d)
	return d
}

// entryFor is the row of schema and d, made if there is room, else the
// overflow row.
func (s *Summary) entryFor(schema string, d digested) *entry {
	k := key{schema, d.digest}
	if e, ok := s.rows.Load(k); ok {
		return e.(*entry)
	}
	if s.count.Add(1) > int64(s.size) {
		s.count.Add(-1)
		if e := s.overflow.Load(); e != nil {
			return e
		}
		s.overflow.CompareAndSwap(nil, &entry{})
		return s.overflow.Load()
	}
	e, loaded := s.rows.LoadOrStore(k, &entry{Row: Row{Schema: schema, Digest: d.digest, Text: d.text}})
	if loaded {
		s.count.Add(-1)
	}
	return e.(*entry)
}

// Record counts st under its digest.
func (s *Summary) Record(st Statement) {
	e := s.entryFor(st.Schema, s.digestOf(st.Query))
	wait := picos(st.Wait)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.Count == 0 {
		e.FirstSeen, e.MinWait = st.Start, wait
	}
	e.Count++
	e.SumWait += wait
	e.MinWait = min(e.MinWait, wait)
	e.SumLockTime += picos(st.LockWait)
	if st.Error {
		e.Errors++
	}
	e.Warnings += st.Warnings
	e.Affected += st.RowsAffected
	e.Sent += st.RowsSent
	e.Examined += st.RowsExamined
	e.LastSeen = st.Start
	if wait >= e.MaxWait {
		e.MaxWait = wait
		if e.Digest != "" {
			e.Sample, e.SampleSeen, e.SampleWait = st.Query, st.Start, wait
		}
	}
	e.buckets[bucketOf(wait)]++
}

// Rows returns the summary's rows, the overflow row last.
func (s *Summary) Rows() []Row {
	var out []Row
	s.rows.Range(func(_, v any) bool {
		out = append(out, v.(*entry).row())
		return true
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].Schema != out[j].Schema {
			return out[i].Schema < out[j].Schema
		}
		return out[i].Digest < out[j].Digest
	})
	if e := s.overflow.Load(); e != nil {
		out = append(out, e.row())
	}
	return out
}

// Reset empties the summary (TRUNCATE TABLE). A statement recorded while
// it runs may land in a row it removes.
func (s *Summary) Reset() {
	s.rows.Range(func(k, _ any) bool {
		s.rows.Delete(k)
		s.count.Add(-1)
		return true
	})
	s.overflow.Store(nil)
}

func (e *entry) row() Row {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.Row
	r.Q95, r.Q99, r.Q999 = e.quantile(0.95), e.quantile(0.99), e.quantile(0.999)
	return r
}

// The statements' times are counted in buckets of a geometric series,
// bucketsPerDecade to each power of ten of picoseconds, as MySQL keeps
// them for its quantiles (its 450 buckets are 10^(i/75) picoseconds wide
// at i; 25 a decade here, from 1 ps to 10^18 ps, 11.6 days).
const (
	bucketsPerDecade = 25
	nBuckets         = 18*bucketsPerDecade + 1
)

func bucketOf(ps uint64) int {
	if ps <= 1 {
		return 0
	}
	b := int(math.Log10(float64(ps)) * bucketsPerDecade)
	return min(b, nBuckets-1)
}

// bucketTop is the upper bound of bucket b, in picoseconds.
func bucketTop(b int) uint64 {
	return uint64(math.Pow(10, float64(b+1)/bucketsPerDecade))
}

// quantile is the upper bound of the bucket that holds the q-th quantile
// of the statements' times, at most their maximum.
func (e *entry) quantile(q float64) uint64 {
	if e.Count == 0 {
		return 0
	}
	want := uint64(math.Ceil(q * float64(e.Count)))
	var seen uint64
	for b, n := range e.buckets {
		seen += n
		if seen >= want {
			return min(bucketTop(b), e.MaxWait)
		}
	}
	return e.MaxWait
}

func picos(d time.Duration) uint64 {
	if d < 0 {
		return 0
	}
	return uint64(d) * 1000
}
