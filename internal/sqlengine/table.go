package sqlengine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/lockstepdb/lockstep/internal/lock"
	"github.com/lockstepdb/lockstep/internal/row"
	"github.com/lockstepdb/lockstep/internal/storage"
	"github.com/lockstepdb/lockstep/internal/txn"
)

// Table is a storage table seen through GMS. It is a cheap value made per
// query from an immutable storage.Table and its cached GMS schema.
type Table struct {
	e      *Engine
	db     *Database
	st     *storage.Table
	sch    sql.PrimaryKeySchema
	mdl    []byte           // the table's metadata lock key
	lookup *sql.IndexLookup // set for IndexedAccess

	// indexBuilt: CreateIndex ran on this object and built the index.
	// GMS then reads every row of it again to build a unique index
	// through RewriteInserter (discardRows); there is nothing left to
	// read, and the object's definition is stale.
	indexBuilt bool
	// fkRead: the table is read for a foreign key check (fkEditor): reads
	// lock shared and reference the rows they return (foreignkeys.go).
	fkRead bool
}

var (
	_ sql.Table                 = (*Table)(nil)
	_ sql.IndexAddressableTable = (*Table)(nil)
	_ sql.IndexedTable          = (*Table)(nil)
	_ sql.InsertableTable       = (*Table)(nil)
	_ sql.UpdatableTable        = (*Table)(nil)
	_ sql.DeletableTable        = (*Table)(nil)
	_ sql.ReplaceableTable      = (*Table)(nil)
	_ sql.AutoIncrementTable    = (*Table)(nil)
	_ sql.IndexAlterableTable   = (*Table)(nil)
	_ sql.PrimaryKeyTable       = (*Table)(nil)
	_ sql.TruncateableTable     = (*Table)(nil)
	_ sql.CommentedTable        = (*Table)(nil)
	_ sql.ForeignKeyTable       = (*Table)(nil)
)

// schemaCache maps storage tables to their GMS schemas (parsing type and
// default strings is too slow to do per query). Every statement reads it
// and only a table's first use or changed definition writes it, so it is
// a sync.Map: readers take no lock (one lock for all of them made
// statements queue behind each other).
type schemaCache struct {
	m sync.Map // *storage.Table -> sql.PrimaryKeySchema
}

func (c *schemaCache) get(st *storage.Table) (sql.PrimaryKeySchema, bool) {
	v, ok := c.m.Load(st)
	if !ok {
		return sql.PrimaryKeySchema{}, false
	}
	return v.(sql.PrimaryKeySchema), true
}

// put caches st's schema, dropping those of the table's older
// definitions.
func (c *schemaCache) put(st *storage.Table, sch sql.PrimaryKeySchema) {
	c.m.Range(func(k, _ any) bool {
		if old := k.(*storage.Table); old != st && old.Def.ID == st.Def.ID {
			c.m.Delete(old)
		}
		return true
	})
	c.m.Store(st, sch)
}

func (e *Engine) sqlTable(ctx *sql.Context, d *Database, st *storage.Table) (*Table, error) {
	sch, ok := e.schemas.get(st)
	if !ok {
		var err error
		sch, err = gmsSchema(ctx, e.GMS.Analyzer.Catalog, st.Def)
		if err != nil {
			return nil, err
		}
		e.schemas.put(st, sch)
	}
	return &Table{e: e, db: d, st: st, sch: sch, mdl: []byte(mdlKey(st.Def.ID))}, nil
}

func (t *Table) Name() string                                       { return t.st.Def.Name }
func (t *Table) String() string                                     { return t.st.Def.Name }
func (t *Table) Schema(*sql.Context) sql.Schema                     { return t.sch.Schema }
func (t *Table) PrimaryKeySchema(*sql.Context) sql.PrimaryKeySchema { return t.sch }
func (t *Table) Collation() sql.CollationID                         { return sql.CollationID(t.st.Def.Collation) }

func (t *Table) Comment() string {
	var m sqlMeta
	if err := jsonUnmarshal(t.st.Def.SQL, &m); err != nil {
		return ""
	}
	return m.Comment
}

// begin returns the session's transaction after taking the table's shared
// metadata lock, and checks that the table was not changed by DDL since
// this query resolved it (MySQL 1412).
func (t *Table) begin(ctx *sql.Context) (*Session, *txn.Txn, error) {
	s := sessionOf(ctx)
	if s == nil {
		return nil, nil, fmt.Errorf("lockstep: not a Lockstep session")
	}
	tx := s.txn(ctx)
	// A table the session locked with LOCK TABLES is already held, more
	// strongly, by the session (locktables.go).
	if !s.holdsTableLock(t.st.Def.ID) {
		if err := tx.Lock(t.mdl, lock.Shared); err != nil {
			return nil, nil, s.afterError(err)
		}
	}
	if cur, ok := t.e.store.TableByID(t.st.Def.ID); !ok || cur != t.st {
		if !ok || !s.altered[t.st.Def.ID] || !sameRows(cur.Def, t.st.Def) {
			return nil, nil, mysql.NewSQLError(erTableDefChanged, "HY000", "Table definition has changed, please retry transaction")
		}
		// This statement changed only the table's SQL metadata (ALTER
		// TABLE ... DROP COLUMN drops the column's checks first).
		t.st = cur
	}
	return s, tx, nil
}

// IsTemporary implements sql.TemporaryTable: Lockstep has no temporary
// tables. go-mysql-server's read-only-transaction check asks every table
// written to, and fails on a table that does not answer.
func (t *Table) IsTemporary() bool { return false }

