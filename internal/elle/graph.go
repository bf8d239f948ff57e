package elle

import (
	"cmp"
	"fmt"
	"slices"
)

// edge is one dependency between two transactions (indexes into the
// history) with what it takes to explain it.
type edge struct {
	from, to int32
	kind     EdgeKind
	key      int32 // -1 for rt and po
	op       int32 // wr: the read op of to; rw: the read op of from; else -1
	a, b     int64 // ww: from's and to's values; wr: the value read; rw: to's value; rt: end and start times
	// inferred marks ww and rw edges to an append that no read observed,
	// or that follows skipped elements (failed writers, garbage).
	inferred bool
}

// arc is an adjacency entry: all kinds of edges from a node to another.
type arc struct {
	to    int32
	kinds EdgeKind
}

type graph struct {
	adj [][]arc
	// edges are sorted by (from, to, kind), one per triple: the first
	// justification found.
	edges []edge
}

func (g *graph) arcCount() int {
	n := 0
	for _, a := range g.adj {
		n += len(a)
	}
	return n
}

// find returns the edge from -> to of the given kind.
func (g *graph) find(from, to int32, kind EdgeKind) (edge, bool) {
	i, ok := slices.BinarySearchFunc(g.edges, edge{from: from, to: to, kind: kind}, cmpEdge)
	if !ok {
		return edge{}, false
	}
	return g.edges[i], true
}

func cmpEdge(x, y edge) int {
	if c := cmp.Compare(x.from, y.from); c != 0 {
		return c
	}
	if c := cmp.Compare(x.to, y.to); c != 0 {
		return c
	}
	return cmp.Compare(x.kind, y.kind)
}

// buildGraph infers the dependency edges between the transactions of c.h.
func (c *checker) buildGraph() *graph {
	var es []edge
	inGraph := func(t int32) bool { return c.h[t].Status != StatusFail }
	for k := range c.keys {
		ks := &c.perKey[k]
		k := int32(k)
		// wr: the writer of a read's last element.
		for _, r := range ks.reads {
			l := c.list(r)
			if len(l) == 0 {
				continue
			}
			if w, ok := ks.writers[l[len(l)-1]]; ok && inGraph(w.txn) && w.txn != r.txn {
				es = append(es, edge{from: w.txn, to: r.txn, kind: EdgeWR, key: k, op: r.op, a: l[len(l)-1]})
			}
		}
		if !ks.ordered {
			continue
		}
		order := ks.order
		// next[p] is the first position >= p whose writer is in the graph,
		// or len(order).
		next := make([]int32, len(order)+1)
		next[len(order)] = int32(len(order))
		for p := len(order) - 1; p >= 0; p-- {
			if w, ok := ks.writers[order[p]]; ok && inGraph(w.txn) {
				next[p] = int32(p)
			} else {
				next[p] = next[p+1]
			}
		}
		// ww: consecutive writers in the version order.
		prev, prevVal, skipped := int32(-1), int64(0), false
		for p := int32(next[0]); p < int32(len(order)); p = next[p+1] {
			w := ks.writers[order[p]].txn
			if prev >= 0 && prev != w {
				es = append(es, edge{from: prev, to: w, kind: EdgeWW, key: k, op: -1, a: prevVal, b: order[p], inferred: skipped})
			}
			skipped = next[p+1] != p+1
			prev, prevVal = w, order[p]
		}
		if prev >= 0 {
			for _, tw := range ks.tail {
				if tw.txn != prev {
					es = append(es, edge{from: prev, to: tw.txn, kind: EdgeWW, key: k, op: -1, a: prevVal, b: tw.val, inferred: true})
				}
			}
		}
		// rw: a read and the writer of the next element.
		for _, r := range ks.reads {
			m := len(c.list(r))
			if p := next[m]; p < int32(len(order)) {
				if w := ks.writers[order[p]].txn; w != r.txn {
					es = append(es, edge{from: r.txn, to: w, kind: EdgeRW, key: k, op: r.op, b: order[p], inferred: p != int32(m)})
				}
				continue
			}
			// A reader that itself appended unobserved elements may have
			// appended the next one: its edges to the other such writers
			// could be ww rather than rw, so none is drawn (the lost-update
			// check covers two of them reading the same version).
			if ks.inTail(r.txn) {
				continue
			}
			for _, tw := range ks.tail {
				es = append(es, edge{from: r.txn, to: tw.txn, kind: EdgeRW, key: k, op: r.op, b: tw.val, inferred: true})
			}
		}
	}
	if c.opts.RealTime {
		es = c.realtimeEdges(es)
	}
	if c.opts.ProcessOrder {
		es = c.processEdges(es)
	}

	slices.SortStableFunc(es, cmpEdge)
	es = slices.CompactFunc(es, func(x, y edge) bool { return cmpEdge(x, y) == 0 })
	g := &graph{adj: make([][]arc, len(c.h)), edges: es}
	for _, e := range es {
		a := g.adj[e.from]
		if n := len(a); n > 0 && a[n-1].to == e.to {
			a[n-1].kinds |= e.kind
		} else {
			a = append(a, arc{to: e.to, kinds: e.kind})
		}
		g.adj[e.from] = a
	}
	// A data dependency makes an rt or po edge between the same pair
	// redundant; dropping them keeps the -realtime and -process classes
	// for cycles that really need them.
	for _, as := range g.adj {
		for i := range as {
			if as[i].kinds&dataEdges != 0 {
				as[i].kinds &= dataEdges
			}
		}
	}
	return g
}

