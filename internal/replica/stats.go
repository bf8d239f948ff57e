package replica

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstepdb/lockstep/internal/binlog"
)

// MaxWorkers bounds replica_parallel_workers.
const MaxWorkers = 1024

// ConcurrencyBuckets is the size of the histogram of transactions being
// applied at once (from the start of their apply to visibility): bucket i
// counts transactions that started with at most 2^i in flight (the last
// bucket is "more than that" too).
const ConcurrencyBuckets = 14

// WorkerStats are one worker's counters (worker 0 is the coordinator
// applying by itself).
type WorkerStats struct {
	Applied   atomic.Uint64
	BusyNanos atomic.Uint64
	WaitNanos atomic.Uint64

	// Kept raw on the apply path (no formatting per transaction); State
	// formats them.
	mu                 sync.Mutex
	last, applying     *relayTrx // applying: nil when idle
	lastStart, lastEnd time.Time
	applyingStart      time.Time
	errCode            uint16
	errMsg             string
	errTime            time.Time
}

// TrxState is a transaction as performance_schema's
// replication_applier_status_by_worker (Start and End of its apply) and
// replication_connection_status (of its queueing) show it.
type TrxState struct {
	GTID                            string
	OriginalCommit, ImmediateCommit time.Time
	Start, End                      time.Time
}

// WorkerState is a copy of one worker's state.
type WorkerState struct {
	ID             int
	Last, Applying TrxState
	ErrCode        uint16
	ErrMsg         string
	ErrTime        time.Time
}

func trxState(t *relayTrx, start time.Time) TrxState {
	us := func(v uint64) time.Time {
		if v == 0 {
			return time.Time{}
		}
		return time.UnixMicro(int64(v))
	}
	return TrxState{GTID: t.GTID.SID.String() + ":" + itoa(t.GTID.GNO),
		OriginalCommit: us(t.GTID.OriginalCommitUS), ImmediateCommit: us(t.GTID.ImmediateCommitUS), Start: start}
}

func (w *WorkerStats) begin(t *relayTrx, start time.Time) {
	w.mu.Lock()
	w.applying, w.applyingStart = t, start
	w.mu.Unlock()
}

// handedOff: the worker's part is done (the commit pipeline has it).
func (w *WorkerStats) handedOff() {
	w.mu.Lock()
	w.applying = nil
	w.mu.Unlock()
}

// visible: a transaction the worker applied has committed.
func (w *WorkerStats) visible(t *relayTrx, start, end time.Time) {
	w.mu.Lock()
	w.last, w.lastStart, w.lastEnd = t, start, end
	w.mu.Unlock()
}

func (w *WorkerStats) failed(code uint16, msg string) {
	w.mu.Lock()
	w.applying = nil
	w.errCode, w.errMsg, w.errTime = code, msg, time.Now()
	w.mu.Unlock()
}

// clearErrors forgets the workers' errors (START REPLICA).
func (s *ApplyStats) clearErrors() {
	for _, w := range s.Workers() {
		w.mu.Lock()
		w.errCode, w.errMsg, w.errTime = 0, "", time.Time{}
		w.mu.Unlock()
	}
}

// State returns a copy of the worker's state.
func (w *WorkerStats) State(id int) WorkerState {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := WorkerState{ID: id, ErrCode: w.errCode, ErrMsg: w.errMsg, ErrTime: w.errTime}
	if w.last != nil {
		st.Last = trxState(w.last, w.lastStart)
		st.Last.End = w.lastEnd
	}
	if w.applying != nil {
		st.Applying = trxState(w.applying, w.applyingStart)
	}
	return st
}

// ApplyStats are the applier's counters and what SHOW REPLICA STATUS needs.
type ApplyStats struct {
	Retrieved      atomic.Uint64 // transactions written to the relay log
	Applied        atomic.Uint64 // transactions committed
	Skipped        atomic.Uint64 // already executed, not applied again
	SkippedErrors  atomic.Uint64 // rows skipped by replica_skip_errors
	PrefetchUsed   atomic.Uint64 // row checks answered by the read ahead
	PrefetchStale  atomic.Uint64 // read ahead, then read again (a writer in between)
	DepDistSum     atomic.Uint64
	DepDistN       atomic.Uint64
	Concurrency    [ConcurrencyBuckets]atomic.Uint64
	ConcurrencySum atomic.Uint64

	workersMu sync.Mutex
	workers   []*WorkerStats

	// clockDiff is the replica's wall clock minus its source's, measured
	// at each connection (nanoseconds): Lag takes it out, as MySQL's
	// Seconds_Behind_Source takes out clock_diff_with_master.
	clockDiff atomic.Int64

	mu          sync.Mutex
	pending     []uint64 // original commit times of read, unapplied transactions
	lastGTID    string
	lastOrigUS  uint64
	lastApplied time.Time
	execFile    string
	execPos     uint32
	resume      relayPos
	asm         asmState
}

