package digest

import (
	"math"
	"sort"
	"sync"
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
type Summary struct {
	size      int
	maxLength int

	mu       sync.Mutex
	rows     map[key]*entry
	overflow *entry
}

type key struct{ schema, digest string }

type entry struct {
	Row
	buckets [nBuckets]uint64
}

// NewSummary returns a summary of at most size digests, whose texts are
// cut at maxLength bytes (max_digest_length).
func NewSummary(size, maxLength int) *Summary {
	return &Summary{size: size, maxLength: maxLength, rows: map[key]*entry{}}
}

// Record counts st under its digest.
func (s *Summary) Record(st Statement) {
	text, digest := Of(st.Query, s.maxLength)
	wait := picos(st.Wait)
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{st.Schema, digest}
	e := s.rows[k]
	if e == nil {
		if len(s.rows) >= s.size {
			if s.overflow == nil {
				s.overflow = &entry{}
			}
			e = s.overflow
		} else {
			e = &entry{Row: Row{Schema: st.Schema, Digest: digest, Text: text}}
			s.rows[k] = e
		}
	}
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
		if e != s.overflow {
			e.Sample, e.SampleSeen, e.SampleWait = st.Query, st.Start, wait
		}
	}
	e.buckets[bucketOf(wait)]++
}

// Rows returns the summary's rows, the overflow row last.
func (s *Summary) Rows() []Row {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Row, 0, len(s.rows)+1)
	for _, e := range s.rows {
		out = append(out, e.row())
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Schema != out[j].Schema {
			return out[i].Schema < out[j].Schema
		}
		return out[i].Digest < out[j].Digest
	})
	if s.overflow != nil {
		out = append(out, s.overflow.row())
	}
	return out
}

// Reset empties the summary (TRUNCATE TABLE).
func (s *Summary) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.rows)
	s.overflow = nil
}

func (e *entry) row() Row {
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
