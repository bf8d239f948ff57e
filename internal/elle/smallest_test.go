package elle

import (
	"math/rand/v2"
	"testing"
)

// bruteCycles enumerates the simple cycles of g (small graphs only) and
// returns, per class, the length of the shortest one. A cycle's class is
// that of its edges each labelled with their plainest kind.
func bruteCycles(g *graph, enabled EdgeKind) map[Class]int {
	best := make(map[Class]int)
	n := len(g.adj)
	onPath := make([]bool, n)
	var path []int32
	var dfs func(s, u int32)
	dfs = func(s, u int32) {
		for _, x := range g.adj[u] {
			if x.kinds&enabled == 0 {
				continue
			}
			if x.to == s {
				cycle := append(append([]int32{}, path...), s)
				labels := make([]EdgeKind, len(cycle)-1)
				for i := range labels {
					labels[i] = pickKind(g.kindsOf(cycle[i], cycle[i+1]) & enabled)
				}
				c := classify(labels)
				if b, ok := best[c]; !ok || len(labels) < b {
					best[c] = len(labels)
				}
				continue
			}
			if x.to < s || onPath[x.to] {
				continue
			}
			onPath[x.to] = true
			path = append(path, x.to)
			dfs(s, x.to)
			path = path[:len(path)-1]
			onPath[x.to] = false
		}
	}
	for s := range int32(n) {
		onPath[s] = true
		path = append(path[:0], s)
		dfs(s, s)
		onPath[s] = false
	}
	return best
}

// TestSmallestCycles compares the cycles Check reports with an exhaustive
// enumeration on small anomaly-rich histories. For G0, G1c and G-single
// the search is exact: the class must be reported exactly when a cycle of
// it exists, with the smallest length. The classes that need two kinds of
// edge (G2-item and the -process and -realtime variants) restrict the
// breadth-first search to simple paths, which can miss a smallest cycle;
// they must still never report one shorter than the shortest, and
// misses are counted.
func TestSmallestCycles(t *testing.T) {
	exact := map[Class]bool{G0: true, G1c: true, GSingle: true}
	var compared, inexact int
	perClass := make(map[Class]int)
	for seed := range 600 {
		rng := rand.New(rand.NewPCG(uint64(seed), 6))
		cfg := simConfig{txns: 4 + rng.IntN(7), keys: 1 + rng.IntN(3), maxOps: 2 + rng.IntN(4), clients: 2 + rng.IntN(4),
			pFail: 0.05, pInfo: 0.1}
		h := genConcurrent(rng, cfg, seed%3 == 0)
		// Shuffle transaction order and swap a few read lists between
		// reads of the same key to get stronger anomalies (G0, G1c).
		if seed%2 == 1 {
			rs := okReads(h, func(*Txn, *Op) bool { return true })
			for range 2 {
				if len(rs) < 2 {
					break
				}
				a, b := pick(rng, rs), pick(rng, rs)
				oa, ob := &h[a.txn].Ops[a.op], &h[b.txn].Ops[b.op]
				if oa.Key == ob.Key {
					oa.List, ob.List = ob.List, oa.List
				}
			}
		}
		// Or swap two adjacent elements of a key's order in every read,
		// which reverses a ww edge (G0 and friends).
		if seed%3 == 2 {
			k := simKey(rng, cfg.keys)
			p := rng.IntN(3)
			for _, rs := range okReads(h, func(_ *Txn, op *Op) bool { return op.Key == k }) {
				op := &h[rs.txn].Ops[rs.op]
				switch {
				case len(op.List) > p+1:
					op.List[p], op.List[p+1] = op.List[p+1], op.List[p]
				case len(op.List) == p+1:
					op.List = op.List[:p]
				}
			}
		}
		opts := Options{Isolation: StrictSerializable, ProcessOrder: seed%4 < 2}
		res := mustCheck(t, h, opts)
		c := newChecker(h, Options{RealTime: true, ProcessOrder: opts.ProcessOrder})
		c.analyzeKeys()
		g := c.buildGraph()
		enabled := EdgeWW | EdgeWR | EdgeRW | EdgeRealtime
		if opts.ProcessOrder {
			enabled |= EdgeProcess
		}
		want := bruteCycles(g, enabled)
		got := make(map[Class]int)
		for _, a := range res.Anomalies {
			if a.Cycle == nil {
				continue
			}
			if b, ok := got[a.Class]; !ok || len(a.Cycle) < b {
				got[a.Class] = len(a.Cycle)
			}
		}
		for class, n := range got {
			w, ok := want[class]
			if !ok || n < w {
				t.Fatalf("seed %d: reported %s cycle of length %d, but the shortest is %d (0: none)\n%s\n%s",
					seed, class, n, w, res.Report(), FormatText(h))
			}
		}
		for class, w := range want {
			compared++
			perClass[class]++
			n, ok := got[class]
			if ok && n == w {
				continue
			}
			if exact[class] {
				t.Fatalf("seed %d: shortest %s cycle has length %d, reported %d (0: none)\n%s\n%s",
					seed, class, w, n, res.Report(), FormatText(h))
			}
			inexact++
		}
	}
	t.Logf("%d classes compared (%v), %d not found at their smallest", compared, perClass, inexact)
	if compared < 200 {
		t.Errorf("only %d cycle classes compared: the histories are too tame", compared)
	}
}
