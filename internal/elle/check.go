// Package elle checks histories of list-append transactions for isolation
// anomalies, after Kingsbury and Alvaro, "Elle: Inferring Isolation
// Anomalies from Experimental Observations" (VLDB 2020).
//
// # Workload
//
// Every key holds a list of integers. A transaction appends values to keys
// and reads whole lists. Each value is appended at most once per key, so
// every element of a list names the one transaction that appended it
// (recoverability), and since lists only grow, a read of [1 2 3] reveals the
// whole history of the key up to that point: [] then [1] then [1 2] then
// [1 2 3] (traceability). This is what lets the checker infer the version
// order of every key from reads alone, without trusting the database.
//
// # Version order
//
// For each key, every list read by a committed transaction must be a prefix
// of the longest one, since all of them are states of one growing list. If
// two reads are not prefixes of one another no order of appends explains
// both: the key gets an incompatible-order anomaly and is left out of the
// ww and rw inference below (wr edges need no order and are kept). Otherwise
// the longest read is the key's version order: element i+1 was appended
// right after element i. An append by a committed transaction that no read
// observed is in the final list but not in the longest read, so it comes
// after every observed element; the checker uses that to order such
// transactions after the readers and the last writer of the longest read.
//
// # Dependency graph
//
// Nodes are committed (ok) and indeterminate (info) transactions; failed
// transactions have no effects and are left out. Reads of indeterminate
// transactions are ignored (the transaction may have aborted), so an
// indeterminate transaction only gains edges through its appends, and one
// whose appends nobody observed has no outgoing edge and can be in no
// cycle. For a key whose version order is known:
//
//   - ww T1 -> T2: T2 appended the element that follows T1's element in the
//     version order (elements of failed writers and garbage are skipped);
//   - wr T1 -> T2: T2 read a version whose last element T1 appended;
//   - rw T1 -> T2: T1 read a version (the empty list is the initial
//     version) and T2 appended the next element after it.
//
// Optionally, rt T1 -> T2 when T1 committed before T2 started (real-time
// order; kept small by linking each transaction only to the latest
// transactions that ended before it began, which preserves reachability),
// and po T1 -> T2 when T1 committed and T2 is a later transaction of the
// same process with no committed one between them. Edges out of an indeterminate transaction are never rt or
// po, since its commit may have happened any time after the client gave up.
// An edge that is also ww, wr or rw is not counted as rt or po: a data
// dependency needs no real-time help.
//
// # Cycles
//
// An anomaly class is a set of cycles described by edge kinds (Adya):
// G0 uses only ww; G1c ww and wr with at least one wr; G-single exactly one
// rw; G2-item two or more rw; the -process and -realtime variants also need
// at least one po or rt edge. Two transactions can be linked by several
// kinds at once (T2 may read T1's append and append right after it); a
// cycle is classified with each edge labelled by its plainest kind, in the
// order ww, wr, po, rt, rw, which gives the most severe class it belongs
// to, and it is reported under that class only.
//
// Every cycle lies inside one strongly connected component (found with
// Tarjan's algorithm) of the subgraph of the edge kinds its class may use,
// so the search is confined to those components and costs next to nothing
// for a serializable history, whose graph is acyclic. Every cycle of a
// class contains a "closing" edge a -> b of a given kind (ww for G0, wr for
// G1c, rw for G-single and G2-item, po or rt for the variants of G0 and
// G1c); the rest of it is a path b -> a over the allowed kinds that may
// have to include some kinds (G2-item: one more rw). A breadth-first search
// from each such b over states (transaction, required kinds seen so far)
// finds the shortest such path, so the minimum over closing edges is the
// smallest cycle of the class in the component, reported as one anomaly.
// When a class requires kinds, a path could pass a transaction twice in
// different states; such paths are refused, so that cycles are simple.
// Searches stop as soon as they cannot beat the best cycle found; for
// G-single the path may only use ww and wr, whose condensation is acyclic,
// so the search never leaves the topological range between b and the
// targets. A step budget (Options.MaxSearchSteps) bounds pathological
// inputs; classes whose search ran out are listed in Result.Incomplete.
//
// # Non-cycle anomalies
//
// G1a (a committed read saw an element appended by a failed transaction),
// G1b (a committed read saw a version whose last element was not its
// writer's last append to the key), garbage reads (an element nobody
// appended), duplicate elements, internal inconsistency (a read that
// disagrees with the transaction's own earlier reads and appends), future
// reads (a read that saw an append its own transaction makes later) and
// lost updates (two committed transactions read the same version of a key
// and both appended to it) are found directly from the operations.
//
// # Limitations
//
// The checker only knows what reads reveal, so some anomalies go unseen
// (false negatives); it reports nothing that the observations do not imply
// under the list-append model, given unique appended values, that a failed
// transaction had no effect, that every committed append ends up in the
// list, and, for real-time edges, a clock shared by all clients.
//
//   - Appends no read observed are only known to follow the longest read.
//     Between a transaction that read that longest version and then made
//     such an append, and another such appender, the edge could be ww or
//     rw, so none is drawn; the lost-update check still catches two of them
//     reading the same version.
//   - Reads of indeterminate transactions are ignored, even when the
//     transaction's appends show that it committed.
//   - G1b looks at the last element of each read only, as a read of an
//     intermediate version is a read ending in an intermediate append.
//   - For G0, G1c and G-single the smallest cycle of each component is
//     exact. G2-item and the -process and -realtime classes must count two
//     kinds of edge; their search keeps paths simple and may, rarely, report
//     a longer cycle than the smallest or miss a component's only cycles of
//     the class (a randomized comparison with exhaustive enumeration found
//     2 such misses in 20,000 small histories, both in histories that also
//     had shorter cycles of more severe classes).
//   - A key whose reads are incompatible, or whose longest read holds a
//     duplicate, contributes wr edges only.
//   - Internal consistency lets a second read of a key show appends
//     committed by others since the first (read committed allows that; the
//     cycle search judges it at stronger levels). At read uncommitted, a
//     read that first showed an uncommitted append which was then rolled
//     back is reported as internal.
package elle

