package storage

// Insertion order of tables without a primary key.
//
// InnoDB keeps such a table's rows in the order of its hidden row id, so a
// full scan returns them in the order they were inserted, and applications
// rely on it (a log table read back, a queue without a key). Lockstep's
// hidden key is a hash of the row (storage.go), so the rows' own keys are
// in no useful order; a sequence index gives the order:
//
//	0x01 tableID(8) 0x05 seq(8)             -> row key
//	0x01 tableID(8) 0x06 hash(16) slot(4)    -> seq(8) (the row key's sequence entry)
//
// Invariants:
//   - Every row of a table without a primary key has exactly one sequence
//     entry, and the entries' order is the order in which the rows were
//     inserted: their commit order, and statement order within a
//     transaction. An update keeps the row's entry, as it keeps the row's
//     key (InnoDB's row id does not change either).
//   - Sequence numbers are taken when a batch is applied (Apply), by the
//     one goroutine that applies batches in binlog order, from a counter
//     per table that only grows: a row inserted later always sorts after
//     every row that exists. Writers never choose them, so a transaction,
//     a replica's applier and replay write rows exactly as before and the
//     sequence follows from the order of their batches' writes: a batch
//     records, in call order, every write of a row key of a table without
//     a primary key (Set, Delete, SetNew), and Apply gives a row key that
//     has no entry (or a SetNew) the next number. A writer that collapses
//     a transaction's writes (a transaction's buffer) makes its writes in
//     insertion order and marks a row it inserted with SetNew, so that a
//     row deleted and inserted again at the same key moves to the end.
//   - The numbers themselves are not part of the data: after a crash the
//     counter restarts from the last entry stored, and a replica numbers
//     rows its own way. Only their order is, and it is the same
//     everywhere a prefix of the same binlog was applied. A row event
//     names a row by its image only; among identical rows replay and
//     replicas change the first in insertion order (KeylessFind), which
//     is the one a source statement reading the table in that order
//     changed. A source statement that reached one of them another way
//     (through an index, or after it had itself changed an older row into
//     that image) may have changed a later one: the rows are equal, but
//     their positions may then differ, as they may on a MySQL replica.
//   - A store written before this index existed gets its entries at Open,
//     in key order (the only order those rows had), and a mark in its
//     metadata once they are all durable.

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lockstepdb/lockstep/internal/row"
)

const (
	kindSeq   = 0x05
	kindSeqOf = 0x06
	seqKeyLen = 1 + 8 + 1 + 8
	seqValLen = 8
)

// IsKeylessRow reports whether k is the key of a row of a table without a
// primary key (a string: a transaction's buffer holds its keys as such).
func IsKeylessRow(k string) bool {
	return len(k) == keylessKeyLen && k[0] == prefixTable && k[9] == kindKeyless
}

func isKeylessRowKey(k []byte) bool {
	return len(k) == keylessKeyLen && k[0] == prefixTable && k[9] == kindKeyless
}

// seqOfKey is the key of a row key's sequence entry.
func seqOfKey(rowKey []byte) []byte {
	k := append([]byte(nil), rowKey...)
	k[9] = kindSeqOf
	return k
}

func seqKey(tableID, seq uint64) []byte {
	k := make([]byte, 0, seqKeyLen)
	k = append(k, prefixTable)
	k = binary.BigEndian.AppendUint64(k, tableID)
	k = append(k, kindSeq)
	return binary.BigEndian.AppendUint64(k, seq)
}

// InsertionOrder returns the key range of the sequence index of the table
// whose row range is [lower, upper), when that is the whole row range of a
// table without a primary key: its values are the table's row keys in
// insertion order.
func InsertionOrder(lower, upper []byte) (lo, hi []byte, ok bool) {
	if len(lower) != 10 || lower[0] != prefixTable || lower[9] != kindKeyless || string(upper) != string(row.PrefixEnd(lower)) {
		return nil, nil, false
	}
	lo = append(append([]byte(nil), lower[:9]...), kindSeq)
	return lo, row.PrefixEnd(lo), true
}

// keylessOp is a batch's write of a keyless row key, in call order.
type keylessOp struct {
	key  []byte
	kind byte // opSet, opNew, opDel
}

const (
	opSet = iota // the row is new if it has no sequence entry
	opNew        // the row is new (inserted by this batch)
	opDel
)

// SetNew records a row this batch inserts. For a row of a table without a
// primary key it takes the next place in insertion order even when its key
// had a row before (deleted and inserted again in one transaction); for
// any other key it is Set.
func (b *Batch) SetNew(k, v []byte) error {
	if isKeylessRowKey(k) {
		b.keyless = append(b.keyless, keylessOp{append([]byte(nil), k...), opNew})
	}
	return b.b.Set(k, v, nil)
}

func (b *Batch) noteKeyless(k []byte, kind byte) {
	if isKeylessRowKey(k) {
		b.keyless = append(b.keyless, keylessOp{append([]byte(nil), k...), kind})
	}
}

// sequencer numbers the rows of a run of batches being applied (merger).
// pending holds the sequence entries the run has written and not yet
// committed (0: deleted).
type sequencer struct {
	e       *Engine
	pending map[string]uint64
}