// beginWrite is begin for a statement that changes rows: refused under
// read_only (unless SUPER) and super_read_only.
func (t *Table) beginWrite(ctx *sql.Context) (*Session, *txn.Txn, error) {
	if err := t.e.writable(ctx); err != nil {
		return nil, nil, err
	}
	return t.begin(ctx)
}

// partition is a key range of the primary key or of one index, or (point)
// the one key of a row or of a unique index entry.
type partition struct {
	index  int // -1 primary key, else position in Def.Indexes
	lo, hi []byte
	point  bool // lo is a whole primary key or unique index key
	whole  bool // the whole table, read without an index (tableio.go)
}

func (p *partition) Key() []byte { return p.lo }

func (t *Table) Partitions(ctx *sql.Context) (sql.PartitionIter, error) {
	if t.indexBuilt {
		return sql.PartitionsToPartitionIter(), nil
	}
	pfx := t.st.PrimaryPrefix()
	return sql.PartitionsToPartitionIter(&partition{index: -1, lo: pfx, hi: row.PrefixEnd(pfx), whole: true}), nil
}

func (t *Table) PartitionRows(ctx *sql.Context, p sql.Partition) (sql.RowIter, error) {
	part, ok := p.(*partition)
	if !ok {
		return nil, fmt.Errorf("lockstep: unexpected partition %T", p)
	}
	s, tx, err := t.begin(ctx)
	if err != nil {
		return nil, err
	}
	mode := s.lockModeFor(t.st.Def.Name)
	wait := s.stmtWait
	if t.fkRead {
		// A foreign key check waits, as InnoDB's does, whatever the
		// statement's locking clause says.
		mode, wait = max(mode, lock.Shared), txn.Wait
	}
	slot := ioSlot(part.index, part.whole || t.st.Keyless())
	s.noteTableUse(t.st, false)
	if part.point {
		return &pointIter{t: t, s: s, tx: tx, key: part.lo, viaIndex: part.index >= 0, mode: mode, wait: wait, slot: slot}, nil
	}
	var it *txn.Iter
	switch {
	case part.index >= 0 && mode != 0:
		it, err = tx.LockingIndexScan(part.lo, part.hi, wait)
	case part.index >= 0:
		it, err = tx.Scan(part.lo, part.hi)
	case mode != 0:
		it, err = tx.LockingScanWith(part.lo, part.hi, mode, wait)
	default:
		it, err = tx.Scan(part.lo, part.hi)
	}
	if err != nil {
		return nil, err
	}
	return &rowIter{t: t, s: s, tx: tx, it: it, viaIndex: part.index >= 0, mode: mode, wait: wait, slot: slot}, nil
}

// rowIter decodes rows from a primary or secondary index iterator.
type rowIter struct {
	t        *Table
	s        *Session
	tx       *txn.Txn
	it       *txn.Iter
	viaIndex bool
	mode     lock.Mode
	wait     txn.WaitPolicy // NOWAIT, SKIP LOCKED
	vals     []row.Value
	slot     int // the index slot its reads count under (tableio.go)
}

func (r *rowIter) Next(ctx *sql.Context) (sql.Row, error) {
	for {
		if !r.it.Next() {
			if err := r.it.Err(); err != nil {
				return nil, r.s.afterError(err)
			}
			return nil, io.EOF
		}
		kv := r.it.KV()
		img := kv.Value
		if r.viaIndex {
			var found bool
			var err error
			if r.mode != 0 {
				img, found, err = r.tx.GetLockedWith(kv.Value, r.mode, r.wait)
			} else {
				img, found, err = r.tx.Get(kv.Value)
			}
			if errors.Is(err, txn.ErrLockSkipped) {
				continue
			}
			if err != nil {
				return nil, r.s.afterError(err)
			}
			if !found {
				continue // deleted since the index entry was read
			}
			if r.t.st.Keyless() {
				r.tx.NoteRow(kv.Value, img)
			}
			if r.t.fkRead {
				r.tx.Reference(kv.Value)
			}
		} else {
			if r.t.st.Keyless() {
				r.tx.NoteRow(kv.Key, img)
			}
			if r.t.fkRead {
				r.tx.Reference(kv.Key)
			}
		}
		r.s.rowsRead.Add(1)
		r.s.noteIO(r.t.st, r.slot, ioFetch, 1)
		return r.t.toSQLRow(img, &r.vals)
	}
}

func (r *rowIter) Close(*sql.Context) error { return r.it.Close() }

// pointIter reads the one row of an exact key with a point read, which is
// much cheaper than an iterator.
type pointIter struct {
	t        *Table
	s        *Session
	tx       *txn.Txn
	key      []byte
	viaIndex bool
	mode     lock.Mode
	wait     txn.WaitPolicy
	done     bool
	slot     int // the index slot its read counts under (tableio.go)
}

