package storage

import (
	"bytes"
	"hash/fnv"

	"github.com/lockstepdb/lockstep/internal/row"
)

// Row changes: what inserting, updating or deleting one row does to a
// table's keys, worked out here once for the three writers of rows: a
// transaction (package txn), a replica's applier (package replica) and
// recovery's replay (ApplyRowEvent). Each writer reads the row's current
// version its own way (under a lock; through its overlay of transactions
// not yet visible; from the store and its own batch) and decides what a
// failed check means (an error to the client, a stopped applier, nothing
// for replay, which trusts the log). What the change writes and deletes,
// which keys must not exist before it, which keys it adds to the table
// and what names it in a write set is decided here, so a change of the
// key layout is made in one place.
//
// Invariants of a planned RowChange:
//   - Deletes are made before Sets: a key in both (a unique entry whose
//     row key changes) ends up set.
//   - For an insert or update, Sets[0] is the row itself (Key -> Image).
//   - The WriteSet of a change contains the hash of the LockKey of every
//     row key it reads or writes and of every unique entry it adds or
//     removes: two changes that could conflict share a hash. For a table
//     without a primary key the hashes are those of the row key without
//     its slot; such changes are ordered by the commit order instead
//     (writers leave their transactions out of write-set dependency
//     tracking), but a cluster member certifies them by these hashes.

// RowChange is one row change planned against the row's current version.
// Reset it before planning the next change; its slices are reused.
type RowChange struct {
	// Key is the row's key after an insert or update, or the key of the
	// row deleted. OldKey is the row's key before an update or a delete
	// (nil for an insert).
	Key, OldKey []byte
	// Image is the row's image after an insert or update (nil for a
	// delete).
	Image []byte
	// Sets are the keys to write and their values; Deletes the keys to
	// delete, before the Sets.
	Sets    []EntryWrite
	Deletes [][]byte
	// Absent are the keys that must not exist before the change: a new
	// row key, and entries of unique indexes the row does not already
	// own. Index is the index's position in Def.Indexes, -1 for the row
	// key.
	Absent []Absent
	// Adds are the keys the change adds to the table (a new row key and
	// new index entries): an insert waits while another transaction's
	// gap lock covers one (InnoDB's insert intention).
	Adds [][]byte
	// WriteSet holds the hashes (KeyHash) that name what the change
	// touches.
	WriteSet []uint64
}

// Absent is a key that must not exist before a change.
type Absent struct {
	Key   []byte
	Index int // position in Def.Indexes; -1: the row key
}

// Reset empties c for the next change, keeping its slices' room.
func (c *RowChange) Reset() {
	*c = RowChange{Sets: c.Sets[:0], Deletes: c.Deletes[:0], Absent: c.Absent[:0], Adds: c.Adds[:0], WriteSet: c.WriteSet[:0]}
}

// KeyHash is the write-set hash of a key.
func KeyHash(k []byte) uint64 {
	h := fnv.New64a()
	h.Write(k)
	return h.Sum64()
}

// Located is the row a change acts on.
type Located struct {
	// Key is the row's key; nil if no row of a table without a primary
	// key has the image.
	Key []byte
	// leave are, for a table without a primary key, the image-index
	// writes that take the row out of its image's entries (KeylessFind).
	leave []EntryWrite
}

// Locate finds the row that a change of the row with image img and values
// vals acts on. For a table with a primary key that is the row with vals'
// key, which need not exist. For a table without one it is found through
// get among the rows with that image (see KeylessFind, which hint and lock
// are passed to); Key is nil if there is none.
func (t *Table) Locate(img []byte, vals []row.Value, hint []byte, get Getter, lock func(k []byte) error) (Located, error) {
	if !t.Keyless() {
		k, err := t.RowKey(nil, vals)
		return Located{Key: k}, err
	}
	k, leave, err := t.KeylessFind(img, hint, get, lock)
	return Located{Key: k, leave: leave}, err
}

// PlanInsert plans inserting the row vals, whose image is img. A table
// without a primary key gives the row its key and image-index entry
// through get (KeylessInsert, which lock is passed to).
func (t *Table) PlanInsert(c *RowChange, img []byte, vals []row.Value, get Getter, lock func(k []byte) error) error {
	var key, entry []byte
	var err error
	if t.Keyless() {
		key, entry, err = t.KeylessInsert(img, get, lock)
	} else {
		key, err = t.RowKey(nil, vals)
	}
	if err != nil {
		return err
	}
	ents, err := t.IndexEntries(vals, key)
	if err != nil {
		return err
	}
	c.Key, c.Image = key, img
	c.Sets = append(c.Sets, EntryWrite{key, img})
	if entry != nil {
		c.Sets = append(c.Sets, EntryWrite{entry, key})
	}
	c.Absent = append(c.Absent, Absent{key, -1})
	c.Adds = append(c.Adds, key)
	for _, e := range ents {
		c.Sets = append(c.Sets, EntryWrite{e.Key, e.Value})
		c.Adds = append(c.Adds, e.Key)
		if e.UniqueKey {
			c.Absent = append(c.Absent, Absent{e.Key, e.Index})
		}
	}
	c.addWriteSet(key, ents, nil)
	return nil
}

