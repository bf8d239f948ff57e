// Package certify is write-set certification for multi-primary
// replication: it decides, in log order, whether a transaction that
// executed optimistically on some node may commit, and which earlier
// transaction it depends on for parallel apply.
//
// A transaction carries its snapshot (the sequence number of the last
// transaction its reads could see) and its keys: Exclusive for what it
// writes (primary and unique keys of changed rows, a table's schema key
// for DDL), Shared for what it must not see change (the parent rows its
// foreign keys reference, the schema key of every table it writes).
//
// The rule is first-committer-wins against the snapshot: a transaction
// fails certification when a transaction certified after its snapshot
//
//   - wrote (Exclusive) a key it writes or references, or
//   - referenced (Shared) a key it writes.
//
// Two references to one key never conflict. Certifying against the
// snapshot, not against the moment the write set was sent, is what keeps
// a remote write that the transaction could not see from being
// overwritten (the lost update Jepsen found in Galera, which compares with
// the last seqno committed when the write set is replicated).
//
// Invariants:
//   - Certify is a pure function of the sequence of certified transactions
//     (Append calls) and of the window: two indexes fed the same sequence
//     give the same verdicts and dependencies.
//   - Sequence numbers appended only grow. Rewind undoes the appends above
//     a point (a log tail that was overwritten); Purge forgets those at or
//     below one (the window).
//   - The index holds the keys of the transactions in the window
//     (Low, Head]. A transaction whose snapshot is older than Low cannot be
//     certified exactly and fails (it is as if it conflicted): keep the
//     window longer than the longest transaction's commit delay.
//   - DependsOn is the newest transaction certified before this one that
//     wrote a key it writes or references, or referenced a key it writes,
//     and at least Low (what the window forgot counts as a possible
//     dependency): applying in parallel transactions that do not depend
//     on each other gives the same result as applying in order.
package certify

import "fmt"

// Key is a hashed key of a write set.
type Key struct {
	Hash   uint64
	Shared bool // a reference (foreign-key parent, schema key of a DML's table)
}

// Verdict is the outcome of certifying one transaction.
type Verdict struct {
	OK bool
	// DependsOn is the transaction it must be applied after, set when OK.
	DependsOn uint64
	// ConflictWith is the certified transaction it conflicts with, when
	// not OK because of a key (0 when its snapshot is too old).
	ConflictWith uint64
	// TooOld says the snapshot is older than the window.
	TooOld bool
}

func (v Verdict) String() string {
	switch {
	case v.OK:
		return fmt.Sprintf("ok depends_on=%d", v.DependsOn)
	case v.TooOld:
		return "conflict snapshot_too_old"
	}
	return fmt.Sprintf("conflict with=%d", v.ConflictWith)
}

// last is the newest writer and referencer of one key.
type last struct{ excl, shared uint64 }

type entry struct {
	seq  uint64
	keys []Key
}

// Index is a certification index. The zero value is empty with Low and
// Head 0. It is not safe for concurrent use: one goroutine certifies.
type Index struct {
	keys    map[uint64]last
	entries []entry // the window, oldest first
	low     uint64
	head    uint64
}

// Low is the newest sequence number forgotten (the window starts after it).
func (x *Index) Low() uint64 { return x.low }

// Head is the newest sequence number appended.
func (x *Index) Head() uint64 { return x.head }

// Len is the number of keys held.
func (x *Index) Len() int { return len(x.keys) }

// Certify decides whether a transaction with the given snapshot and keys
// may commit after everything appended so far. It changes nothing: call
// Append with the sequence number it gets if it passes.
func (x *Index) Certify(snapshot uint64, keys []Key) Verdict {
	if snapshot < x.low {
		return Verdict{TooOld: true}
	}
	dep := x.low
	for _, k := range keys {
		l := x.keys[k.Hash]
		if l.excl > snapshot {
			return Verdict{ConflictWith: l.excl}
		}
		dep = max(dep, l.excl)
		if !k.Shared {
			if l.shared > snapshot {
				return Verdict{ConflictWith: l.shared}
			}
			dep = max(dep, l.shared)
		}
	}
	return Verdict{OK: true, DependsOn: dep}
}

// Append records a certified transaction's keys under seq, which must be
// above Head.
func (x *Index) Append(seq uint64, keys []Key) error {
	if seq <= x.head {
		return fmt.Errorf("certify: append of %d after %d", seq, x.head)
	}
	if x.keys == nil {
		x.keys = map[uint64]last{}
	}
	x.head = seq
	x.entries = append(x.entries, entry{seq: seq, keys: keys})
	x.record(seq, keys)
	return nil
}

func (x *Index) record(seq uint64, keys []Key) {
	for _, k := range keys {
		l := x.keys[k.Hash]
		if k.Shared {
			l.shared = seq
		} else {
			l.excl = seq
		}
		x.keys[k.Hash] = l
	}
}

// Purge forgets the transactions at or below low: their keys no longer
// conflict with anything, and snapshots below low are too old.
func (x *Index) Purge(low uint64) {
	if low <= x.low {
		return
	}
	low = min(low, x.head)
	n := 0
	for ; n < len(x.entries) && x.entries[n].seq <= low; n++ {
		e := x.entries[n]
		for _, k := range e.keys {
			l, ok := x.keys[k.Hash]
			if !ok {
				continue
			}
			if l.excl <= low {
				l.excl = 0
			}
			if l.shared <= low {
				l.shared = 0
			}
			if l == (last{}) {
				delete(x.keys, k.Hash)
			} else {
				x.keys[k.Hash] = l
			}
		}
	}
	// Resliced, not copied: the array's dead prefix goes when append next
	// grows it, so a purge per transaction costs what it forgets.
	x.entries = x.entries[n:]
	x.low = low
}

// Start returns an index that has seen everything up to seq but holds
// none of it: Low and Head are seq, so a snapshot older than seq is too
// old (what a node that knows only its position starts from).
func Start(seq uint64) Index { return Index{low: seq, head: seq} }

// Clone returns an independent copy of the index.
func (x *Index) Clone() Index {
	c := Index{low: x.low, head: x.head, entries: append([]entry(nil), x.entries...)}
	if x.keys != nil {
		c.keys = make(map[uint64]last, len(x.keys))
		for k, v := range x.keys {
			c.keys[k] = v
		}
	}
	return c
}

// Rewind undoes the appends above seq (a log tail that was overwritten),
// as if they had never been. It cannot go below Low.
func (x *Index) Rewind(seq uint64) error {
	if seq < x.low {
		return fmt.Errorf("certify: rewind to %d below the window (%d)", seq, x.low)
	}
	if seq >= x.head {
		return nil
	}
	n := len(x.entries)
	for n > 0 && x.entries[n-1].seq > seq {
		n--
	}
	x.entries = x.entries[:n]
	// Rebuild from the window: the previous writer of a key is not kept.
	clear(x.keys)
	for _, e := range x.entries {
		x.record(e.seq, e.keys)
	}
	x.head = seq
	return nil
}
