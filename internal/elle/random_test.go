package elle

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func cloneHistory(h History) History {
	out := slices.Clone(h)
	for i := range out {
		out[i].Ops = slices.Clone(out[i].Ops)
		for j := range out[i].Ops {
			out[i].Ops[j].List = slices.Clone(out[i].Ops[j].List)
		}
	}
	return out
}

func mustCheck(t *testing.T, h History, opts Options) *Result {
	t.Helper()
	res, err := Check(h, opts)
	if err != nil {
		t.Fatalf("Check: %v\n%s", err, FormatText(h))
	}
	for _, a := range res.Anomalies {
		if a.Cycle != nil {
			if got := classify(stepKinds(a.Cycle)); got != a.Class {
				t.Errorf("%s cycle %s has the edges of %s", a.Class, a.Text, got)
			}
			checkCycleShape(t, a)
		}
	}
	return res
}

func hasClass(res *Result, c Class) bool {
	return slices.ContainsFunc(res.Anomalies, func(a Anomaly) bool { return a.Class == c })
}

// readSite locates a read of a committed transaction.
type readSite struct{ txn, op int }

// okReads lists the reads of committed transactions satisfying keep.
func okReads(h History, keep func(t *Txn, op *Op) bool) []readSite {
	var out []readSite
	for i := range h {
		if h[i].Status != StatusOK {
			continue
		}
		for j := range h[i].Ops {
			if op := &h[i].Ops[j]; op.Kind == OpRead && keep(&h[i], op) {
				out = append(out, readSite{i, j})
			}
		}
	}
	return out
}

// writerOf returns the index of the transaction that appended v to key.
func writerOf(h History, key string, v int64) int {
	for i := range h {
		for _, op := range h[i].Ops {
			if op.Kind == OpAppend && op.Key == key && op.Value == v {
				return i
			}
		}
	}
	return -1
}

func appendsTo(t *Txn, key string) bool {
	return slices.ContainsFunc(t.Ops, func(op Op) bool { return op.Kind == OpAppend && op.Key == key })
}

// A fault turns a valid serial history into one that is not strictly
// serializable, or reports that it found nowhere to apply. want, if set,
// is a class the checker must report.
type fault struct {
	name  string
	want  Class
	apply func(rng *rand.Rand, h History) bool
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

func faults() []fault {
	return []fault{
		{name: "drop an element from the middle of a read", apply: func(rng *rand.Rand, h History) bool {
			// The dropped element's writer must have committed and differ
			// from the next element's: then the read either conflicts with
			// another read, or orders that writer after a later one.
			type site struct {
				readSite
				p int
			}
			var sites []site
			for _, rs := range okReads(h, func(*Txn, *Op) bool { return true }) {
				op := &h[rs.txn].Ops[rs.op]
				for p := 0; p+1 < len(op.List); p++ {
					w, wn := writerOf(h, op.Key, op.List[p]), writerOf(h, op.Key, op.List[p+1])
					if h[w].Status == StatusOK && w != wn {
						sites = append(sites, site{rs, p})
					}
				}
			}
			if len(sites) == 0 {
				return false
			}
			s := pick(rng, sites)
			op := &h[s.txn].Ops[s.op]
			op.List = slices.Delete(op.List, s.p, s.p+1)
			return true
		}},
		{name: "swap two adjacent elements of a read", apply: func(rng *rand.Rand, h History) bool {
			type site struct {
				readSite
				p int
			}
			var sites []site
			for _, rs := range okReads(h, func(*Txn, *Op) bool { return true }) {
				op := &h[rs.txn].Ops[rs.op]
				for p := 0; p+1 < len(op.List); p++ {
					if writerOf(h, op.Key, op.List[p]) != writerOf(h, op.Key, op.List[p+1]) {
						sites = append(sites, site{rs, p})
					}
				}
			}
			if len(sites) == 0 {
				return false
			}
			s := pick(rng, sites)
			l := h[s.txn].Ops[s.op].List
			l[s.p], l[s.p+1] = l[s.p+1], l[s.p]
			return true
		}},
		{name: "make a read stale", apply: func(rng *rand.Rand, h History) bool {
			// Cut a read before an element appended by another committed
			// transaction, which finished before the reader began. The
			// reader must not append to the key (see the limitation on
			// unobserved appends in the package documentation).
			type site struct {
				readSite
				m int
			}
			var sites []site
			for _, rs := range okReads(h, func(t *Txn, op *Op) bool { return !appendsTo(t, op.Key) }) {
				op := &h[rs.txn].Ops[rs.op]
				for m := range op.List {
					if w := writerOf(h, op.Key, op.List[m]); w != rs.txn && h[w].Status == StatusOK {
						sites = append(sites, site{rs, m})
					}
				}
			}
			if len(sites) == 0 {
				return false
			}
			s := pick(rng, sites)
			op := &h[s.txn].Ops[s.op]
			op.List = op.List[:s.m]
			return true
		}},
		{name: "swap the reads of an earlier and a later transaction", apply: func(rng *rand.Rand, h History) bool {
			rs := okReads(h, func(*Txn, *Op) bool { return true })
			type pair struct{ a, b readSite }
			var pairs []pair
			for _, a := range rs {
				for _, b := range rs {
					oa, ob := &h[a.txn].Ops[a.op], &h[b.txn].Ops[b.op]
					if a.txn < b.txn && oa.Key == ob.Key && len(oa.List) < len(ob.List) {
						pairs = append(pairs, pair{a, b})
					}
				}
			}
			if len(pairs) == 0 {
				return false
			}
			p := pick(rng, pairs)
			oa, ob := &h[p.a.txn].Ops[p.a.op], &h[p.b.txn].Ops[p.b.op]
			oa.List, ob.List = ob.List, oa.List
			return true
		}},
		{name: "abort a transaction whose append was read", want: G1a, apply: func(rng *rand.Rand, h History) bool {
			var ws []int
			for _, rs := range okReads(h, func(*Txn, *Op) bool { return true }) {
				op := &h[rs.txn].Ops[rs.op]
				for _, v := range op.List {
					if w := writerOf(h, op.Key, v); w != rs.txn && h[w].Status == StatusOK {
						ws = append(ws, w)
					}
				}
			}
			if len(ws) == 0 {
				return false
			}
			h[pick(rng, ws)].Status = StatusFail
			return true
		}},
		{name: "read a value nobody appended", want: GarbageRead, apply: func(rng *rand.Rand, h History) bool {
			rs := okReads(h, func(*Txn, *Op) bool { return true })
			if len(rs) == 0 {
				return false
			}
			s := pick(rng, rs)
			op := &h[s.txn].Ops[s.op]
			op.List = append(op.List, 1_000_000)
			return true
		}},
	}
}

// TestRandomSerial checks random serial histories, which must be valid at
// every level with real-time and process edges, then injects faults, which
// must be found.
func TestRandomSerial(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 50
	}
	applied := make(map[string]int)
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 1))
		cfg := simConfig{txns: 10 + rng.IntN(40), keys: 1 + rng.IntN(5), maxOps: 1 + rng.IntN(5), clients: 1 + rng.IntN(4),
			pFail: 0.1, pInfo: 0.1}
		h := genSerial(rng, cfg)
		for _, level := range Levels() {
			res := mustCheck(t, h, Options{Isolation: level, RealTime: true, ProcessOrder: true})
			if len(res.Anomalies) > 0 || len(res.Incomplete) > 0 {
				t.Fatalf("seed %d: serial history has anomalies at %s:\n%s\n%s", seed, level, res.Report(), FormatText(h))
			}
		}
		for _, f := range faults() {
			bad := cloneHistory(h)
			if !f.apply(rng, bad) {
				continue
			}
			applied[f.name]++
			res := mustCheck(t, bad, Options{Isolation: StrictSerializable, ProcessOrder: true})
			if res.Valid() {
				t.Fatalf("seed %d: fault %q not found:\n%s\n%s", seed, f.name, res.Report(), FormatText(bad))
			}
			if f.want != "" && !hasClass(res, f.want) {
				t.Fatalf("seed %d: fault %q: no %s:\n%s\n%s", seed, f.name, f.want, res.Report(), FormatText(bad))
			}
		}
	}
	t.Logf("faults applied: %v", applied)
	for _, f := range faults() {
		if applied[f.name] < seeds/4 {
			t.Errorf("fault %q applied to only %d of %d histories", f.name, applied[f.name], seeds)
		}
	}
}