func (p *pointIter) Next(ctx *sql.Context) (sql.Row, error) {
	if p.done {
		return nil, io.EOF
	}
	p.done = true
	get := func(k []byte) ([]byte, bool, error) {
		if p.mode != 0 {
			return p.tx.GetLockedWith(k, p.mode, p.wait)
		}
		return p.tx.Get(k)
	}
	key := p.key
	if p.viaIndex {
		var rowKey []byte
		var found bool
		var err error
		if p.mode != 0 {
			rowKey, found, err = p.tx.GetLatest(key)
			if err == nil && !found {
				// No such entry: none may be inserted until the
				// transaction ends (InnoDB's gap lock).
				err = p.tx.LockGap(key, p.wait)
			}
		} else {
			rowKey, found, err = p.tx.Get(key)
		}
		if err != nil || !found {
			return nil, orEOF(p.s.afterError(err))
		}
		key = rowKey
	}
	img, found, err := get(key)
	if errors.Is(err, txn.ErrLockSkipped) {
		return nil, io.EOF
	}
	if err != nil || !found {
		return nil, orEOF(p.s.afterError(err))
	}
	if p.t.st.Keyless() {
		p.tx.NoteRow(key, img)
	}
	if p.t.fkRead {
		p.tx.Reference(key)
	}
	p.s.rowsRead.Add(1)
	p.s.noteIO(p.t.st, p.slot, ioFetch, 1)
	var scratch []row.Value
	return p.t.toSQLRow(img, &scratch)
}

// rowSlab hands out rows cut from shared arrays: one allocation for many
// rows of a scan instead of one a row. Its arrays grow from 4 rows to 64
// as a scan goes on, so that a point read does not pay for a range's.
// A row handed out is never handed out again.
type rowSlab struct {
	free []any
	rows int // rows in the next array
}

func (s *rowSlab) next(n int) sql.Row {
	if len(s.free) < n {
		s.rows = min(max(4, 2*s.rows), 64)
		s.free = make([]any, n*s.rows)
	}
	r := s.free[:n:n]
	s.free = s.free[n:]
	return r
}

func orEOF(err error) error {
	if err == nil {
		return io.EOF
	}
	return err
}

func (p *pointIter) Close(*sql.Context) error { return nil }

func (t *Table) toSQLRow(img []byte, scratch *[]row.Value) (sql.Row, error) {
	return t.toSQLRowSome(img, scratch, nil, nil)
}

// toSQLRowSome decodes only the columns want marks (all if nil); the
// others are nil in the row. The row is cut from slab if not nil.
func (t *Table) toSQLRowSome(img []byte, scratch *[]row.Value, want []bool, slab *rowSlab) (sql.Row, error) {
	vals, _, err := row.DecodeImageSome(img, t.st.Def.Columns, *scratch, want)
	if err != nil {
		return nil, err
	}
	*scratch = vals
	var out sql.Row
	if slab != nil {
		out = slab.next(len(vals))
	} else {
		out = make(sql.Row, len(vals))
	}
	cols := t.st.Def.Columns
	for i, v := range vals {
		out[i] = fromStorage(&cols[i], v)
	}
	return out, nil
}

func (t *Table) toStorageRow(ctx *sql.Context, r sql.Row) ([]row.Value, error) {
	cols := t.st.Def.Columns
	if len(r) != len(cols) {
		return nil, fmt.Errorf("row has %d values, table %s has %d columns", len(r), t.Name(), len(cols))
	}
	out := make([]row.Value, len(r))
	for i, v := range r {
		sv, err := toStorage(ctx, &cols[i], t.sch.Schema[i].Type, v)
		if err != nil {
			return nil, err
		}
		out[i] = sv
	}
	return out, nil
}

// --- indexes

// index is a primary or secondary index as GMS sees it.
type index struct {
	t       *Table
	pos     int  // -1 primary; for a SPATIAL index, its place in the SQL metadata
	spatial bool // a SPATIAL index (spatial.go)
	name    string
	cols    []int
	uniq    bool
	comm    string
	exprs   []string
}

func (t *Table) GetIndexes(ctx *sql.Context) ([]sql.Index, error) {
	var out []sql.Index
	if !t.st.Keyless() {
		out = append(out, t.newIndex(-1))
	}
	for i := range t.st.Def.Indexes {
		out = append(out, t.newIndex(i))
	}
	for i, sp := range tableSpatial(t.st.Def) {
		col := t.sch.Schema[sp.Column]
		out = append(out, &index{t: t, pos: i, spatial: true, name: sp.Name, cols: []int{sp.Column},
			comm: sp.Comment, exprs: []string{col.Source + "." + col.Name}})
	}
	return out, nil
}

func (t *Table) newIndex(pos int) *index {
	ix := &index{t: t, pos: pos, name: "PRIMARY", cols: t.st.Def.PK, uniq: true}
	if pos >= 0 {
		d := t.st.Def.Indexes[pos]
		ix.name, ix.cols, ix.uniq, ix.comm = d.Name, d.Columns, d.Unique, d.Comment
	}
	// As the schema spells them: go-mysql-server matches index columns
	// for lookups ignoring case, but for SHOW CREATE TABLE, SHOW INDEX and
	// information_schema exactly, and a lower-cased name there lost the
	// column of an index on a mixed-case one (KEY k ()).
	for _, c := range ix.cols {
		col := t.sch.Schema[c]
		ix.exprs = append(ix.exprs, col.Source+"."+col.Name)
	}
	return ix
}

