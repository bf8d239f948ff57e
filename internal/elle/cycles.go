package elle

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// cycleSpec describes how to find the smallest cycle of one class: every
// cycle of the class has an edge of a closing kind; the rest of the cycle is
// a path over the path kinds with at least one edge of each need group.
type cycleSpec struct {
	class   Class
	closing EdgeKind
	path    EdgeKind
	need    []EdgeKind
}

// cycleSpecs returns the searches to run, in report order.
func cycleSpecs(opts Options) []cycleSpec {
	const d = EdgeWW | EdgeWR
	specs := []cycleSpec{
		{class: G0, closing: EdgeWW, path: EdgeWW},
		{class: G1c, closing: EdgeWR, path: d},
		{class: GSingle, closing: EdgeRW, path: d},
		{class: G2Item, closing: EdgeRW, path: d | EdgeRW, need: []EdgeKind{EdgeRW}},
	}
	if opts.ProcessOrder {
		po := EdgeProcess
		specs = append(specs,
			cycleSpec{class: G0Process, closing: po, path: EdgeWW | po},
			cycleSpec{class: G1cProcess, closing: po, path: d | po, need: []EdgeKind{EdgeWR}},
			cycleSpec{class: GSingleProcess, closing: EdgeRW, path: d | po, need: []EdgeKind{po}},
			cycleSpec{class: G2ItemProcess, closing: EdgeRW, path: d | EdgeRW | po, need: []EdgeKind{EdgeRW, po}},
		)
	}
	if opts.RealTime {
		// Process edges may help a real-time cycle along; a cycle with both
		// counts as real-time.
		o := EdgeRealtime
		if opts.ProcessOrder {
			o |= EdgeProcess
		}
		rt := EdgeRealtime
		specs = append(specs,
			cycleSpec{class: G0Realtime, closing: rt, path: EdgeWW | o},
			cycleSpec{class: G1cRealtime, closing: rt, path: d | o, need: []EdgeKind{EdgeWR}},
			cycleSpec{class: GSingleRealtime, closing: EdgeRW, path: d | o, need: []EdgeKind{rt}},
			cycleSpec{class: G2ItemRealtime, closing: EdgeRW, path: d | EdgeRW | o, need: []EdgeKind{EdgeRW, rt}},
		)
	}
	return specs
}

// searcher runs breadth-first searches over (transaction, needs-met) states,
// reusing its buffers across searches. Visited marks use a generation
// stamp so that no buffer is cleared between searches.
type searcher struct {
	g      *graph
	visit  []int32 // stamp of the search that reached the state
	parent []int32 // previous state on the shortest path
	depth  []int32
	target []int32 // stamp when the node ends a closing edge into the root
	seen   []int32 // stamp when the search reached the node in any state
	stamp  int32
	queue  []int32
	steps  int
	limit  int
}

// findCycles searches every class and records the smallest cycle of each
// class in each component. It returns the classes whose search ran out of
// budget.
func (c *checker) findCycles(g *graph) []Class {
	n := len(g.adj)
	s := &searcher{g: g, visit: make([]int32, 4*n), parent: make([]int32, 4*n), depth: make([]int32, 4*n),
		target: make([]int32, n), seen: make([]int32, n)}
	var incomplete []Class
	for _, spec := range cycleSpecs(c.opts) {
		s.steps, s.limit = 0, c.opts.MaxSearchSteps
		if !c.searchClass(s, spec) {
			incomplete = append(incomplete, spec.class)
		}
	}
	return incomplete
}