// TestRandomSnapshotIsolation checks histories of a simulated snapshot
// isolation database: they must be valid at snapshot isolation (with
// real-time edges: snapshots are taken at the start), and some must show
// write skew, which serializability forbids.
func TestRandomSnapshotIsolation(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 40
	}
	skews := 0
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 2))
		cfg := simConfig{txns: 20 + rng.IntN(60), keys: 2 + rng.IntN(4), maxOps: 2 + rng.IntN(4), clients: 2 + rng.IntN(4),
			pFail: 0.05, pInfo: 0.05}
		h := genConcurrent(rng, cfg, true)
		res := mustCheck(t, h, Options{Isolation: SnapshotIsolation, RealTime: true, ProcessOrder: true})
		if !res.Valid() || len(res.Incomplete) > 0 {
			t.Fatalf("seed %d: snapshot isolation history is invalid:\n%s\n%s", seed, res.Report(), FormatText(h))
		}
		if hasClass(res, G2Item) || hasClass(res, G2ItemRealtime) || hasClass(res, G2ItemProcess) {
			skews++
			if ser := mustCheck(t, h, Options{Isolation: Serializable}); ser.Valid() != !hasClass(res, G2Item) {
				t.Fatalf("seed %d: serializable verdict disagrees:\n%s", seed, ser.Report())
			}
		}
	}
	t.Logf("%d of %d histories with write skew", skews, seeds)
	if skews < seeds/10 {
		t.Errorf("only %d of %d histories showed write skew; the simulation is too tame to test anything", skews, seeds)
	}
}

// TestRandomReadCommitted checks histories of a simulated read committed
// database: valid at read committed, and some show lost updates and read
// skew, which snapshot isolation forbids.
func TestRandomReadCommitted(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 40
	}
	invalidSI := 0
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 3))
		cfg := simConfig{txns: 20 + rng.IntN(60), keys: 2 + rng.IntN(4), maxOps: 2 + rng.IntN(4), clients: 2 + rng.IntN(4),
			pFail: 0.05, pInfo: 0.05}
		h := genConcurrent(rng, cfg, false)
		res := mustCheck(t, h, Options{Isolation: ReadCommitted, RealTime: true, ProcessOrder: true})
		if !res.Valid() || len(res.Incomplete) > 0 {
			t.Fatalf("seed %d: read committed history is invalid:\n%s\n%s", seed, res.Report(), FormatText(h))
		}
		if si := mustCheck(t, h, Options{Isolation: SnapshotIsolation}); !si.Valid() {
			invalidSI++
		}
	}
	t.Logf("%d of %d histories invalid at snapshot isolation", invalidSI, seeds)
	if invalidSI < seeds/10 {
		t.Errorf("only %d of %d histories violated snapshot isolation; the simulation is too tame to test anything", invalidSI, seeds)
	}
}