func (i *index) ID() string            { return i.name }
func (i *index) Database() string      { return i.t.db.name }
func (i *index) Table() string         { return i.t.Name() }
func (i *index) Expressions() []string { return i.exprs }
func (i *index) IsUnique() bool        { return i.uniq }
func (i *index) IsSpatial() bool       { return i.spatial }
func (i *index) IsFullText() bool      { return false }
func (i *index) IsVector() bool        { return false }
func (i *index) Comment() string       { return i.comm }
func (i *index) IndexType() string {
	if i.spatial {
		return "SPATIAL"
	}
	return "BTREE"
}
func (i *index) IsGenerated() bool                     { return false }
func (i *index) PrefixLengths() []uint16               { return nil }
func (i *index) CanSupportOrderBy(sql.Expression) bool { return false }
func (i *index) CanSupport(_ *sql.Context, rs ...sql.Range) bool {
	for _, r := range rs {
		if _, ok := r.(sql.MySQLRange); !ok {
			return false
		}
	}
	return true
}

func (i *index) ColumnExpressionTypes(*sql.Context) []sql.ColumnExpressionType {
	out := make([]sql.ColumnExpressionType, len(i.cols))
	for k, c := range i.cols {
		out[k] = sql.ColumnExpressionType{Expression: i.exprs[k], Type: i.t.sch.Schema[c].Type}
	}
	return out
}

// PreciseMatch is false: ranges become key bounds that may cover more rows
// than the range (GMS re-applies the filter).
func (t *Table) PreciseMatch() bool { return false }

func (t *Table) IndexedAccess(ctx *sql.Context, lookup sql.IndexLookup) sql.IndexedTable {
	nt := *t
	nt.lookup = &lookup
	return &nt
}

func (t *Table) LookupPartitions(ctx *sql.Context, lookup sql.IndexLookup) (sql.PartitionIter, error) {
	ix, ok := lookup.Index.(*index)
	if !ok || ix.t.st.Def.ID != t.st.Def.ID {
		return nil, fmt.Errorf("lockstep: lookup on a foreign index %v", lookup.Index)
	}
	if ix.spatial {
		// No R-tree: the whole table, filtered above (spatial.go). Its
		// range is a bounding box, which go-mysql-server may also call
		// empty: it compares the corners' bytes, not their coordinates.
		return t.Partitions(ctx)
	}
	if lookup.IsEmptyRange {
		return sql.PartitionsToPartitionIter(), nil
	}
	prefix := t.st.PrimaryPrefix()
	if ix.pos >= 0 {
		prefix = t.st.IndexPrefix(ix.pos)
	}
	var parts []sql.Partition
	for _, r := range lookup.Ranges.ToRanges() {
		mr, ok := r.(sql.MySQLRange)
		if !ok {
			return nil, fmt.Errorf("lockstep: unsupported range %T", r)
		}
		lo, hi, exact := t.bounds(ctx, ix.cols, mr, prefix)
		if exact && ix.uniq {
			parts = append(parts, &partition{index: ix.pos, lo: lo, point: true})
			continue
		}
		if hi != nil && string(lo) >= string(hi) {
			continue
		}
		parts = append(parts, &partition{index: ix.pos, lo: lo, hi: hi})
	}
	return sql.PartitionsToPartitionIter(disjoint(parts)...), nil
}

// disjoint merges overlapping key ranges. GMS's ranges are disjoint, but
// bounds widens a range it cannot express exactly (a condition on a later
// index column only), so two of them may cover the same keys, and a row
// must not come back twice. Points inside a range are dropped for the same
// reason.
func disjoint(parts []sql.Partition) []sql.Partition {
	if len(parts) < 2 {
		return parts
	}
	var points, ranges []*partition
	for _, p := range parts {
		if p := p.(*partition); p.point {
			points = append(points, p)
		} else {
			ranges = append(ranges, p)
		}
	}
	slices.SortFunc(ranges, func(a, b *partition) int { return bytes.Compare(a.lo, b.lo) })
	var merged []*partition
	for _, r := range ranges {
		if n := len(merged); n > 0 {
			last := merged[n-1]
			if last.hi == nil || bytes.Compare(r.lo, last.hi) < 0 {
				if last.hi != nil && (r.hi == nil || bytes.Compare(r.hi, last.hi) > 0) {
					cp := *last
					cp.hi = r.hi
					merged[n-1] = &cp
				}
				continue
			}
		}
		merged = append(merged, r)
	}
	keep := make([]*partition, 0, len(points)+len(merged))
	for _, p := range points {
		inside := false
		for _, r := range merged {
			if bytes.Compare(p.lo, r.lo) >= 0 && (r.hi == nil || bytes.Compare(p.lo, r.hi) < 0) {
				inside = true
				break
			}
		}
		if !inside {
			keep = append(keep, p)
		}
	}
	if len(keep) == len(points) && len(merged) == len(ranges) {
		return parts // nothing overlapped: GMS's order, unchanged
	}
	keep = append(keep, merged...)
	slices.SortFunc(keep, func(a, b *partition) int { return bytes.Compare(a.lo, b.lo) })
	out := make([]sql.Partition, len(keep))
	for i, p := range keep {
		out[i] = p
	}
	return out
}