// searchClass finds the smallest cycle of spec's class in every strongly
// connected component of the subgraph it may use. It returns false if the
// budget ran out.
func (c *checker) searchClass(s *searcher, spec cycleSpec) bool {
	g := s.g
	all := spec.closing | spec.path
	comp, size := tarjan(g.adj, all)
	type closing struct{ a, b int32 }
	var cl []closing
	for a, as := range g.adj {
		for _, x := range as {
			if forced(x.kinds, spec.closing) && comp[a] == comp[x.to] && size[comp[a]] > 1 {
				cl = append(cl, closing{a: int32(a), b: x.to})
			}
		}
	}
	if len(cl) == 0 {
		return true
	}
	// When the path kinds are a strict subset, paths follow the
	// topological order of their own condensation (component numbers never
	// increase along a path), which bounds each search.
	var pcomp []int32
	if spec.path != all {
		pcomp, _ = tarjan(g.adj, spec.path)
	}
	// Group closing edges by component (ordered by the component's first
	// transaction), then by head.
	first := make(map[int32]int32)
	for _, e := range cl {
		if f, ok := first[comp[e.a]]; !ok || e.a < f {
			first[comp[e.a]] = e.a
		}
	}
	slices.SortFunc(cl, func(x, y closing) int {
		if fx, fy := first[comp[x.a]], first[comp[y.a]]; fx != fy {
			return int(fx - fy)
		}
		if x.b != y.b {
			return int(x.b - y.b)
		}
		return int(x.a - y.a)
	})
	complete := true
	for i := 0; i < len(cl); {
		cc := comp[cl[i].a]
		j := i
		for j < len(cl) && comp[cl[j].a] == cc {
			j++
		}
		best := math.MaxInt32
		var bestCycle []int32 // a, b, ..., a: the closing edge then the path
		for h := i; h < j; {
			b := cl[h].b
			e := h
			for e < j && cl[e].b == b {
				e++
			}
			var targets []int32
			for _, x := range cl[h:e] {
				if pcomp == nil || pcomp[x.a] <= pcomp[b] {
					targets = append(targets, x.a)
				}
			}
			h = e
			if len(targets) == 0 {
				continue
			}
			path, ok := s.bfs(b, targets, comp, cc, pcomp, spec, best)
			if path != nil {
				best = len(path) // edges: len(path)-1 path edges plus the closing one
				bestCycle = append([]int32{path[len(path)-1]}, path...)
			}
			if !ok {
				complete = false
				break
			}
		}
		if bestCycle != nil {
			c.add(c.cycleAnomaly(g, spec, bestCycle))
		}
		if !complete {
			break
		}
		i = j
	}
	return complete
}

// bfs searches for the shortest path from root to one of targets that uses
// spec.path kinds, meets spec.need and stays in component cc. A path is
// only wanted if, with its closing edge, it is shorter than best edges. It
// returns the path (root first) or nil, and false when the budget ran out.
func (s *searcher) bfs(root int32, targets []int32, comp []int32, cc int32, pcomp []int32, spec cycleSpec, best int) ([]int32, bool) {
	s.stamp++
	stamp := s.stamp
	lo := int32(math.MaxInt32)
	for _, t := range targets {
		s.target[t] = stamp
		if pcomp != nil {
			lo = min(lo, pcomp[t])
		}
	}
	ns := int32(1) << len(spec.need)
	full := ns - 1
	start := root * ns
	s.visit[start], s.parent[start], s.depth[start] = stamp, -1, 0
	s.seen[root] = stamp
	s.queue = append(s.queue[:0], start)
	for qi := 0; qi < len(s.queue); qi++ {
		st := s.queue[qi]
		d := s.depth[st]
		// A child closes a cycle of d+2 edges; stop once that cannot win.
		if int(d)+2 >= best {
			break
		}
		u, mask := st/ns, st%ns
		for _, x := range s.g.adj[u] {
			s.steps++
			k := x.kinds & spec.path
			v := x.to
			if k == 0 || comp[v] != cc || (pcomp != nil && pcomp[v] < lo) {
				continue
			}
			m := mask
			for i, need := range spec.need {
				if forced(x.kinds, need) {
					m |= 1 << i
				}
			}
			nst := v*ns + m
			if s.visit[nst] == stamp {
				continue
			}
			// With several states per transaction a path could come back to
			// a transaction; keep cycles simple. Only a transaction this
			// search has reached can be on the path.
			if ns > 1 && s.seen[v] == stamp && s.onPath(st, v, ns) {
				continue
			}
			s.seen[v] = stamp
			s.visit[nst], s.parent[nst], s.depth[nst] = stamp, st, d+1
			if m == full && s.target[v] == stamp {
				var path []int32
				for x := nst; x >= 0; x = s.parent[x] {
					path = append(path, x/ns)
				}
				slices.Reverse(path)
				return path, true
			}
			s.queue = append(s.queue, nst)
		}
		if s.steps > s.limit {
			return nil, false
		}
	}
	return nil, true
}

// onPath reports whether transaction v is on the search path ending in
// state st.
func (s *searcher) onPath(st, v, ns int32) bool {
	for x := st; x >= 0; x = s.parent[x] {
		s.steps++
		if x/ns == v {
			return true
		}
	}
	return false
}