import (
	"fmt"
	"slices"
)

// DefaultMaxSearchSteps is the per-class budget of edge visits for the
// cycle search when Options.MaxSearchSteps is zero.
const DefaultMaxSearchSteps = 50_000_000

// Options control Check.
type Options struct {
	// Isolation is the level anomalies are judged against; empty means
	// Serializable.
	Isolation Isolation
	// RealTime adds real-time edges (T1 ended before T2 began), which
	// yields the -realtime cycle classes. StrictSerializable implies it.
	RealTime bool
	// ProcessOrder adds edges from each committed transaction to the
	// following transactions of its process (in history order) up to the
	// next committed one, which yields the -process classes.
	ProcessOrder bool
	// MaxSearchSteps bounds the work of the cycle search for each class
	// (edge visits); zero means DefaultMaxSearchSteps.
	MaxSearchSteps int
}

// Result is the outcome of Check.
type Result struct {
	// Isolation is the level anomalies were judged against.
	Isolation Isolation
	// Anomalies lists everything found, ordered by class (see Report), then
	// smallest cycle first, then by transaction.
	Anomalies []Anomaly
	// Incomplete lists cycle classes whose search ran out of budget: more
	// or smaller cycles of those classes may exist.
	Incomplete []Class
	Stats      Stats
}

// Stats describes the checked history.
type Stats struct {
	Txns, OK, Fail, Info int
	Keys                 int
	// Edges counts dependency-graph edges, counting each pair of
	// transactions once.
	Edges int
}

// Anomaly is one anomaly found in a history.
type Anomaly struct {
	Class Class
	// Violation is true when Result.Isolation forbids Class.
	Violation bool
	// Key is the key involved, for non-cycle anomalies.
	Key string
	// Txns are the ids of the transactions involved: for cycles in cycle
	// order, otherwise writers before readers.
	Txns []int64
	// Cycle holds the edges of a cycle anomaly, Cycle[i].To ==
	// Cycle[i+1].From, and the last edge returns to Cycle[0].From.
	Cycle []Step
	// Text explains the anomaly in one line.
	Text string
}