// bounds turns a range over index columns into a key range: equality
// columns extend the prefix, the first non-equality column bounds it, and
// later columns are left to GMS's filter. A bound value that is not already
// of the column's type is not used (the range widens instead), so the key
// range always covers the SQL range. exact reports that every index column
// is equal to a non-NULL value: lo is then the whole key.
func (t *Table) bounds(ctx *sql.Context, cols []int, r sql.MySQLRange, prefix []byte) (lo, hi []byte, exact bool) {
	cur := append([]byte(nil), prefix...)
	points := 0
	for i, ce := range r {
		if i >= len(cols) {
			break
		}
		col := &t.st.Def.Columns[cols[i]]
		if k, isNull, ok := t.pointKey(ctx, col, ce); ok {
			if isNull {
				cur = append(cur, 0x00)
			} else {
				cur = append(cur, k...)
				points++
			}
			continue
		}
		lo, hi := cur, row.PrefixEnd(cur)
		switch c := ce.LowerBound.(type) {
		case sql.AboveNull:
			lo = append(append([]byte(nil), cur...), 0x01)
		case sql.Below:
			if k, ok := t.keyOf(ctx, col, c.Key); ok {
				lo = append(append([]byte(nil), cur...), k...)
			}
		case sql.Above:
			if k, ok := t.keyOf(ctx, col, c.Key); ok {
				lo = row.PrefixEnd(append(append([]byte(nil), cur...), k...))
			}
		case sql.AboveAll:
			lo = row.PrefixEnd(cur)
		}
		switch c := ce.UpperBound.(type) {
		case sql.Above:
			if k, ok := t.keyOf(ctx, col, c.Key); ok {
				hi = row.PrefixEnd(append(append([]byte(nil), cur...), k...))
			}
		case sql.Below:
			if k, ok := t.keyOf(ctx, col, c.Key); ok {
				hi = append(append([]byte(nil), cur...), k...)
			}
		case sql.AboveNull:
			hi = append(append([]byte(nil), cur...), 0x01)
		case sql.BelowNull:
			hi = cur
		}
		return lo, hi, false
	}
	return cur, row.PrefixEnd(cur), points == len(cols)
}

// pointKey recognises a column expression that is one value (or NULL).
func (t *Table) pointKey(ctx *sql.Context, col *row.Column, ce sql.MySQLRangeColumnExpr) (key []byte, isNull, ok bool) {
	if _, lok := ce.LowerBound.(sql.BelowNull); lok {
		if _, uok := ce.UpperBound.(sql.AboveNull); uok {
			return nil, true, true
		}
	}
	lb, lok := ce.LowerBound.(sql.Below)
	ub, uok := ce.UpperBound.(sql.Above)
	if !lok || !uok {
		return nil, false, false
	}
	k1, ok1 := t.keyOf(ctx, col, lb.Key)
	k2, ok2 := t.keyOf(ctx, col, ub.Key)
	if !ok1 || !ok2 || string(k1) != string(k2) {
		return nil, false, false
	}
	return k1, false, true
}

func (t *Table) keyOf(ctx *sql.Context, col *row.Column, v any) ([]byte, bool) {
	sv, err := toStorage(ctx, col, nil, v)
	if err != nil || sv == nil {
		return nil, false
	}
	k, err := row.AppendKey(nil, col, sv, t.e.coll)
	if err != nil {
		return nil, false
	}
	return k, true
}

// --- writes

// editor applies a statement's row changes to the session's transaction.
type editor struct{ t *Table }

var _ sql.TableEditor = editor{}

func (t *Table) Inserter(*sql.Context) sql.RowInserter { return editor{t} }
func (t *Table) Updater(*sql.Context) sql.RowUpdater   { return editor{t} }
func (t *Table) Deleter(*sql.Context) sql.RowDeleter   { return editor{t} }
func (t *Table) Replacer(*sql.Context) sql.RowReplacer { return editor{t} }

func (ed editor) StatementBegin(ctx *sql.Context) {
	if _, tx, err := ed.t.begin(ctx); err == nil {
		tx.StatementBegin()
	}
}

func (ed editor) DiscardChanges(ctx *sql.Context, _ error) error { return rollbackStatement(ctx) }

func (ed editor) StatementComplete(ctx *sql.Context) error { return completeStatement(ctx) }

// rollbackStatement undoes the statement's changes (every table editor's,
// temporary tables' too).
func rollbackStatement(ctx *sql.Context) error {
	if s := sessionOf(ctx); s != nil && s.tx != nil && !s.tx.Ended() {
		s.tx.StatementRollback()
	}
	return nil
}

// completeStatement ends the statement's changes, or rolls them back when
// strict mode made a warning the statement's error after its last row.
func completeStatement(ctx *sql.Context) error {
	s := sessionOf(ctx)
	if s == nil || s.tx == nil || s.tx.Ended() {
		return nil
	}
	if err := s.strictError(); err != nil {
		s.tx.StatementRollback()
		return err
	}
	s.tx.StatementComplete()
	return nil
}

func (ed editor) Close(*sql.Context) error { return nil }

func (ed editor) Insert(ctx *sql.Context, r sql.Row) error {
	s, tx, err := ed.t.beginWrite(ctx)
	if err != nil {
		return err
	}
	if err := s.checkWrite(ed.t.sch.Schema, ed.t.st.Def.Columns, nil, r); err != nil {
		return err
	}
	vals, err := ed.t.toStorageRow(ctx, r)
	if err != nil {
		return err
	}
	s.noteIO(ed.t.st, ioNoIndex, ioInsert, 1)
	s.noteTableUse(ed.t.st, true)
	if err := tx.Insert(ed.t.st, vals); err != nil {
		return ed.writeError(s, err, vals)
	}
	s.countRows(ed.t, 1)
	ed.t.e.autoinc.observe(ed.t, vals)
	return nil
}

