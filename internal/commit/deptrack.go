package commit

// Tracking is binlog_transaction_dependency_tracking.
type Tracking int32

// Dependency tracking modes.
const (
	CommitOrder Tracking = iota
	WriteSet
	WriteSetSession
)

// ParseTracking parses a binlog_transaction_dependency_tracking value.
func ParseTracking(s string) (Tracking, bool) {
	switch s {
	case "COMMIT_ORDER", "commit_order":
		return CommitOrder, true
	case "WRITESET", "writeset":
		return WriteSet, true
	case "WRITESET_SESSION", "writeset_session":
		return WriteSetSession, true
	}
	return 0, false
}

func (t Tracking) String() string {
	return [...]string{"COMMIT_ORDER", "WRITESET", "WRITESET_SESSION"}[t]
}

// tracker computes last_committed, as MySQL's rpl_trx_tracking.cc does.
//
// COMMIT_ORDER: last_committed is the newest sequence_number already
// visible when the transaction entered commit: everything committed after
// that ran concurrently with it while it held its locks, so did not
// conflict. WRITESET: additionally, a transaction depends only on the last
// earlier transaction that changed one of the same keys (hashes of primary
// and unique key values), so last_committed = min(commit order parent,
// max over its keys of the key's last writer), bounded below by the point
// where the history was last reset. The history is reset (and the
// transaction falls back to commit order) for transactions without a write
// set (DDL) and when it would exceed binlog_transaction_dependency_history_size;
// it also restarts with every binlog file. WRITESET_SESSION also orders a
// session's own transactions.
type tracker struct {
	history      map[uint64]int64
	historyStart int64
	sessions     map[uint64]int64
}

func (t *tracker) reset(seq int64) {
	if t.history == nil || len(t.history) > 0 {
		t.history = make(map[uint64]int64)
	}
	t.historyStart = seq
}

// rollback forgets every transaction after seq (reserved, then undone):
// later ones depend on everything up to seq.
func (t *tracker) rollback(seq int64) {
	t.reset(seq)
	for s, v := range t.sessions {
		if v > seq {
			t.sessions[s] = seq
		}
	}
}

func (t *tracker) lastCommitted(mode Tracking, size int, ws []uint64, seq, commitParent int64, session uint64) int64 {
	if mode == CommitOrder {
		return commitParent
	}
	if ws == nil || len(t.history)+len(ws) > size {
		t.reset(seq)
		return commitParent
	}
	parent := t.historyStart
	for _, h := range ws {
		if v, ok := t.history[h]; ok && v > parent {
			parent = v
		}
		t.history[h] = seq
	}
	lc := min(parent, commitParent)
	if mode == WriteSetSession {
		if t.sessions == nil {
			t.sessions = make(map[uint64]int64)
		}
		lc = max(lc, t.sessions[session])
		t.sessions[session] = seq
	}
	return lc
}
