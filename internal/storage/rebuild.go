package storage

import (
	"bytes"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lockstepdb/lockstep/internal/row"
)

// Rebuilds: a new index over every row (add_index) and a table rewritten
// under a new definition (rewrite_table).
//
// Both write as much data as the table holds, so they do not go through the
// DDL's batch, which would hold it all in memory (and a Pebble batch stops
// at 4 GiB). They write into a key range no reader can see yet, straight to
// the store in chunks (chunkSink), and the DDL's own batch only publishes
// the result: the new index's definition, or the new table's definition
// together with a range deletion of the old table. That batch is applied
// atomically with the DDL's binlog position, so:
//
//   - a crash before it leaves chunks under a range nothing names: the
//     target range is cleared before a rebuild writes to it (replay of the
//     DDL, a retry of the statement), and create_table clears the range of
//     the id it takes;
//   - a rebuild that fails (a duplicate for a UNIQUE index, a NULL in a
//     column that became NOT NULL) clears what it wrote.
//
// The SQL layer stages a rebuild (Stage) before the DDL's exclusive commit,
// holding the table's exclusive metadata lock with every earlier commit
// visible, so no row of the table changes while the rebuild reads and
// other tables' commits go on; only the publication is exclusive. Replay
// rebuilds inside PrepareCatalog.
//
// A rewrite takes a new table id: its rows go under the new id's prefix
// while the old ones stay readable, and the new definition replaces the old
// at publication (MySQL gives a rebuilt table a new table_id too).
// rewrite_table changes logged before this (the same id for old and new)
// are replayed in place, in the DDL's batch, as they were made.

// chunkBytes is the size at which a rebuild commits what it has written
// (a variable for tests).
var chunkBytes = 4 << 20

// sink receives a rebuild's writes. has reports whether a key tracked by an
// earlier set of this rebuild exists (unique index entries, image-index
// entries of rows without a primary key).
type sink interface {
	set(k, v []byte, track bool) error
	has(k []byte) (bool, error)
}

// chunkSink writes to the store in chunks through an indexed batch, so has
// sees both the committed chunks and the current one.
type chunkSink struct {
	db *pebble.DB
	b  *pebble.Batch
}

func newChunkSink(db *pebble.DB) *chunkSink {
	return &chunkSink{db: db, b: db.NewIndexedBatch()}
}

func (s *chunkSink) set(k, v []byte, _ bool) error {
	if err := s.b.Set(k, v, nil); err != nil {
		return err
	}
	if s.b.Len() >= chunkBytes {
		if rebuildHook != nil {
			rebuildHook()
		}
		return s.flush()
	}
	return nil
}

func (s *chunkSink) has(k []byte) (bool, error) {
	_, c, err := s.b.Get(k)
	if err == pebble.ErrNotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, c.Close()
}

func (s *chunkSink) flush() error {
	if s.b.Empty() {
		return nil
	}
	err := s.db.Apply(s.b, pebble.NoSync)
	s.b.Close()
	s.b = s.db.NewIndexedBatch()
	return err
}

func (s *chunkSink) close() { s.b.Close() }

// memSink writes into a DDL batch (b nil: nowhere, for a check) and keeps
// the tracked keys in memory.
type memSink struct {
	b    *Batch
	seen map[string]bool
}

func (s *memSink) set(k, v []byte, track bool) error {
	if track {
		s.seen[string(k)] = true
	}
	if s.b == nil {
		return nil
	}
	return s.b.Set(k, v)
}

func (s *memSink) has(k []byte) (bool, error) { return s.seen[string(k)], nil }

// clearRange deletes a key range straight from the store.
func (e *Engine) clearRange(p []byte) error {
	return e.db.DeleteRange(p, row.PrefixEnd(p), pebble.NoSync)
}