func (ed editor) Update(ctx *sql.Context, old, new sql.Row) error {
	if ed.t.noRow(old) {
		return nil
	}
	s, tx, err := ed.t.beginWrite(ctx)
	if err != nil {
		return err
	}
	if err := s.checkWrite(ed.t.sch.Schema, ed.t.st.Def.Columns, old, new); err != nil {
		return err
	}
	ov, err := ed.t.toStorageRow(ctx, old)
	if err != nil {
		return err
	}
	nv, err := ed.t.toStorageRow(ctx, new)
	if err != nil {
		return err
	}
	s.noteIO(ed.t.st, ioNoIndex, ioUpdate, 1)
	s.noteTableUse(ed.t.st, true)
	if err := tx.Update(ed.t.st, ov, nv); err != nil {
		return ed.writeError(s, err, nv)
	}
	ed.t.e.autoinc.observe(ed.t, nv)
	return nil
}

func (ed editor) Delete(ctx *sql.Context, r sql.Row) error {
	if ed.t.noRow(r) {
		return nil
	}
	s, tx, err := ed.t.beginWrite(ctx)
	if err != nil {
		return err
	}
	if err := s.strictError(); err != nil {
		return err
	}
	vals, err := ed.t.toStorageRow(ctx, r)
	if err != nil {
		return err
	}
	s.noteIO(ed.t.st, ioNoIndex, ioDelete, 1)
	s.noteTableUse(ed.t.st, true)
	ok, err := tx.Delete(ed.t.st, vals)
	if err != nil {
		return ed.writeError(s, err, vals)
	}
	if !ok {
		return sql.ErrDeleteRowNotFound.New()
	}
	s.countRows(ed.t, 1)
	return nil
}

// noRow says r is no row of the table: a multi-table UPDATE or DELETE
// over an outer join hands each table's part of every joined row to its
// editor, the missing side's too, all NULL. MySQL changes nothing there;
// a stored row has no NULL in its primary key. (In a table without one a
// row of NULLs may be stored: go-mysql-server's part for the missing side
// is then taken for it.)
func (t *Table) noRow(r sql.Row) bool { return nullInKey(t.st.Def.PK, r) }

// nullInKey says r has a NULL in one of the key columns pk.
func nullInKey(pk []int, r sql.Row) bool {
	for _, i := range pk {
		if i < len(r) && r[i] == nil {
			return true
		}
	}
	return false
}

// writeError maps a duplicate key to GMS's unique key error (carrying the
// existing row, which REPLACE and ON DUPLICATE KEY UPDATE need).
func (ed editor) writeError(s *Session, err error, vals []row.Value) error {
	var dup *storage.DuplicateKeyError
	if errors.As(err, &dup) {
		var existing sql.Row
		if dup.Existing != nil {
			var scratch []row.Value
			existing, _ = ed.t.toSQLRow(dup.Existing, &scratch)
		}
		name := "PRIMARY"
		cols := ed.t.st.Def.PK
		if dup.Index >= 0 {
			name = ed.t.st.Def.Indexes[dup.Index].Name
			cols = ed.t.st.Def.Indexes[dup.Index].Columns
		}
		var parts []string
		for _, c := range cols {
			parts = append(parts, fmt.Sprint(fromStorage(&ed.t.st.Def.Columns[c], vals[c])))
		}
		msg := fmt.Sprintf("Duplicate entry '%s' for key '%s.%s'", strings.Join(parts, "-"), ed.t.Name(), name)
		return sql.NewUniqueKeyErr(msg, dup.Index < 0, existing)
	}
	if errors.Is(err, txn.ErrRowNotFound) {
		return sql.ErrDeleteRowNotFound.New()
	}
	return s.afterError(err)
}

// --- AUTO_INCREMENT

// autoincState holds each table's next AUTO_INCREMENT value in memory. It
// starts after the largest committed value (so, as in MySQL 5.7, values of
// deleted rows at the end may be reused after a restart); reservations are
// not transactional, so rolled-back inserts leave gaps, as in InnoDB.
type autoincState struct {
	mu      sync.Mutex
	next    map[uint64]uint64
	cluster bool // a cluster member's: other nodes insert too
}

func (a *autoincState) forget(id uint64) {
	a.mu.Lock()
	delete(a.next, id)
	a.mu.Unlock()
}

func autoincColumn(t *Table) int {
	for i, c := range t.sch.Schema {
		if c.AutoIncrement {
			return i
		}
	}
	return -1
}

// current returns the table's counter, computing it on first use. Called
// with mu held.
func (a *autoincState) current(t *Table) (uint64, error) {
	return a.counter(t, false)
}

// counter is current; fresh asks, on a cluster member, for a value no
// other member has committed yet (one is about to be generated).
func (a *autoincState) counter(t *Table, fresh bool) (uint64, error) {
	if v, ok := a.next[t.st.Def.ID]; ok {
		if !a.cluster || !fresh {
			return v, nil
		}
		// On a cluster member other nodes insert too: move past the
		// rows they committed when that costs one seek (the column leads
		// the primary key). Two nodes can still take the same value at
		// once; certification then refuses one of them (1213).
		if col := autoincColumn(t); col >= 0 && len(t.st.Def.PK) > 0 && t.st.Def.PK[0] == col {
			maxv, err := t.maxCommitted(col)
			if err != nil {
				return 0, err
			}
			if maxv >= v {
				v = maxv + 1
				a.next[t.st.Def.ID] = v
			}
		}
		return v, nil
	}
	col := autoincColumn(t)
	next := uint64(1)
	if col >= 0 {
		maxv, err := t.maxCommitted(col)
		if err != nil {
			return 0, err
		}
		next = maxv + 1
	}
	a.next[t.st.Def.ID] = next
	return next, nil
}

