package elle

import (
	"math/rand/v2"
	"slices"
	"strconv"
)

// Simulated databases producing histories with known properties.

type simConfig struct {
	txns, keys, maxOps, clients int
	// pFail and pInfo are the chances that a transaction aborts or that its
	// client loses the outcome (an info transaction commits or not with
	// equal chance).
	pFail, pInfo float64
}

func simKey(rng *rand.Rand, keys int) string { return "k" + strconv.Itoa(rng.IntN(keys)) }

// genSerial runs transactions one after another against an in-memory
// model: the history is strictly serializable whatever else happens.
func genSerial(rng *rand.Rand, cfg simConfig) History {
	state := make(map[string][]int64)
	next := make(map[string]int64)
	var h History
	for i := range cfg.txns {
		t := Txn{ID: int64(i + 1), Process: int64(rng.IntN(cfg.clients)), Start: int64(i*10 + 1), End: int64(i*10 + 5)}
		local := make(map[string][]int64)
		view := func(k string) []int64 {
			if l, ok := local[k]; ok {
				return l
			}
			return state[k]
		}
		for range 1 + rng.IntN(cfg.maxOps) {
			k := simKey(rng, cfg.keys)
			if rng.IntN(2) == 0 {
				next[k]++
				local[k] = append(slices.Clip(view(k)), next[k])
				t.Ops = append(t.Ops, AppendOp(k, next[k]))
			} else {
				t.Ops = append(t.Ops, ReadOp(k, slices.Clone(view(k))...))
			}
		}
		apply := true
		switch r := rng.Float64(); {
		case r < cfg.pFail:
			t.Status, apply = StatusFail, false
		case r < cfg.pFail+cfg.pInfo:
			t.Status, apply = StatusInfo, rng.IntN(2) == 0
			forgetReads(rng, &t)
		default:
			t.Status = StatusOK
		}
		if apply {
			for k, l := range local {
				state[k] = l
			}
		}
		h = append(h, t)
	}
	return h
}

// forgetReads drops some read results of an indeterminate transaction, as
// a client that lost its connection would.
func forgetReads(rng *rand.Rand, t *Txn) {
	for j := range t.Ops {
		if t.Ops[j].Kind == OpRead && rng.IntN(2) == 0 {
			t.Ops[j].List = nil
		}
	}
}

// simTxn is a transaction in progress in a concurrent simulation.
type simTxn struct {
	t      Txn
	ops    []Op // still to run: Kind and Key (and Value for appends)
	snap   int  // snapshot: commits visible to the transaction
	writes map[string][]int64
}

// genConcurrent interleaves the operations of cfg.clients clients against
// a simulated database and records the history. With snapshot set the
// database provides snapshot isolation: each transaction reads the state at
// its start plus its own appends, and the first of two concurrent
// transactions appending to a key to commit wins (the other aborts). Without
// it the database is read committed: a read sees the latest committed state
// and appends are applied at commit; transactions then do all their reads
// before their appends, as a read of a transaction's own buffered appends
// would not show where they land.
func genConcurrent(rng *rand.Rand, cfg simConfig, snapshot bool) History {
	// Committed appends per key, with their position in the commit log.
	type entry struct {
		pos int
		val int64
	}
	committed := make(map[string][]entry)
	logLen := 0
	state := func(k string, upTo int) []int64 {
		es := committed[k]
		n, _ := slices.BinarySearchFunc(es, upTo, func(e entry, p int) int { return e.pos - p })
		l := make([]int64, n)
		for i, e := range es[:n] {
			l[i] = e.val
		}
		return l
	}
	lastCommit := make(map[string]int) // key -> log length after its last append
	next := make(map[string]int64)
	active := make([]*simTxn, cfg.clients)
	busy := 0
	var h History
	started := 0
	clock := int64(0)
	tick := func() int64 { clock++; return clock }
	for started < cfg.txns || busy > 0 {
		c := rng.IntN(cfg.clients)
		s := active[c]
		if s == nil {
			if started >= cfg.txns {
				continue
			}
			started++
			busy++
			s = &simTxn{t: Txn{ID: int64(started), Process: int64(c), Start: tick()}, writes: make(map[string][]int64), snap: logLen}
			var reads, appends []Op
			for range 1 + rng.IntN(cfg.maxOps) {
				k := simKey(rng, cfg.keys)
				if rng.IntN(2) == 0 {
					next[k]++
					appends = append(appends, AppendOp(k, next[k]))
				} else {
					reads = append(reads, Op{Kind: OpRead, Key: k})
				}
			}
			s.ops = append(reads, appends...)
			if snapshot {
				rng.Shuffle(len(s.ops), func(i, j int) { s.ops[i], s.ops[j] = s.ops[j], s.ops[i] })
			}
			active[c] = s
			continue
		}
		if len(s.ops) > 0 {
			op := s.ops[0]
			s.ops = s.ops[1:]
			switch op.Kind {
			case OpAppend:
				s.writes[op.Key] = append(s.writes[op.Key], op.Value)
				s.t.Ops = append(s.t.Ops, op)
			case OpRead:
				upTo := logLen
				if snapshot {
					upTo = s.snap
				}
				l := append(state(op.Key, upTo), s.writes[op.Key]...)
				s.t.Ops = append(s.t.Ops, Op{Kind: OpRead, Key: op.Key, List: l})
			}
			continue
		}
		// Commit.
		ok := rng.Float64() >= cfg.pFail // or the client rolls back
		if snapshot {
			for k := range s.writes {
				if lastCommit[k] > s.snap {
					ok = false // first committer wins
				}
			}
		}
		s.t.End = tick()
		s.t.Status = StatusFail
		if ok {
			apply := true
			s.t.Status = StatusOK
			if rng.Float64() < cfg.pInfo {
				s.t.Status, apply = StatusInfo, rng.IntN(2) == 0
				forgetReads(rng, &s.t)
			}
			if apply {
				for _, op := range s.t.Ops {
					if op.Kind == OpAppend {
						committed[op.Key] = append(committed[op.Key], entry{pos: logLen, val: op.Value})
						logLen++
						lastCommit[op.Key] = logLen
					}
				}
			}
		}
		h = append(h, s.t)
		active[c] = nil
		busy--
	}
	return h
}