// plainer returns the kinds plainer than k. Kinds go from the plainest to
// the most severe: ww, wr, po, rt, rw. An edge between two transactions
// can have several kinds; a cycle is classified by labelling each edge with
// the plainest kind its class allows, which gives the most severe class the
// cycle belongs to (a cycle through a ww+rw edge is G0 or G1c rather than
// G-single). So a search only counts an edge towards a required kind, or
// uses it as a closing edge, when the edge has no plainer kind.
func plainer(k EdgeKind) EdgeKind {
	switch k {
	case EdgeWW:
		return 0
	case EdgeWR:
		return EdgeWW
	case EdgeProcess:
		return EdgeWW | EdgeWR
	case EdgeRealtime:
		return EdgeWW | EdgeWR | EdgeProcess
	}
	return EdgeWW | EdgeWR | EdgeProcess | EdgeRealtime
}

// forced reports whether an edge with kinds must be labelled k: it has k
// and nothing plainer.
func forced(kinds, k EdgeKind) bool {
	return kinds&k != 0 && kinds&plainer(k) == 0
}

// labelCycle labels each edge of cycle (a, b, ..., a, whose first edge is
// the closing one) with its plainest kind allowed by spec.
func labelCycle(g *graph, cycle []int32, spec cycleSpec) []EdgeKind {
	labels := make([]EdgeKind, len(cycle)-1)
	for i := range labels {
		allowed := spec.path
		if i == 0 {
			allowed = spec.closing
		}
		labels[i] = pickKind(g.kindsOf(cycle[i], cycle[i+1]) & allowed)
	}
	return labels
}

// pickKind returns the plainest single kind in k.
func pickKind(k EdgeKind) EdgeKind {
	for _, x := range []EdgeKind{EdgeWW, EdgeWR, EdgeProcess, EdgeRealtime, EdgeRW} {
		if k&x != 0 {
			return x
		}
	}
	return 0
}

// classify names the class of a cycle from the kinds of its edges.
func classify(kinds []EdgeKind) Class {
	var wr, rw, rt, po int
	for _, k := range kinds {
		switch k {
		case EdgeWR:
			wr++
		case EdgeRW:
			rw++
		case EdgeRealtime:
			rt++
		case EdgeProcess:
			po++
		}
	}
	var base Class
	switch {
	case rw == 0 && wr == 0:
		base = G0
	case rw == 0:
		base = G1c
	case rw == 1:
		base = GSingle
	default:
		base = G2Item
	}
	switch {
	case rt > 0:
		return base + "-realtime"
	case po > 0:
		return base + "-process"
	}
	return base
}

func (g *graph) kindsOf(from, to int32) EdgeKind {
	for _, x := range g.adj[from] {
		if x.to == to {
			return x.kinds
		}
	}
	return 0
}

// cycleAnomaly describes cycle (a, b, ..., a) found for spec.
func (c *checker) cycleAnomaly(g *graph, spec cycleSpec, cycle []int32) Anomaly {
	labels := labelCycle(g, cycle, spec)
	// Start the cycle at its earliest transaction, for stable output.
	nodes := cycle[:len(cycle)-1]
	r := 0
	for i, v := range nodes {
		if v < nodes[r] {
			r = i
		}
	}
	nodes = append(slices.Clone(nodes[r:]), nodes[:r]...)
	labels = append(slices.Clone(labels[r:]), labels[:r]...)
	a := Anomaly{Class: spec.class}
	var text strings.Builder
	for i, v := range nodes {
		w := nodes[(i+1)%len(nodes)]
		step := Step{From: c.id(v), To: c.id(w), Kind: labels[i]}
		if e, ok := g.find(v, w, labels[i]); ok {
			step.Why = c.why(e)
			if e.key >= 0 {
				step.Key = c.keys[e.key]
			}
		}
		a.Txns = append(a.Txns, c.id(v))
		a.Cycle = append(a.Cycle, step)
		text.WriteString("T" + strconv.FormatInt(c.id(v), 10) + " -" + labels[i].String() + "-> ")
	}
	text.WriteString("T" + strconv.FormatInt(c.id(nodes[0]), 10))
	a.Text = text.String()
	if got := classify(labels); got != spec.class {
		// Cannot happen if the specs and labelling agree; say so rather
		// than mislabel.
		a.Text += " (classified as " + string(got) + ")"
	}
	return a
}