// maxCommitted scans for the largest value of a column (the last key when
// it leads the primary key).
func (t *Table) maxCommitted(col int) (uint64, error) {
	pfx := t.st.PrimaryPrefix()
	it, err := t.e.store.Latest().NewIter(pfx, row.PrefixEnd(pfx))
	if err != nil {
		return 0, err
	}
	defer it.Close()
	var best uint64
	leads := len(t.st.Def.PK) > 0 && t.st.Def.PK[0] == col
	var vals []row.Value
	for ok := it.Last(); ok; ok = it.Prev() {
		vals, err = t.st.Decode(it.Value(), vals)
		if err != nil {
			return 0, err
		}
		if v := asUint(vals[col]); v > best {
			best = v
		}
		if leads {
			break
		}
	}
	return best, it.Error()
}

func asUint(v row.Value) uint64 {
	switch x := v.(type) {
	case int64:
		if x > 0 {
			return uint64(x)
		}
	case uint64:
		return x
	case float32:
		if x > 0 {
			return uint64(x)
		}
	case float64:
		if x > 0 {
			return uint64(x)
		}
	}
	return 0
}

// observe moves the counter past an explicitly written value.
func (a *autoincState) observe(t *Table, vals []row.Value) {
	col := autoincColumn(t)
	if col < 0 {
		return
	}
	v := asUint(vals[col])
	a.mu.Lock()
	defer a.mu.Unlock()
	if cur, err := a.current(t); err == nil && v >= cur {
		a.next[t.st.Def.ID] = v + 1
	}
}

func (t *Table) PeekNextAutoIncrementValue(ctx *sql.Context) (uint64, error) {
	t.e.autoinc.mu.Lock()
	defer t.e.autoinc.mu.Unlock()
	return t.e.autoinc.current(t)
}

// GetNextAutoIncrementValue reserves a value when insertVal is nil and
// otherwise moves the counter past insertVal.
func (t *Table) GetNextAutoIncrementValue(ctx *sql.Context, insertVal any) (uint64, error) {
	a := &t.e.autoinc
	a.mu.Lock()
	defer a.mu.Unlock()
	cur, err := a.counter(t, insertVal == nil)
	if err != nil {
		return 0, err
	}
	if insertVal == nil {
		a.next[t.st.Def.ID] = cur + 1
		return cur, nil
	}
	v := asUint(toUint(insertVal))
	if v >= cur {
		a.next[t.st.Def.ID] = v + 1
	}
	return cur, nil
}

func toUint(v any) row.Value {
	switch x := v.(type) {
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int64:
		return x
	case int:
		return int64(x)
	case uint8:
		return uint64(x)
	case uint16:
		return uint64(x)
	case uint32:
		return uint64(x)
	case uint64:
		return x
	case float32:
		return x
	case float64:
		return x
	}
	return int64(0)
}

func (t *Table) AutoIncrementSetter(*sql.Context) sql.AutoIncrementSetter { return autoincSetter{t} }

type autoincSetter struct{ t *Table }

func (s autoincSetter) SetAutoIncrementValue(ctx *sql.Context, v uint64) error {
	a := &s.t.e.autoinc
	a.mu.Lock()
	defer a.mu.Unlock()
	cur, err := a.current(s.t)
	if err != nil {
		return err
	}
	a.next[s.t.st.Def.ID] = max(cur, v)
	return nil
}

func (s autoincSetter) AcquireAutoIncrementLock(*sql.Context) (func(), error) {
	return func() {}, nil
}

func (s autoincSetter) Close(*sql.Context) error { return nil }

// --- DDL on a table

// current is the table as the catalog has it now. GMS may run several
// DDL steps on one Table object (CREATE TABLE with several inline
// indexes calls CreateIndex once per index), so each step must start from
// the definition the previous one committed, not from t.st.
func (t *Table) current() *storage.Table {
	if st, ok := t.e.store.TableByID(t.st.Def.ID); ok {
		return st
	}
	return t.st
}