// PlanUpdate plans changing the row at (found by Locate), whose current
// image and values are cur and curVals, to the row vals with image img.
// The row keeps its key in a table without a primary key; its new
// image-index entry is found through get (KeylessEntry, which lock is
// passed to).
func (t *Table) PlanUpdate(c *RowChange, at Located, cur []byte, curVals []row.Value, img []byte, vals []row.Value, get Getter, lock func(k []byte) error) error {
	oldKey, newKey := at.Key, at.Key
	var entry []byte
	if t.Keyless() {
		if !bytes.Equal(cur, img) {
			var err error
			if entry, err = t.KeylessEntry(img, get, lock); err != nil {
				return err
			}
		}
	} else {
		var err error
		if newKey, err = t.RowKey(nil, vals); err != nil {
			return err
		}
	}
	oldEnts, err := t.IndexEntries(curVals, oldKey)
	if err != nil {
		return err
	}
	newEnts, err := t.IndexEntries(vals, newKey)
	if err != nil {
		return err
	}
	pkChanged := !bytes.Equal(oldKey, newKey)
	c.Key, c.OldKey, c.Image = newKey, oldKey, img
	c.Sets = append(c.Sets, EntryWrite{newKey, img})
	if pkChanged {
		c.Deletes = append(c.Deletes, oldKey)
		c.Absent = append(c.Absent, Absent{newKey, -1})
		c.Adds = append(c.Adds, newKey)
	}
	if entry != nil {
		c.take(at.leave)
		c.Sets = append(c.Sets, EntryWrite{entry, newKey})
	}
	// An entry the row has before and after is left as it is, unless the
	// row key (its value, or part of its key) changes.
	for _, o := range oldEnts {
		if pkChanged || !hasEntry(newEnts, o.Key) {
			c.Deletes = append(c.Deletes, o.Key)
		}
	}
	for _, n := range newEnts {
		owned := hasEntry(oldEnts, n.Key)
		if !owned || pkChanged {
			c.Sets = append(c.Sets, EntryWrite{n.Key, n.Value})
			c.Adds = append(c.Adds, n.Key)
		}
		if n.UniqueKey && !owned {
			c.Absent = append(c.Absent, Absent{n.Key, n.Index})
		}
	}
	c.addWriteSet(oldKey, oldEnts, nil)
	if pkChanged {
		c.addWriteSet(newKey, newEnts, nil)
	} else {
		c.addWriteSet(nil, newEnts, oldEnts)
	}
	return nil
}

// PlanDelete plans deleting the row at (found by Locate), whose current
// values are curVals.
func (t *Table) PlanDelete(c *RowChange, at Located, curVals []row.Value) error {
	ents, err := t.IndexEntries(curVals, at.Key)
	if err != nil {
		return err
	}
	c.Key, c.OldKey = at.Key, at.Key
	c.Deletes = append(c.Deletes, at.Key)
	c.take(at.leave)
	for _, e := range ents {
		c.Deletes = append(c.Deletes, e.Key)
	}
	c.addWriteSet(at.Key, ents, nil)
	return nil
}

// WriteChange makes a planned change's writes with the caller's set and
// del: the Deletes, then the Sets.
func WriteChange(c *RowChange, set func(k, v []byte) error, del func(k []byte) error) error {
	for _, k := range c.Deletes {
		if err := del(k); err != nil {
			return err
		}
	}
	for _, w := range c.Sets {
		if err := set(w.Key, w.Value); err != nil {
			return err
		}
	}
	return nil
}

// take adds image-index writes to c.
func (c *RowChange) take(ws []EntryWrite) {
	for _, w := range ws {
		if w.Value == nil {
			c.Deletes = append(c.Deletes, w.Key)
		} else {
			c.Sets = append(c.Sets, w)
		}
	}
}

// addWriteSet adds the hashes of row key key (if not nil) and of the
// unique entries of ents that are not in skip.
func (c *RowChange) addWriteSet(key []byte, ents, skip []IndexEntry) {
	if key != nil {
		c.WriteSet = append(c.WriteSet, KeyHash(LockKey(key)))
	}
	for _, e := range ents {
		if e.UniqueKey && !hasEntry(skip, e.Key) {
			c.WriteSet = append(c.WriteSet, KeyHash(e.Key))
		}
	}
}

func hasEntry(ents []IndexEntry, k []byte) bool {
	for _, e := range ents {
		if bytes.Equal(e.Key, k) {
			return true
		}
	}
	return false
}