// chunked runs a rebuild that writes under prefix p through a chunkSink,
// clearing p before and, if the rebuild fails, after.
func (e *Engine) chunked(p []byte, build func(s sink) error) error {
	if err := e.clearRange(p); err != nil {
		return err
	}
	s := newChunkSink(e.db)
	defer s.close()
	err := build(s)
	if err == nil {
		err = s.flush()
	}
	if err != nil {
		if cerr := e.clearRange(p); cerr != nil {
			return fmt.Errorf("%w (and clearing the partial rebuild failed: %v)", err, cerr)
		}
	}
	return err
}

// buildIndex writes the entries of index ix of nt (old's definition with ix
// added) for every row of old, failing on a duplicate for a unique index.
func (e *Engine) buildIndex(s sink, old, nt *Table, ix *IndexDef) error {
	pos := -1
	for i := range nt.Def.Indexes {
		if nt.Def.Indexes[i].ID == ix.ID {
			pos = i
		}
	}
	if pos < 0 {
		return fmt.Errorf("index %q missing from the new definition", ix.Name)
	}
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: old.rowPfx, UpperBound: row.PrefixEnd(old.rowPfx)})
	if err != nil {
		return err
	}
	defer it.Close()
	var vals []row.Value
	for it.First(); it.Valid(); it.Next() {
		vals, err = nt.Decode(it.Value(), vals)
		if err != nil {
			return err
		}
		ents, err := nt.IndexEntries(vals, it.Key())
		if err != nil {
			return err
		}
		ent := ents[pos]
		if ent.UniqueKey {
			if dup, err := s.has(ent.Key); err != nil {
				return err
			} else if dup {
				return &DuplicateKeyError{Table: nt, Index: pos, Key: ent.Key}
			}
		}
		if err := s.set(ent.Key, ent.Value, ent.UniqueKey); err != nil {
			return err
		}
	}
	return it.Error()
}

