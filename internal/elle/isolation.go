package elle

import (
	"fmt"
	"strings"
)

// Isolation is an isolation level a history is checked against.
type Isolation string

// Isolation levels, weakest first.
const (
	ReadUncommitted    Isolation = "read-uncommitted"
	ReadCommitted      Isolation = "read-committed"
	SnapshotIsolation  Isolation = "snapshot-isolation"
	RepeatableRead     Isolation = "repeatable-read"
	Serializable       Isolation = "serializable"
	StrictSerializable Isolation = "strict-serializable"
)

// Levels lists the isolation levels Check understands.
func Levels() []Isolation {
	return []Isolation{ReadUncommitted, ReadCommitted, SnapshotIsolation, RepeatableRead, Serializable, StrictSerializable}
}

// ParseIsolation returns the level named s; the empty string means
// Serializable. Spaces and underscores are accepted in place of dashes.
func ParseIsolation(s string) (Isolation, error) {
	if s == "" {
		return Serializable, nil
	}
	norm := Isolation(strings.NewReplacer(" ", "-", "_", "-").Replace(strings.ToLower(s)))
	for _, l := range Levels() {
		if l == norm {
			return l, nil
		}
	}
	return "", fmt.Errorf("unknown isolation level %q (want one of %v)", s, Levels())
}

// Class names a kind of anomaly.
type Class string

// Anomaly classes. Cycle classes (G0, G1c, G-single, G2-item) follow Adya;
// the -process and -realtime variants are cycles that need at least one
// process-order or real-time edge, and exist only when Options.ProcessOrder
// or Options.RealTime is set.
const (
	// IncompatibleOrder: two reads of a key are not prefixes of one another,
	// so no single order of appends explains them.
	IncompatibleOrder Class = "incompatible-order"
	// DuplicateElements: a read observed the same element twice.
	DuplicateElements Class = "duplicate-elements"
	// GarbageRead: a read observed an element nobody appended.
	GarbageRead Class = "garbage-read"
	// Internal: a read disagrees with the transaction's own earlier reads and
	// appends of that key.
	Internal Class = "internal"
	// FutureRead: a read observed an element the same transaction appends
	// only later.
	FutureRead Class = "future-read"
	// G1a: aborted read, a committed transaction observed an element
	// appended by a failed transaction.
	G1a Class = "G1a"
	// G1b: intermediate read, a committed transaction observed a version
	// whose last element was not its writer's last append to the key.
	G1b Class = "G1b"
	// LostUpdate: two committed transactions read the same version of a key
	// and both appended to it.
	LostUpdate Class = "lost-update"
	// G0: write cycle, a dependency cycle of ww edges.
	G0 Class = "G0"
	// G1c: circular information flow, a cycle of ww and wr edges with at
	// least one wr edge.
	G1c Class = "G1c"
	// GSingle: read skew, a cycle with exactly one rw edge.
	GSingle Class = "G-single"
	// G2Item: a cycle with two or more rw edges (e.g. write skew).
	G2Item Class = "G2-item"

	G0Process       Class = "G0-process"
	G1cProcess      Class = "G1c-process"
	GSingleProcess  Class = "G-single-process"
	G2ItemProcess   Class = "G2-item-process"
	G0Realtime      Class = "G0-realtime"
	G1cRealtime     Class = "G1c-realtime"
	GSingleRealtime Class = "G-single-realtime"
	G2ItemRealtime  Class = "G2-item-realtime"
)

// classOrder is the order in which classes are reported: problems that
// undermine the analysis first, then the non-cycle anomalies, then cycles
// from the strongest (G0) to the weakest.
func classOrder() []Class {
	return []Class{
		IncompatibleOrder, DuplicateElements, GarbageRead, Internal, FutureRead,
		G1a, G1b, LostUpdate,
		G0, G0Process, G0Realtime,
		G1c, G1cProcess, G1cRealtime,
		GSingle, GSingleProcess, GSingleRealtime,
		G2Item, G2ItemProcess, G2ItemRealtime,
	}
}

func classRank(c Class) int {
	for i, x := range classOrder() {
		if x == c {
			return i
		}
	}
	return len(classOrder())
}

// baseClass strips the -process and -realtime suffixes.
func baseClass(c Class) Class {
	s := strings.TrimSuffix(strings.TrimSuffix(string(c), "-process"), "-realtime")
	return Class(s)
}

// Forbids reports whether level proscribes anomaly class c; an anomaly of a
// proscribed class is a violation, any other is allowed.
//
// This is the single table of what each level forbids. It follows Adya's
// generalized isolation definitions (A. Adya, "Weak Consistency: A
// Generalized Theory and Optimistic Implementations for Distributed
// Transactions", MIT PhD thesis, 1999; Adya, Liskov and O'Neil, ICDE 2000):
//
//	read-uncommitted    PL-1:    G0
//	read-committed      PL-2:    G0, G1a, G1b, G1c
//	snapshot-isolation  PL-SI:   G0, G1a, G1b, G1c, G-single, lost update
//	                             (G2-item, e.g. write skew, is allowed)
//	repeatable-read     PL-2.99: G0, G1a, G1b, G1c, G2-item, which
//	                             includes G-single and lost update
//	serializable        PL-3:    all of the above (G2 reduces to G2-item
//	                             here: list-append has no predicates)
//	strict-serializable PL-SS:   serializable, also with real-time edges
//
// Incompatible orders, duplicate elements, garbage reads, internal
// inconsistencies and future reads break the list-append model itself and
// are violations at every level. A -process or -realtime variant is
// forbidden exactly when its base class is: asking for process-order or
// real-time edges asks for the "strong session" or "strong" form of the
// level (strict-serializable is serializable with real-time edges).
func Forbids(level Isolation, c Class) bool {
	switch c {
	case IncompatibleOrder, DuplicateElements, GarbageRead, Internal, FutureRead:
		return true
	}
	var forbidden []Class
	switch level {
	case ReadUncommitted:
		forbidden = []Class{G0}
	case ReadCommitted:
		forbidden = []Class{G0, G1a, G1b, G1c}
	case SnapshotIsolation:
		forbidden = []Class{G0, G1a, G1b, G1c, GSingle, LostUpdate}
	case RepeatableRead, Serializable, StrictSerializable, "":
		forbidden = []Class{G0, G1a, G1b, G1c, GSingle, G2Item, LostUpdate}
	}
	base := baseClass(c)
	for _, f := range forbidden {
		if f == base {
			return true
		}
	}
	return false
}