// Step is one edge of a cycle.
type Step struct {
	From, To int64
	Kind     EdgeKind
	// Key is the key that justifies the edge ("" for rt and po edges).
	Key string
	// Why explains the edge from the operations that imply it.
	Why string
}

// EdgeKind is a kind of dependency between two transactions.
type EdgeKind uint8

// Edge kinds.
const (
	EdgeWW       EdgeKind = 1 << iota // write-write: T2 appended right after T1
	EdgeWR                            // write-read: T2 read T1's append
	EdgeRW                            // read-write (anti-dependency): T2 appended right after the version T1 read
	EdgeRealtime                      // T1 committed before T2 began
	EdgeProcess                       // T2 is the next transaction of T1's process
)

const dataEdges = EdgeWW | EdgeWR | EdgeRW

func (k EdgeKind) String() string {
	switch k {
	case EdgeWW:
		return "ww"
	case EdgeWR:
		return "wr"
	case EdgeRW:
		return "rw"
	case EdgeRealtime:
		return "rt"
	case EdgeProcess:
		return "po"
	}
	var s string
	for b := EdgeWW; b <= EdgeProcess; b <<= 1 {
		if k&b != 0 {
			if s != "" {
				s += "+"
			}
			s += b.String()
		}
	}
	if s == "" {
		return fmt.Sprintf("EdgeKind(%d)", uint8(k))
	}
	return s
}

// Valid reports whether no violation was found.
func (r *Result) Valid() bool {
	for _, a := range r.Anomalies {
		if a.Violation {
			return false
		}
	}
	return true
}

// ClassCount is the number of anomalies of one class.
type ClassCount struct {
	Class     Class
	Violation bool
	N         int
}

// Counts returns the number of anomalies per class, in report order.
func (r *Result) Counts() []ClassCount {
	var out []ClassCount
	for _, a := range r.Anomalies {
		if n := len(out); n > 0 && out[n-1].Class == a.Class {
			out[n-1].N++
			continue
		}
		out = append(out, ClassCount{Class: a.Class, Violation: a.Violation, N: 1})
	}
	return out
}

// Check analyses h and returns the anomalies it exhibits. It fails only
// when h is malformed (see Validate).
func Check(h History, opts Options) (*Result, error) {
	level, err := ParseIsolation(string(opts.Isolation))
	if err != nil {
		return nil, fmt.Errorf("elle: %w", err)
	}
	if err := Validate(h); err != nil {
		return nil, fmt.Errorf("elle: invalid history: %w", err)
	}
	if level == StrictSerializable {
		opts.RealTime = true
	}
	if opts.MaxSearchSteps <= 0 {
		opts.MaxSearchSteps = DefaultMaxSearchSteps
	}
	c := newChecker(h, opts)
	c.analyzeKeys()
	for i := range c.h {
		if c.h[i].Status == StatusOK {
			c.checkInternal(int32(i))
		}
	}
	c.checkG1b()
	c.checkLostUpdates()
	g := c.buildGraph()
	incomplete := c.findCycles(g)

	res := &Result{Isolation: level, Incomplete: incomplete, Anomalies: c.found}
	res.Stats = Stats{Txns: len(h), Keys: len(c.keys), Edges: g.arcCount()}
	for i := range h {
		switch h[i].Status {
		case StatusOK:
			res.Stats.OK++
		case StatusFail:
			res.Stats.Fail++
		case StatusInfo:
			res.Stats.Info++
		}
	}
	for i := range res.Anomalies {
		res.Anomalies[i].Violation = Forbids(level, res.Anomalies[i].Class)
	}
	slices.SortStableFunc(res.Anomalies, func(a, b Anomaly) int {
		if d := classRank(a.Class) - classRank(b.Class); d != 0 {
			return d
		}
		if d := len(a.Cycle) - len(b.Cycle); d != 0 {
			return d
		}
		return 0
	})
	return res, nil
}
