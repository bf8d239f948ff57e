package replica

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// modelTrx is a transaction of the model: the keys it reads and writes
// (every change reads its row first, as the applier does).
type modelTrx struct {
	keys     []int
	db       int
	seq, lc  int64
	gen      int
	commitID uint64
}

// genStream builds n random transactions over nkeys keys in ndb databases
// and the logical clock a correct source would give them: last_committed
// at least the newest earlier conflicting sequence number (a source may
// be more conservative, never less), restarting at each file change; and
// MariaDB-style commit ids grouping conflict-free neighbours.
func genStream(rng *rand.Rand, n, nkeys, ndb int) []modelTrx {
	out := make([]modelTrx, n)
	gen, seq := 1, int64(0)
	lastWriter := map[int]int64{}
	var commitID uint64 = 1
	group := map[int]bool{}
	for i := range out {
		t := &out[i]
		if rng.IntN(50) == 0 { // rotation
			gen++
			seq = 0
			clear(lastWriter)
		}
		seq++
		t.gen, t.seq = gen, seq
		t.db = rng.IntN(ndb)
		for range 1 + rng.IntN(3) {
			t.keys = append(t.keys, t.db*nkeys+rng.IntN(nkeys))
		}
		var lc int64
		conflict := false
		for _, k := range t.keys {
			lc = max(lc, lastWriter[k])
			conflict = conflict || group[k]
		}
		lc = min(lc+int64(rng.IntN(3)), seq-1) // sometimes more conservative
		t.lc = lc
		for _, k := range t.keys {
			lastWriter[k] = seq
		}
		if conflict || rng.IntN(4) == 0 {
			commitID++
			clear(group)
		}
		t.commitID = commitID
		for _, k := range t.keys {
			group[k] = true
		}
	}
	return out
}

// TestSchedulerModel checks the scheduler's promise on random streams and
// random legal executions: a transaction that reads as soon as its
// dependency has submitted (and in any order among the ready ones) sees
// exactly what serial apply would have shown it, and commits happen in
// order.
func TestSchedulerModel(t *testing.T) {
	for _, mode := range []string{TypeLogicalClock, TypeWriteset, TypeDatabase, "maria"} {
		for seed := range uint64(200) {
			rng := rand.New(rand.NewPCG(seed, 7))
			stream := genStream(rng, 200, 8+rng.IntN(40), 1+rng.IntN(3))
			if err := simulate(rng, mode, stream); err != nil {
				t.Fatalf("mode %s seed %d: %v", mode, seed, err)
			}
		}
	}
}

func simulate(rng *rand.Rand, mode string, stream []modelTrx) error {
	smode := mode
	if mode == "maria" {
		smode = TypeLogicalClock
	}
	s := newScheduler(smode)
	n := len(stream)
	deps := make([]int64, n+1)
	parallel := 0
	for i, t := range stream {
		idx := int64(i + 1)
		in := schedInput{Gen: t.gen, LastCommitted: t.lc, SequenceNumber: t.seq, DBs: []string{fmt.Sprint(t.db)}}
		for _, k := range t.keys {
			in.WriteSet = append(in.WriteSet, uint64(k)*0x9e3779b97f4a7c15)
		}
		if mode == "maria" {
			in.Maria, in.CommitID = true, t.commitID
		}
		if rng.IntN(100) == 0 { // a DDL barrier
			s.barrier(idx - 1)
		}
		deps[idx] = s.dep(idx, in)
		if deps[idx] < 0 || deps[idx] >= idx {
			return fmt.Errorf("transaction %d got dependency %d", idx, deps[idx])
		}
		if deps[idx] < idx-1 {
			parallel++
		}
	}
	// Serial reads: the version (writer's number) of each key before i.
	serial := make([][]int64, n+1)
	version := map[int]int64{}
	for i, t := range stream {
		for _, k := range t.keys {
			serial[i+1] = append(serial[i+1], version[k])
		}
		for _, k := range t.keys {
			version[k] = int64(i + 1)
		}
	}
	// Random legal execution.
	clear(version)
	read := make([]bool, n+1)
	var submitted int64
	for submitted < int64(n) {
		var ready []int64
		for i := submitted + 1; i <= int64(n) && i <= submitted+16; i++ {
			if !read[i] && deps[i] <= submitted {
				ready = append(ready, i)
			}
		}
		if len(ready) > 0 && (rng.IntN(2) == 0 || !read[submitted+1]) {
			i := ready[rng.IntN(len(ready))]
			for j, k := range stream[i-1].keys {
				if version[k] != serial[i][j] {
					return fmt.Errorf("transaction %d (dep %d) read key %d at version %d, serial apply reads %d", i, deps[i], k, version[k], serial[i][j])
				}
			}
			read[i] = true
			continue
		}
		if !read[submitted+1] {
			return fmt.Errorf("stuck: transaction %d cannot read (dep %d, submitted %d)", submitted+1, deps[submitted+1], submitted)
		}
		submitted++
		for _, k := range stream[submitted-1].keys {
			version[k] = submitted
		}
	}
	if (mode == TypeLogicalClock || mode == TypeWriteset) && parallel == 0 {
		return fmt.Errorf("no transaction could run ahead of its predecessor")
	}
	return nil
}