// rewriteRows writes every row of old under nt (see CatalogChange) with
// all of nt's indexes. The primary key's columns and values must be
// unchanged (the caller refuses changes to them), so each row keeps its
// key, under nt's prefix. A row of a table without a primary key keeps its
// hidden key too (it names the row, not its image) and its place in
// insertion order (order.go); the image index is rebuilt, numbering the
// rows of each new image in key order, so replay and replicas number them
// alike. The caller clears whatever nt's ranges held before.
func (e *Engine) rewriteRows(s sink, old, nt *Table, sources []int, fillImg []byte) error {
	keyless := old.Keyless()
	if keyless != nt.Keyless() {
		return fmt.Errorf("table rewrite cannot add or remove the primary key of %s", nt.Def.Name)
	}
	if len(sources) != len(nt.Def.Columns) {
		return fmt.Errorf("table rewrite: %d sources for %d columns", len(sources), len(nt.Def.Columns))
	}
	for _, src := range sources {
		if src >= len(old.Def.Columns) {
			return fmt.Errorf("table rewrite: source column %d of %d", src, len(old.Def.Columns))
		}
	}
	fill, _, err := row.DecodeImage(fillImg, fillColumns(nt.Def.Columns), nil)
	if err != nil {
		return fmt.Errorf("table rewrite: fill values: %w", err)
	}
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: old.rowPfx, UpperBound: row.PrefixEnd(old.rowPfx)})
	if err != nil {
		return err
	}
	defer it.Close()
	get := func(k []byte) ([]byte, bool, error) {
		ok, err := s.has(k)
		return nil, ok, err
	}
	var ovals []row.Value
	nvals := make([]row.Value, len(sources))
	for it.First(); it.Valid(); it.Next() {
		if ovals, err = old.Decode(it.Value(), ovals); err != nil {
			return err
		}
		for i, src := range sources {
			if src >= 0 {
				nvals[i] = ovals[src]
			} else {
				nvals[i] = fill[i]
			}
			if nvals[i] == nil && !nt.Def.Columns[i].Nullable {
				return &NullValueError{Column: nt.Def.Columns[i].Name}
			}
		}
		img, err := nt.Encode(nil, nvals)
		if err != nil {
			return err
		}
		// The key after the table prefix is the same.
		suffix := it.Key()[len(old.prefix):]
		var k []byte
		if keyless {
			k = append(append([]byte(nil), nt.prefix...), suffix...)
			g := nt.group(kindImage, img)
			n, err := count(g, get)
			if err != nil {
				return err
			}
			if err := s.set(member(g, n), k, true); err != nil {
				return err
			}
		} else {
			if k, err = nt.RowKey(nil, nvals); err != nil {
				return err
			}
			if !bytes.Equal(k[len(nt.prefix):], suffix) {
				return fmt.Errorf("table rewrite would change the primary key of a row of %s", nt.Def.Name)
			}
		}
		if err := s.set(k, img, false); err != nil {
			return err
		}
		ents, err := nt.IndexEntries(nvals, k)
		if err != nil {
			return err
		}
		for i, en := range ents {
			if en.UniqueKey {
				if dup, err := s.has(en.Key); err != nil {
					return err
				} else if dup {
					return &DuplicateKeyError{Table: nt, Index: i, Key: en.Key}
				}
			}
			if err := s.set(en.Key, en.Value, en.UniqueKey); err != nil {
				return err
			}
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	if keyless && !bytes.Equal(old.prefix, nt.prefix) {
		return e.copySequence(s, old, nt)
	}
	return nil
}

// rebuildHook, if set, is called before each chunk is committed (tests).
var rebuildHook func()

// SetRebuildHook sets the chunk size of rebuilds (0: unchanged) and a
// function called before each chunk is committed, and returns what
// restores both. For tests.
func SetRebuildHook(chunk int, fn func()) (restore func()) {
	oldFn, oldChunk := rebuildHook, chunkBytes
	rebuildHook = fn
	if chunk > 0 {
		chunkBytes = chunk
	}
	return func() { rebuildHook, chunkBytes = oldFn, oldChunk }
}

// Stage writes the data of a change that rebuilds (add_index, and
// rewrite_table under a new id) before its commit, so that only the
// publication runs inside the DDL's exclusive commit: other tables'
// commits go on while a large table is rebuilt. The caller must keep the
// table from changing until the change commits (its exclusive metadata
// lock, with every earlier commit visible), and call Unstage if it does
// not commit. Other changes have nothing to stage.
func (e *Engine) Stage(c *CatalogChange) error {
	if c.Op != "add_index" && (c.Op != "rewrite_table" || c.Table.ID == c.TableID) {
		return nil
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if err := e.stageLocked(c); err != nil {
		return err
	}
	c.staged = true
	return nil
}

// Unstage clears what Stage wrote for a change that did not commit.
func (e *Engine) Unstage(c *CatalogChange) error {
	if !c.staged {
		return nil
	}
	c.staged = false
	p, err := e.target(c)
	if err != nil {
		return err
	}
	return e.clearRange(p)
}

// target is the key range a rebuilding change writes.
func (e *Engine) target(c *CatalogChange) ([]byte, error) {
	nt := e.newTable(c.Table)
	if c.Op == "rewrite_table" {
		return nt.prefix, nil
	}
	for i := range nt.Def.Indexes {
		if nt.Def.Indexes[i].ID == c.Index.ID {
			return nt.IndexPrefix(i), nil
		}
	}
	return nil, fmt.Errorf("index %q missing from the new definition", c.Index.Name)
}

// stageLocked writes a rebuilding change's data. Called with e.mu held.
func (e *Engine) stageLocked(c *CatalogChange) error {
	t, ok := e.tables[c.TableID]
	if !ok {
		return fmt.Errorf("table id %d not found", c.TableID)
	}
	p, err := e.target(c)
	if err != nil {
		return err
	}
	nt := e.newTable(c.Table)
	if c.Op == "rewrite_table" {
		if _, taken := e.tables[c.Table.ID]; taken {
			return fmt.Errorf("table rewrite: table id %d is taken", c.Table.ID)
		}
		return e.chunked(p, func(s sink) error { return e.rewriteRows(s, t, nt, c.Sources, c.Fill) })
	}
	return e.chunked(p, func(s sink) error { return e.buildIndex(s, t, nt, c.Index) })
}