func (t *Table) CreateIndex(ctx *sql.Context, def sql.IndexDef) error {
	if def.IsPrimary() {
		return errNotSupported("changing the PRIMARY KEY")
	}
	if def.IsFullText() || def.IsVector() {
		return errNotSupported("FULLTEXT and VECTOR indexes")
	}
	if severalChanges(ctx) {
		return errSeveralChanges
	}
	if err := t.checkIndexParts(ctx); err != nil {
		return err
	}
	if def.IsSpatial() {
		return t.createSpatialIndex(ctx, def)
	}
	cur := t.current().Def
	if s := sessionOf(ctx); s != nil && len(def.Columns) == 1 {
		// A SPATIAL index CREATE TABLE ... LIKE made with the table,
		// which go-mysql-server asks for as a plain one.
		for i, c := range cur.Columns {
			if strings.EqualFold(c.Name, def.Columns[0].Name) && c.Type == row.TypeGeometry && s.claimSpatial(cur.ID, i) {
				t.st = t.current()
				return nil
			}
		}
	}
	cols, err := columnsOf(cur, def.Columns)
	if err == nil {
		if s := sessionOf(ctx); s != nil && s.claimIndex(cur.ID, cols, def.IsUnique()) {
			t.st = t.current() // made with the table (createindexes.go)
			return nil
		}
	}
	if indexNameTaken(cur, def.Name) {
		return sql.ErrDuplicateKey.New(def.Name)
	}
	if err != nil {
		return err
	}
	nd := cloneDef(cur)
	if nd.NextIndex == 0 {
		nd.NextIndex = 1
	}
	for _, ix := range nd.Indexes {
		nd.NextIndex = max(nd.NextIndex, ix.ID+1)
	}
	ix := storage.IndexDef{ID: nd.NextIndex, Name: def.Name, Columns: cols, Unique: def.IsUnique(), Comment: def.Comment}
	nd.NextIndex++
	nd.Indexes = append(nd.Indexes, ix)
	var names []string
	for _, c := range cols {
		names = append(names, quoteIdent(nd.Columns[c].Name))
	}
	kind := "INDEX"
	if ix.Unique {
		kind = "UNIQUE INDEX"
	}
	stmt := fmt.Sprintf("ALTER TABLE %s ADD %s %s (%s)", quoteIdent(nd.Name), kind, quoteIdent(ix.Name), strings.Join(names, ", "))
	if err := t.e.ddl(ctx, t.db.name, stmt, &storage.CatalogChange{Op: "add_index", TableID: nd.ID, Table: nd, Index: &nd.Indexes[len(nd.Indexes)-1]}, []uint64{nd.ID}); err != nil {
		return err
	}
	t.indexBuilt = true
	// The object lists the index from now on: CREATE TABLE goes on to
	// look for an index its foreign keys can use (reads of it return
	// nothing: see indexBuilt).
	t.st = t.current()
	return nil
}

func (t *Table) DropIndex(ctx *sql.Context, name string) error {
	if severalChanges(ctx) {
		return errSeveralChanges
	}
	if err := t.checkIndexParts(ctx); err != nil {
		return err
	}
	nd := cloneDef(t.current().Def)
	for i, ix := range nd.Indexes {
		if strings.EqualFold(ix.Name, name) {
			nd.Indexes = append(nd.Indexes[:i:i], nd.Indexes[i+1:]...)
			stmt := fmt.Sprintf("ALTER TABLE %s DROP INDEX %s", quoteIdent(nd.Name), quoteIdent(ix.Name))
			return t.e.ddl(ctx, t.db.name, stmt, &storage.CatalogChange{Op: "drop_index", TableID: nd.ID, Table: nd, IndexName: ix.Name}, []uint64{nd.ID})
		}
	}
	if ok, err := t.dropSpatialIndex(ctx, name); ok {
		return err
	}
	return sql.ErrIndexNotFound.New(name)
}

func (t *Table) RenameIndex(ctx *sql.Context, from, to string) error {
	return errNotSupported("RENAME INDEX")
}

// Truncate empties the table. GMS also calls it for a DELETE without WHERE;
// only a real TRUNCATE TABLE statement is a (non-transactional) DDL, a
// DELETE deletes row by row inside the transaction, logging every row.
func (t *Table) Truncate(ctx *sql.Context) (int, error) {
	s := sessionOf(ctx)
	if s == nil || !s.truncating {
		return t.deleteAll(ctx)
	}
	n, err := t.countRows(ctx)
	if err != nil {
		return 0, err
	}
	stmt := fmt.Sprintf("TRUNCATE TABLE %s", quoteIdent(t.Name()))
	if err := t.e.ddl(ctx, t.db.name, stmt, &storage.CatalogChange{Op: "truncate", TableID: t.st.Def.ID}, []uint64{t.st.Def.ID}); err != nil {
		return 0, err
	}
	t.e.autoinc.forget(t.st.Def.ID)
	return n, nil
}

func (t *Table) countRows(ctx *sql.Context) (int, error) {
	pfx := t.st.PrimaryPrefix()
	it, err := t.e.store.Latest().NewIter(pfx, row.PrefixEnd(pfx))
	if err != nil {
		return 0, err
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n, it.Error()
}

func (t *Table) deleteAll(ctx *sql.Context) (int, error) {
	s, tx, err := t.beginWrite(ctx)
	if err != nil {
		return 0, err
	}
	pfx := t.st.PrimaryPrefix()
	it, err := tx.LockingScan(pfx, row.PrefixEnd(pfx), lock.Exclusive)
	if err != nil {
		return 0, err
	}
	defer it.Close()
	n := 0
	var scratch []row.Value
	for it.Next() {
		vals, err := t.st.Decode(it.KV().Value, scratch)
		if err != nil {
			return n, err
		}
		scratch = vals
		s.noteIO(t.st, ioNoIndex, ioFetch, 1)
		s.noteIO(t.st, ioNoIndex, ioDelete, 1)
		s.noteTableUse(t.st, true)
		ok, err := tx.Delete(t.st, vals)
		if err != nil {
			return n, s.afterError(err)
		}
		if ok {
			n++
		}
	}
	return n, s.afterError(it.Err())
}

// sameRows reports whether two definitions of a table store the same rows
// the same way (they differ at most in SQL metadata).
func sameRows(a, b *storage.TableDef) bool {
	return a.ID == b.ID && reflect.DeepEqual(a.Columns, b.Columns) && slices.Equal(a.PK, b.PK) &&
		reflect.DeepEqual(a.Indexes, b.Indexes)
}

func cloneDef(d *storage.TableDef) *storage.TableDef {
	nd := *d
	nd.Columns = append([]row.Column(nil), d.Columns...)
	nd.PK = append([]int(nil), d.PK...)
	nd.Indexes = append([]storage.IndexDef(nil), d.Indexes...)
	return &nd
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
