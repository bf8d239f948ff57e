package replica

// The scheduler gives each transaction, numbered 1, 2, ... in relay order,
// a dependency: the number of the newest earlier transaction it may
// conflict with. A transaction may read once every transaction up to its
// dependency has reserved its place in the commit order; commits always
// happen in relay order. So a dependency of idx-1 means "serial" and a
// lower one lets transactions prepare in parallel.
//
//   - LOGICAL_CLOCK follows the source: MySQL's last_committed names the
//     newest sequence_number the transaction may conflict with (numbers
//     restart in each binlog file, so a new file is a barrier); MariaDB's
//     commit_id groups transactions that committed together, which are
//     independent of each other but depend on everything before the group.
//   - WRITESET recomputes dependencies from the rows each transaction
//     changes (hashes of primary and unique keys), so even a
//     single-threaded source's stream applies in parallel.
//   - DATABASE makes transactions on different databases independent.
//
// DDL is a barrier in every mode. Without the information a mode needs (a
// transaction with no keys, an unknown sequence number) a transaction is
// serial, which is always correct.
type scheduler struct {
	mode  string
	floor int64 // every transaction depends on at least this one

	// LOGICAL_CLOCK, MySQL source
	gen    int
	seqIdx map[int64]int64 // sequence_number -> transaction number, this file
	minSeq int64
	// LOGICAL_CLOCK, MariaDB source
	commitID   uint64
	groupStart int64

	// WRITESET
	hist    map[uint64]int64
	histMax int

	// DATABASE
	dbLast map[string]int64
}

func newScheduler(mode string) *scheduler {
	return &scheduler{mode: mode, seqIdx: map[int64]int64{}, hist: map[uint64]int64{}, histMax: 1 << 20, dbLast: map[string]int64{}}
}

// barrier makes every later transaction depend on idx (DDL).
func (s *scheduler) barrier(idx int64) {
	s.floor = idx
	s.commitID = 0
}

// schedInput is what the scheduler needs to know of a transaction.
type schedInput struct {
	Gen            int
	Maria          bool
	CommitID       uint64
	LastCommitted  int64
	SequenceNumber int64
	WriteSet       []uint64
	DBs            []string
}

// dep returns transaction idx's dependency and records it.
func (s *scheduler) dep(idx int64, in schedInput) int64 {
	d := idx - 1
	switch s.mode {
	case TypeLogicalClock:
		d = s.logicalClock(idx, in)
	case TypeWriteset:
		if len(in.WriteSet) == 0 {
			break
		}
		if len(s.hist)+len(in.WriteSet) > s.histMax {
			clear(s.hist)
			s.floor = idx - 1
		}
		d = s.floor
		for _, h := range in.WriteSet {
			if i, ok := s.hist[h]; ok && i > d {
				d = i
			}
			s.hist[h] = idx
		}
	case TypeDatabase:
		if len(in.DBs) == 0 {
			break
		}
		d = s.floor
		for _, db := range in.DBs {
			if i, ok := s.dbLast[db]; ok && i > d {
				d = i
			}
			s.dbLast[db] = idx
		}
	}
	return min(max(d, s.floor), idx-1)
}

func (s *scheduler) logicalClock(idx int64, in schedInput) int64 {
	if in.Maria {
		if in.CommitID != 0 && in.CommitID == s.commitID {
			return s.groupStart - 1
		}
		s.commitID, s.groupStart = in.CommitID, idx
		return idx - 1
	}
	if in.Gen != s.gen {
		s.gen = in.Gen
		s.floor = idx - 1
		clear(s.seqIdx)
		s.minSeq = 0
	}
	if in.SequenceNumber <= 0 {
		return idx - 1
	}
	if len(s.seqIdx) >= 1<<16 {
		clear(s.seqIdx)
		s.floor = idx - 1
		s.minSeq = 0
	}
	if s.minSeq == 0 {
		s.minSeq = in.SequenceNumber
	}
	s.seqIdx[in.SequenceNumber] = idx
	lc := in.LastCommitted
	switch {
	case lc <= 0 || lc < s.minSeq:
		// Depends only on transactions before those we have seen in this
		// file, which the floor covers.
		return s.floor
	case lc >= in.SequenceNumber:
		return idx - 1
	}
	if i, ok := s.seqIdx[lc]; ok {
		return i
	}
	return idx - 1
}