type asmState struct {
	sourceFile string
	gen        int
}

// resetRelay forgets relay positions (a new relay log).
func (s *ApplyStats) resetRelay() {
	s.mu.Lock()
	s.pending = s.pending[:0]
	s.resume = relayPos{File: 1, Pos: int64(len(binlog.FileMagic))}
	s.asm = asmState{}
	s.mu.Unlock()
}

// resumePoint is where a (re)started SQL thread reads from: just after the
// last transaction it applied.
func (s *ApplyStats) resumePoint() (relayPos, asmState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = s.pending[:0]
	if s.resume.File == 0 {
		s.resume = relayPos{File: 1, Pos: int64(len(binlog.FileMagic))}
	}
	return s.resume, s.asm
}

func (s *ApplyStats) pushPending(origUS uint64) {
	s.mu.Lock()
	s.pending = append(s.pending, origUS)
	s.mu.Unlock()
}

func (s *ApplyStats) depDistance(d int64) {
	s.DepDistSum.Add(uint64(d))
	s.DepDistN.Add(1)
}

func (s *ApplyStats) concurrency(n int64) {
	n = max(n, 1)
	s.Concurrency[min(bits.Len64(uint64(n-1)), ConcurrencyBuckets-1)].Add(1)
	s.ConcurrencySum.Add(uint64(n))
}

// ParallelismAvg is the average number of transactions in flight when one
// started applying.
func (s *ApplyStats) ParallelismAvg() float64 {
	var n uint64
	for i := range s.Concurrency {
		n += s.Concurrency[i].Load()
	}
	if n == 0 {
		return 0
	}
	return float64(s.ConcurrencySum.Load()) / float64(n)
}

func (s *ApplyStats) worker(id int) *WorkerStats {
	s.workersMu.Lock()
	defer s.workersMu.Unlock()
	for len(s.workers) <= id {
		s.workers = append(s.workers, &WorkerStats{})
	}
	return s.workers[id]
}

// Workers returns the per-worker counters (index = worker id).
func (s *ApplyStats) Workers() []*WorkerStats {
	s.workersMu.Lock()
	defer s.workersMu.Unlock()
	return append([]*WorkerStats(nil), s.workers...)
}

func (s *ApplyStats) applied(t *relayTrx, skipped bool) {
	if skipped {
		s.Skipped.Add(1)
	} else {
		s.Applied.Add(1)
	}
	s.mu.Lock()
	if len(s.pending) > 0 {
		s.pending = s.pending[1:]
	}
	s.lastGTID = t.GTID.SID.String() + ":" + itoa(t.GTID.GNO)
	s.lastOrigUS = t.GTID.OriginalCommitUS
	s.lastApplied = time.Now()
	s.execFile, s.execPos = t.SourceFile, t.SourceEnd
	s.resume = t.RelayEnd
	s.asm = asmState{sourceFile: t.SourceFile, gen: t.Gen}
	s.mu.Unlock()
}

// Lag is Seconds_Behind_Source: how long ago the oldest transaction the
// replica has read but not applied committed on its source (0 when there
// is none), by the source's clock: the difference between the two clocks
// measured at connection (SetClockDiff) is taken out, so that a replica
// whose clock is ahead does not report that as lag, nor one behind hide
// its lag.
func (s *ApplyStats) Lag(now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 || s.pending[0] == 0 {
		return 0
	}
	d := now.Sub(time.UnixMicro(int64(s.pending[0]))) - time.Duration(s.clockDiff.Load())
	return max(d, 0)
}

// SetClockDiff records the replica's wall clock minus its source's.
func (s *ApplyStats) SetClockDiff(d time.Duration) { s.clockDiff.Store(int64(d)) }

// ClockDiff is the difference SetClockDiff recorded.
func (s *ApplyStats) ClockDiff() time.Duration { return time.Duration(s.clockDiff.Load()) }

// Pending is the number of transactions read from the relay log and not
// yet applied.
func (s *ApplyStats) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

// LastApplied returns the last applied GTID and its original commit time.
func (s *ApplyStats) LastApplied() (string, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastGTID, time.UnixMicro(int64(s.lastOrigUS))
}

// ExecPosition is Relay_Source_Log_File / Exec_Source_Log_Pos.
func (s *ApplyStats) ExecPosition() (string, uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.execFile, s.execPos
}

func itoa(n uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return string(b[i:])
}