// realtimeEdges adds rt edges: T1 -> T2 when T1 committed and ended before
// T2 started. Only the latest such T1s are linked (the "frontier"); older
// ones reach T2 through them, so reachability is that of the full order
// with O(n * concurrency) edges.
func (c *checker) realtimeEdges(es []edge) []edge {
	type event struct {
		at  int64
		end bool
		txn int32
	}
	var evs []event
	for i := range c.h {
		t := &c.h[i]
		if t.Status == StatusFail || !t.hasTimes() {
			continue
		}
		evs = append(evs, event{at: t.Start, txn: int32(i)})
		if t.Status == StatusOK {
			evs = append(evs, event{at: t.End, end: true, txn: int32(i)})
		}
	}
	// Starts sort before ends at the same instant: ending at the moment
	// another begins is not ending before it.
	slices.SortFunc(evs, func(x, y event) int {
		if c := cmp.Compare(x.at, y.at); c != 0 {
			return c
		}
		if x.end != y.end {
			if x.end {
				return 1
			}
			return -1
		}
		return cmp.Compare(x.txn, y.txn)
	})
	var frontier []int32
	pos := make(map[int32]int) // index in frontier
	preds := make(map[int32][]int32)
	for _, ev := range evs {
		if !ev.end {
			for _, f := range frontier {
				es = append(es, edge{from: f, to: ev.txn, kind: EdgeRealtime, key: -1, op: -1, a: c.h[f].End, b: c.h[ev.txn].Start})
			}
			if len(frontier) > 0 {
				preds[ev.txn] = slices.Clone(frontier)
			}
			continue
		}
		for _, p := range preds[ev.txn] {
			if i, ok := pos[p]; ok {
				last := frontier[len(frontier)-1]
				frontier[i] = last
				pos[last] = i
				frontier = frontier[:len(frontier)-1]
				delete(pos, p)
			}
		}
		delete(preds, ev.txn)
		pos[ev.txn] = len(frontier)
		frontier = append(frontier, ev.txn)
	}
	return es
}

// processEdges adds po edges from each committed transaction to every
// following transaction of its process up to and including the next
// committed one. Edges leave only committed transactions: an indeterminate
// one may commit after its successor began.
func (c *checker) processEdges(es []edge) []edge {
	lastOK := make(map[int64]int32)
	for i := range c.h {
		t := &c.h[i]
		if t.Status == StatusFail {
			continue
		}
		if p, ok := lastOK[t.Process]; ok {
			es = append(es, edge{from: p, to: int32(i), kind: EdgeProcess, key: -1, op: -1, a: t.Process})
		}
		if t.Status == StatusOK {
			lastOK[t.Process] = int32(i)
		}
	}
	return es
}

// why explains edge e in words.
func (c *checker) why(e edge) string {
	from, to := c.id(e.from), c.id(e.to)
	switch e.kind {
	case EdgeWW:
		key := c.keys[e.key]
		if e.inferred {
			return fmt.Sprintf("T%d appended %d to %s; T%d's append of %d comes later", from, e.a, key, to, e.b)
		}
		return fmt.Sprintf("T%d appended %d to %s, T%d appended %d right after it", from, e.a, key, to, e.b)
	case EdgeWR:
		key := c.keys[e.key]
		return fmt.Sprintf("T%d read %s=%s, whose last element T%d appended", to, key, fmtList(c.h[e.to].Ops[e.op].List), from)
	case EdgeRW:
		key := c.keys[e.key]
		l := c.h[e.from].Ops[e.op].List
		if e.inferred {
			return fmt.Sprintf("T%d read %s=%s; T%d appended %d, which comes later", from, key, fmtList(l), to, e.b)
		}
		return fmt.Sprintf("T%d read %s=%s, T%d appended %d right after it", from, key, fmtList(l), to, e.b)
	case EdgeRealtime:
		return fmt.Sprintf("T%d ended at %d, before T%d started at %d", from, e.a, to, e.b)
	case EdgeProcess:
		return fmt.Sprintf("process %d ran T%d, then T%d", e.a, from, to)
	}
	return e.kind.String()
}

// tarjan returns the strongly connected components of the subgraph of
// edges whose kinds intersect mask: comp[v] is v's component, numbered in
// reverse topological order (an edge between components goes from a higher
// number to a lower or equal one), and size[c] is the size of component c.
func tarjan(adj [][]arc, mask EdgeKind) (comp []int32, size []int32) {
	n := len(adj)
	index := make([]int32, n) // 0 = unvisited, else preorder number + 1
	low := make([]int32, n)
	onStack := make([]bool, n)
	comp = make([]int32, n)
	var stack []int32
	type frame struct {
		v int32
		i int
	}
	var calls []frame
	next := int32(1)
	for s := range n {
		if index[s] != 0 {
			continue
		}
		index[s], low[s] = next, next
		next++
		stack = append(stack, int32(s))
		onStack[s] = true
		calls = append(calls, frame{v: int32(s)})
		for len(calls) > 0 {
			f := &calls[len(calls)-1]
			v := f.v
			if f.i < len(adj[v]) {
				a := adj[v][f.i]
				f.i++
				if a.kinds&mask == 0 {
					continue
				}
				w := a.to
				if index[w] == 0 {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					calls = append(calls, frame{v: w})
				} else if onStack[w] && index[w] < low[v] {
					low[v] = index[w]
				}
				continue
			}
			if low[v] == index[v] {
				id := int32(len(size))
				var sz int32
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp[w] = id
					sz++
					if w == v {
						break
					}
				}
				size = append(size, sz)
			}
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				if u := calls[len(calls)-1].v; low[v] < low[u] {
					low[u] = low[v]
				}
			}
		}
	}
	return comp, size
}