// sequence adds to b the sequence-index writes of its keyless row writes.
func (s *sequencer) sequence(b *Batch) error {
	if len(b.keyless) == 0 {
		return nil
	}
	if s.pending == nil {
		s.pending = map[string]uint64{}
	}
	s.e.seqMu.Lock()
	defer s.e.seqMu.Unlock()
	for _, op := range b.keyless {
		ofKey := seqOfKey(op.key)
		old, err := s.seqOf(ofKey)
		if err != nil {
			return err
		}
		tableID := binary.BigEndian.Uint64(op.key[1:9])
		if old != 0 && op.kind != opSet {
			if err := b.b.Delete(seqKey(tableID, old), nil); err != nil {
				return err
			}
			if err := b.b.Delete(ofKey, nil); err != nil {
				return err
			}
			s.pending[string(ofKey)] = 0
		}
		if op.kind == opDel || (op.kind == opSet && old != 0) {
			continue
		}
		seq, err := s.e.nextSeqLocked(tableID)
		if err != nil {
			return err
		}
		var v [seqValLen]byte
		binary.BigEndian.PutUint64(v[:], seq)
		if err := b.b.Set(seqKey(tableID, seq), op.key, nil); err != nil {
			return err
		}
		if err := b.b.Set(ofKey, v[:], nil); err != nil {
			return err
		}
		s.pending[string(ofKey)] = seq
	}
	b.keyless = nil
	return nil
}

// seqOf is a row key's sequence number (0: none).
func (s *sequencer) seqOf(ofKey []byte) (uint64, error) {
	if seq, ok := s.pending[string(ofKey)]; ok {
		return seq, nil
	}
	var seq uint64
	_, err := view(s.e.db, ofKey, func(v []byte) error {
		if len(v) != seqValLen {
			return fmt.Errorf("sequence entry of a row is %d bytes", len(v))
		}
		seq = binary.BigEndian.Uint64(v)
		return nil
	})
	return seq, err
}

// nextSeqLocked takes a table's next sequence number: one more than the
// last it gave, or than the last entry stored. Called with seqMu held.
func (e *Engine) nextSeqLocked(tableID uint64) (uint64, error) {
	n, ok := e.seqNext[tableID]
	if !ok {
		last, err := e.lastSeq(tableID)
		if err != nil {
			return 0, err
		}
		n = last + 1
	}
	e.seqNext[tableID] = n + 1
	return n, nil
}

// lastSeq is the highest sequence number stored for a table (0: none).
func (e *Engine) lastSeq(tableID uint64) (uint64, error) {
	lo := seqKey(tableID, 0)[:10]
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: row.PrefixEnd(lo)})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	if !it.Last() {
		return 0, it.Error()
	}
	k := it.Key()
	if len(k) != seqKeyLen {
		return 0, fmt.Errorf("sequence index key of %d bytes", len(k))
	}
	return binary.BigEndian.Uint64(k[10:]), nil
}

// forgetSeq drops a dropped table's counter.
func (e *Engine) forgetSeq(tableID uint64) {
	e.seqMu.Lock()
	delete(e.seqNext, tableID)
	e.seqMu.Unlock()
}

// copySequence writes old's sequence index under nt's prefix (a table
// rewritten under a new id keeps its rows' keys, so their order carries
// over unchanged).
func (e *Engine) copySequence(s sink, old, nt *Table) error {
	for _, kind := range []byte{kindSeq, kindSeqOf} {
		p := append(append([]byte(nil), old.prefix...), kind)
		it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: row.PrefixEnd(p)})
		if err != nil {
			return err
		}
		for it.First(); it.Valid(); it.Next() {
			k := append(append([]byte(nil), nt.prefix...), it.Key()[len(old.prefix):]...)
			v := it.Value()
			if kind == kindSeq {
				v = append(append([]byte(nil), nt.prefix...), v[len(old.prefix):]...)
			}
			if err := s.set(k, v, false); err != nil {
				it.Close()
				return err
			}
		}
		err = it.Error()
		if cerr := it.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// orderedMeta marks a store whose keyless rows all have sequence entries.
const orderedMeta = "keyless-order"

// sequenceUnordered gives the rows of tables without a primary key
// sequence entries, in key order (the only order they had), in a store
// written before the index existed; then it marks the store, durably, as
// ordered. Called at Open. A crash before the mark leaves it to be redone
// from the start: it clears whatever entries an earlier attempt left.
func (e *Engine) sequenceUnordered() error {
	if _, ok, err := e.Meta(orderedMeta); err != nil || ok {
		return err
	}
	ids := make([]uint64, 0, len(e.tables))
	for id, t := range e.tables {
		if t.Keyless() {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		t := e.tables[id]
		if err := e.sequenceTable(t); err != nil {
			return fmt.Errorf("ordering the rows of %s.%s: %w", t.Def.DB, t.Def.Name, err)
		}
	}
	if err := e.db.Flush(); err != nil {
		return err
	}
	return e.SetMeta(orderedMeta, []byte{1})
}

func (e *Engine) sequenceTable(t *Table) error {
	for _, kind := range []byte{kindSeq, kindSeqOf} {
		if err := e.clearRange(append(append([]byte(nil), t.prefix...), kind)); err != nil {
			return err
		}
	}
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: t.rowPfx, UpperBound: row.PrefixEnd(t.rowPfx)})
	if err != nil {
		return err
	}
	defer it.Close()
	s := newChunkSink(e.db)
	defer s.close()
	var seq uint64
	for it.First(); it.Valid(); it.Next() {
		seq++
		var v [seqValLen]byte
		binary.BigEndian.PutUint64(v[:], seq)
		if err := s.set(seqKey(t.Def.ID, seq), it.Key(), false); err != nil {
			return err
		}
		if err := s.set(seqOfKey(it.Key()), v[:], false); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	return s.flush()
}
