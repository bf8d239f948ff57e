package sqlengine

// Temporary tables (CREATE TEMPORARY TABLE), as MySQL has them: seen only
// by the session that made them, hiding a table of the same name in the
// same database, dropped when the session ends, never written to the
// binlog (MySQL 8 logs nothing of them in row format), and transactional:
// a rolled-back statement, savepoint or transaction undoes their changes
// too.
//
// Their rows live in the session's memory, not in storage. Every change
// is made at once and registers its undo with the session's transaction
// (txn.OnUndo), which runs the undos in order with the rest of the
// transaction's rollback. The primary key and unique indexes are enforced
// with maps of collation-aware keys (row.AppendKey, as storage's keys);
// other indexes are kept as definitions only (for SHOW CREATE TABLE and
// SHOW INDEX): queries scan, in primary-key order when there is one.
//
// LOCK TABLES takes one and locks nothing for it: no other session can
// use it. RENAME TABLE renames it in the session. Not supported, each
// refused with 1235: other ALTER TABLE changes of a temporary table, and
// foreign keys on one.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/lockstepdb/lockstep/internal/row"
)

// tempKey names a temporary table in a session's map.
func tempKey(db, name string) string { return strings.ToLower(db) + "." + strings.ToLower(name) }

// tempTable is one temporary table of one session.
type tempTable struct {
	db, name string
	sch      sql.PrimaryKeySchema
	coll     sql.CollationID
	cols     []row.Column // the storage columns: keys and value checks
	indexes  []*tempIndex
	checks   []sql.CheckDefinition

	rows    map[int]sql.Row // by slot
	sizes   map[int]int     // by slot: the row's size as stored
	bytes   int             // the sum of sizes
	next    int             // the next slot
	pk      map[string]int  // primary key -> slot
	autoinc uint64          // the next AUTO_INCREMENT value
	epoch   int             // TRUNCATEs so far: older undos are void
}

// tempIndex is a secondary index's definition, with its entries when it
// is unique.
type tempIndex struct {
	t       *tempTable
	name    string
	cols    []int
	unique  bool
	comment string
	entries map[string]int // unique: key -> slot
}

var (
	_ sql.Table                 = (*tempTable)(nil)
	_ sql.TemporaryTable        = (*tempTable)(nil)
	_ sql.PrimaryKeyTable       = (*tempTable)(nil)
	_ sql.InsertableTable       = (*tempTable)(nil)
	_ sql.UpdatableTable        = (*tempTable)(nil)
	_ sql.DeletableTable        = (*tempTable)(nil)
	_ sql.ReplaceableTable      = (*tempTable)(nil)
	_ sql.TruncateableTable     = (*tempTable)(nil)
	_ sql.AutoIncrementTable    = (*tempTable)(nil)
	_ sql.IndexAlterableTable   = (*tempTable)(nil)
	_ sql.CheckAlterableTable   = (*tempTable)(nil)
	_ sql.CheckTable            = (*tempTable)(nil)
	_ sql.Index                 = (*tempIndex)(nil)
	_ sql.TemporaryTableCreator = (*Database)(nil)
)

// CreateTemporaryTable implements sql.TemporaryTableCreator.
func (d *Database) CreateTemporaryTable(ctx *sql.Context, name string, sch sql.PrimaryKeySchema, coll sql.CollationID) error {
	s := sessionOf(ctx)
	if s == nil {
		return fmt.Errorf("lockstep: not a Lockstep session")
	}
	if err := checkIdentifierLength(name); err != nil {
		return err
	}
	key := tempKey(d.name, name)
	if _, ok := s.temp[key]; ok {
		return sql.ErrTableAlreadyExists.New(name)
	}
	t := &tempTable{db: d.name, name: name, sch: sch, coll: coll, rows: map[int]sql.Row{}, sizes: map[int]int{}, pk: map[string]int{}, autoinc: 1}
	for _, c := range sch.Schema {
		rc, err := storageColumn(c)
		if err != nil {
			return err
		}
		applyDeclared(ctx, &rc, c.Name) // coldecl.go
		t.cols = append(t.cols, rc)
	}
	for _, i := range sch.PkOrdinals {
		switch t.cols[i].Type {
		case row.TypeJSON:
			return errJSONKey(t.cols[i].Name)
		case row.TypeBlob:
			return errNotSupported("indexes on BLOB/TEXT columns without a prefix")
		case row.TypeGeometry:
			return errGeometryKey(&t.cols[i]) // spatial.go
		}
	}
	if s.temp == nil {
		s.temp = map[string]*tempTable{}
	}
	s.temp[key] = t
	return nil
}

// tempTable returns the session's temporary table db.name, if it has one.
func (s *Session) tempTable(db, name string) (*tempTable, bool) {
	if len(s.temp) == 0 {
		return nil, false
	}
	t, ok := s.temp[tempKey(db, name)]
	return t, ok
}

// GetAllTemporaryTables implements sql.TemporaryTableDatabase.
func (d *Database) GetAllTemporaryTables(ctx *sql.Context) ([]sql.Table, error) {
	s := sessionOf(ctx)
	if s == nil {
		return nil, nil
	}
	var out []sql.Table
	for _, t := range s.temp {
		if strings.EqualFold(t.db, d.name) {
			out = append(out, t)
		}
	}
	return out, nil
}

func (t *tempTable) Name() string                                       { return t.name }
func (t *tempTable) String() string                                     { return t.name }
func (t *tempTable) Schema(*sql.Context) sql.Schema                     { return t.sch.Schema }
func (t *tempTable) PrimaryKeySchema(*sql.Context) sql.PrimaryKeySchema { return t.sch }
func (t *tempTable) Collation() sql.CollationID                         { return t.coll }
func (t *tempTable) IsTemporary() bool                                  { return true }
func (t *tempTable) Comment() string                                    { return "" }

// Partitions implements sql.Table: one partition, every row.
func (t *tempTable) Partitions(*sql.Context) (sql.PartitionIter, error) {
	return sql.PartitionsToPartitionIter(tempPartition{}), nil
}

type tempPartition struct{}

func (tempPartition) Key() []byte { return nil }

// PartitionRows implements sql.Table: the rows as they are now, in
// primary-key order (insertion order without one).
func (t *tempTable) PartitionRows(ctx *sql.Context, _ sql.Partition) (sql.RowIter, error) {
	return t.orderedRows(ctx, nil)
}

// orderedRows are copies of the rows keep takes (every row if keep is
// nil), in PartitionRows' order.
func (t *tempTable) orderedRows(ctx *sql.Context, keep func(sql.Row) (bool, error)) (sql.RowIter, error) {
	slots := make([]int, 0, len(t.rows))
	keys := make(map[int]string, len(t.rows))
	for slot, r := range t.rows {
		if keep != nil {
			ok, err := keep(r)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
		slots = append(slots, slot)
		if len(t.sch.PkOrdinals) > 0 {
			k, err := t.key(ctx, t.sch.PkOrdinals, r)
			if err != nil {
				return nil, err
			}
			keys[slot] = k
		}
	}
	slices.SortFunc(slots, func(a, b int) int {
		if c := strings.Compare(keys[a], keys[b]); c != 0 {
			return c
		}
		return a - b
	})
	rows := make([]sql.Row, len(slots))
	for i, slot := range slots {
		rows[i] = t.rows[slot].Copy()
	}
	return sql.RowsToRowIter(rows...), nil
}

// key is the collation-aware key of r's columns cols ("" never collides:
// a key holds at least a marker byte per column).
func (t *tempTable) key(ctx *sql.Context, cols []int, r sql.Row) (string, error) {
	var k []byte
	for _, c := range cols {
		v, err := toStorage(ctx, &t.cols[c], t.sch.Schema[c].Type, r[c])
		if err != nil {
			return "", err
		}
		if k, err = row.AppendKey(k, &t.cols[c], v, Collator{}); err != nil {
			return "", err
		}
	}
	return string(k), nil
}

// hasNull reports whether any of r's columns cols is NULL (a unique
// index holds any number of such rows).
func hasNull(r sql.Row, cols []int) bool {
	for _, c := range cols {
		if r[c] == nil {
			return true
		}
	}
	return false
}

// undo registers fn with the session's transaction; it does nothing once
// the table was truncated (TRUNCATE is not undone).
func (t *tempTable) undo(ctx *sql.Context, fn func()) {
	if s := sessionOf(ctx); s != nil {
		epoch := t.epoch
		s.txn(ctx).OnUndo(func() {
			if t.epoch == epoch {
				fn()
			}
		})
	}
}

// duplicate is the error for r's duplicate entry in index name (PRIMARY
// for the primary key), with the row already there.
func (t *tempTable) duplicate(r, existing sql.Row, name string, cols []int) error {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = fmt.Sprint(r[c])
	}
	msg := fmt.Sprintf("Duplicate entry '%s' for key '%s.%s'", strings.Join(parts, "-"), t.name, name)
	return sql.NewUniqueKeyErr(msg, name == "PRIMARY", existing.Copy())
}

// place checks r against the unique keys (except slot's own entries) and
// returns its keys, or the duplicate error.
func (t *tempTable) place(ctx *sql.Context, r sql.Row, slot int) (pk string, uniq []string, err error) {
	if len(t.sch.PkOrdinals) > 0 {
		if pk, err = t.key(ctx, t.sch.PkOrdinals, r); err != nil {
			return "", nil, err
		}
		if other, ok := t.pk[pk]; ok && other != slot {
			return "", nil, t.duplicate(r, t.rows[other], "PRIMARY", t.sch.PkOrdinals)
		}
	}
	uniq = make([]string, len(t.indexes))
	for i, ix := range t.indexes {
		if !ix.unique || hasNull(r, ix.cols) {
			continue
		}
		if uniq[i], err = t.key(ctx, ix.cols, r); err != nil {
			return "", nil, err
		}
		if other, ok := ix.entries[uniq[i]]; ok && other != slot {
			return "", nil, t.duplicate(r, t.rows[other], ix.name, ix.cols)
		}
	}
	return pk, uniq, nil
}

// put stores r (of size bytes) in slot under its keys; remove takes
// slot's row out.
func (t *tempTable) put(slot int, r sql.Row, size int, pk string, uniq []string) {
	t.rows[slot] = r
	t.sizes[slot] = size
	t.bytes += size
	if len(t.sch.PkOrdinals) > 0 {
		t.pk[pk] = slot
	}
	for i, ix := range t.indexes {
		if uniq[i] != "" {
			ix.entries[uniq[i]] = slot
		}
	}
}

func (t *tempTable) remove(ctx *sql.Context, slot int) {
	r, ok := t.rows[slot]
	if !ok {
		return
	}
	delete(t.rows, slot)
	t.bytes -= t.sizes[slot]
	delete(t.sizes, slot)
	if len(t.sch.PkOrdinals) > 0 {
		if k, err := t.key(ctx, t.sch.PkOrdinals, r); err == nil && t.pk[k] == slot {
			delete(t.pk, k)
		}
	}
	for _, ix := range t.indexes {
		if !ix.unique || hasNull(r, ix.cols) {
			continue
		}
		if k, err := t.key(ctx, ix.cols, r); err == nil && ix.entries[k] == slot {
			delete(ix.entries, k)
		}
	}
}

// find is the slot of the row equal to r (by primary key, else by every
// column).
func (t *tempTable) find(ctx *sql.Context, r sql.Row) (int, bool, error) {
	if len(t.sch.PkOrdinals) > 0 {
		k, err := t.key(ctx, t.sch.PkOrdinals, r)
		if err != nil {
			return 0, false, err
		}
		slot, ok := t.pk[k]
		return slot, ok, nil
	}
	all := make([]int, len(t.cols))
	for i := range all {
		all[i] = i
	}
	want, err := t.key(ctx, all, r)
	if err != nil {
		return 0, false, err
	}
	slots := make([]int, 0, len(t.rows))
	for slot := range t.rows {
		slots = append(slots, slot)
	}
	slices.Sort(slots) // the first of equal rows, as a scan meets them
	for _, slot := range slots {
		if k, err := t.key(ctx, all, t.rows[slot]); err == nil && k == want {
			return slot, true, nil
		}
	}
	return 0, false, nil
}

// maxTempBytes bounds the rows a session keeps in its temporary tables
// (their size as stored): past it a write fails with 1114, as a MEMORY
// table past max_heap_table_size does, rather than the server running
// out of memory.
const maxTempBytes = 256 << 20

// check validates r's values against the columns (types, lengths, NOT
// NULL) as a row stored in Lockstep would be, and returns its size; the
// session's temporary tables may grow by that less replaced bytes.
func (t *tempTable) check(ctx *sql.Context, r sql.Row, replaced int) (int, error) {
	size, err := t.rowSize(ctx, r)
	if err != nil {
		return 0, err
	}
	total := 0
	if s := sessionOf(ctx); s != nil {
		for _, o := range s.temp {
			total += o.bytes
		}
	}
	if total-replaced+size > maxTempBytes {
		return 0, mysql.NewSQLError(1114, "HY000", "The table '%s' is full", t.name) // ER_RECORD_FILE_FULL
	}
	return size, nil
}

func (t *tempTable) rowSize(ctx *sql.Context, r sql.Row) (int, error) {
	if len(r) != len(t.cols) {
		return 0, fmt.Errorf("row has %d values, table %s has %d columns", len(r), t.name, len(t.cols))
	}
	vals := make([]row.Value, len(r))
	for i, v := range r {
		sv, err := toStorage(ctx, &t.cols[i], t.sch.Schema[i].Type, v)
		if err != nil {
			return 0, err
		}
		vals[i] = sv
	}
	img, err := row.AppendImage(nil, t.cols, vals)
	return len(img), err
}

func (t *tempTable) Inserter(*sql.Context) sql.RowInserter { return tempEditor{t} }
func (t *tempTable) Updater(*sql.Context) sql.RowUpdater   { return tempEditor{t} }
func (t *tempTable) Deleter(*sql.Context) sql.RowDeleter   { return tempEditor{t} }
func (t *tempTable) Replacer(*sql.Context) sql.RowReplacer { return tempEditor{t} }

// tempEditor changes a temporary table's rows. Statements begin, end and
// roll back with the session's transaction (the permanent tables'
// editor), which runs the undos registered here.
type tempEditor struct{ t *tempTable }

var _ sql.TableEditor = tempEditor{}

func (ed tempEditor) StatementBegin(ctx *sql.Context) {
	if s := sessionOf(ctx); s != nil {
		s.txn(ctx).StatementBegin()
	}
}

func (ed tempEditor) DiscardChanges(ctx *sql.Context, _ error) error { return rollbackStatement(ctx) }

func (ed tempEditor) StatementComplete(ctx *sql.Context) error { return completeStatement(ctx) }

func (ed tempEditor) Close(*sql.Context) error { return nil }

func (ed tempEditor) Insert(ctx *sql.Context, r sql.Row) error {
	t := ed.t
	if s := sessionOf(ctx); s != nil {
		if err := s.checkWrite(t.sch.Schema, t.cols, nil, r); err != nil { // strictmode.go
			return err
		}
	}
	size, err := t.check(ctx, r, 0)
	if err != nil {
		return err
	}
	r = t.rounded(r.Copy())
	pk, uniq, err := t.place(ctx, r, -1)
	if err != nil {
		return err
	}
	slot := t.next
	t.next++
	t.put(slot, r, size, pk, uniq)
	t.observeAutoinc(ctx, r)
	t.undo(ctx, func() { t.remove(ctx, slot) })
	return nil
}

// rounded is r with its TIME values rounded to their columns' fractional
// digits, and its FLOAT(M,D) and DOUBLE(M,D) values to D decimals, as a
// stored table's (toStorage).
func (t *tempTable) rounded(r sql.Row) sql.Row {
	for i := range t.cols {
		c := &t.cols[i]
		if i >= len(r) {
			break
		}
		switch {
		case c.Type == row.TypeTime2 && c.Fsp < 6:
			r[i] = roundTimespan(r[i], c.Fsp)
		case isFloatColumn(*c) && c.Precision > 0:
			switch x := r[i].(type) {
			case float32:
				v, _ := roundFloat(c, float64(x))
				r[i] = float32(v)
			case float64:
				r[i], _ = roundFloat(c, x)
			}
		}
	}
	return r
}

// noRow says r is no row of the table: the missing side of an outer
// join (see Table.noRow).
func (t *tempTable) noRow(r sql.Row) bool { return nullInKey(t.sch.PkOrdinals, r) }

func (ed tempEditor) Update(ctx *sql.Context, old, new sql.Row) error {
	t := ed.t
	if t.noRow(old) {
		return nil
	}
	slot, ok, err := t.find(ctx, old)
	if err != nil {
		return err
	}
	if !ok {
		return sql.ErrDeleteRowNotFound.New()
	}
	if s := sessionOf(ctx); s != nil {
		if err := s.checkWrite(t.sch.Schema, t.cols, old, new); err != nil {
			return err
		}
	}
	prevSize := t.sizes[slot]
	size, err := t.check(ctx, new, prevSize)
	if err != nil {
		return err
	}
	new = t.rounded(new.Copy())
	pk, uniq, err := t.place(ctx, new, slot)
	if err != nil {
		return err
	}
	prev := t.rows[slot]
	t.remove(ctx, slot)
	t.put(slot, new, size, pk, uniq)
	t.observeAutoinc(ctx, new)
	t.undo(ctx, func() {
		t.remove(ctx, slot)
		// Restoring the row it replaced cannot collide: every change
		// after this one has been undone already.
		pk, uniq, _ := t.place(ctx, prev, slot)
		t.put(slot, prev, prevSize, pk, uniq)
	})
	return nil
}

func (ed tempEditor) Delete(ctx *sql.Context, r sql.Row) error {
	t := ed.t
	if t.noRow(r) {
		return nil
	}
	slot, ok, err := t.find(ctx, r)
	if err != nil {
		return err
	}
	if !ok {
		return sql.ErrDeleteRowNotFound.New()
	}
	prev, prevSize := t.rows[slot], t.sizes[slot]
	t.remove(ctx, slot)
	t.undo(ctx, func() {
		pk, uniq, _ := t.place(ctx, prev, slot)
		t.put(slot, prev, prevSize, pk, uniq)
	})
	return nil
}

// Truncate implements sql.TruncateableTable: every row goes, at once and
// for good (TRUNCATE commits in MySQL; a temporary table's is not undone).
func (t *tempTable) Truncate(*sql.Context) (int, error) {
	n := len(t.rows)
	t.rows, t.sizes, t.bytes, t.pk = map[int]sql.Row{}, map[int]int{}, 0, map[string]int{}
	for _, ix := range t.indexes {
		if ix.unique {
			ix.entries = map[string]int{}
		}
	}
	t.autoinc = 1
	t.epoch++
	return n, nil
}

// AUTO_INCREMENT: the next value, not transactional (as InnoDB's).

func (t *tempTable) autoincColumn() int {
	for i, c := range t.sch.Schema {
		if c.AutoIncrement {
			return i
		}
	}
	return -1
}

func (t *tempTable) observeAutoinc(ctx *sql.Context, r sql.Row) {
	c := t.autoincColumn()
	if c < 0 || r[c] == nil {
		return
	}
	v, _, err := types.Uint64.Convert(ctx, r[c])
	if err != nil {
		return
	}
	if n, ok := v.(uint64); ok && n >= t.autoinc {
		t.autoinc = n + 1
	}
}

func (t *tempTable) PeekNextAutoIncrementValue(*sql.Context) (uint64, error) { return t.autoinc, nil }

func (t *tempTable) GetNextAutoIncrementValue(ctx *sql.Context, insertVal any) (uint64, error) {
	if insertVal != nil {
		v, _, err := types.Uint64.Convert(ctx, insertVal)
		if err == nil {
			if n, ok := v.(uint64); ok && n > 0 {
				return n, nil
			}
		}
	}
	return t.autoinc, nil
}

func (t *tempTable) AutoIncrementSetter(*sql.Context) sql.AutoIncrementSetter {
	return tempAutoincSetter{t}
}

type tempAutoincSetter struct{ t *tempTable }

func (s tempAutoincSetter) SetAutoIncrementValue(_ *sql.Context, v uint64) error {
	s.t.autoinc = v
	return nil
}

func (s tempAutoincSetter) AcquireAutoIncrementLock(*sql.Context) (func(), error) {
	return func() {}, nil
}

func (s tempAutoincSetter) Close(*sql.Context) error { return nil }

// Indexes.

func (t *tempTable) GetIndexes(*sql.Context) ([]sql.Index, error) {
	var out []sql.Index
	if len(t.sch.PkOrdinals) > 0 {
		out = append(out, &tempIndex{t: t, name: "PRIMARY", cols: t.sch.PkOrdinals, unique: true})
	}
	for _, ix := range t.indexes {
		out = append(out, ix)
	}
	return out, nil
}

// IndexedAccess implements sql.IndexAddressable: a lookup reads the rows
// its ranges hold. go-mysql-server plans joins on a table's indexes
// (a lookup join into a temporary table's primary key); with no lookup
// they failed ("indexable table does not support given lookup").
func (t *tempTable) IndexedAccess(*sql.Context, sql.IndexLookup) sql.IndexedTable {
	return tempIndexed{t}
}

// tempIndexed is a temporary table read through an index: its rows in
// the lookup's ranges, found by reading them all (a temporary table is
// in memory, and its session's alone).
type tempIndexed struct{ *tempTable }

type tempLookup struct{ lookup sql.IndexLookup }

func (tempLookup) Key() []byte { return nil }

// LookupPartitions implements sql.IndexedTable.
func (t tempIndexed) LookupPartitions(_ *sql.Context, lookup sql.IndexLookup) (sql.PartitionIter, error) {
	return sql.PartitionsToPartitionIter(tempLookup{lookup}), nil
}

// PartitionRows reads a lookup's rows, or every row.
func (t tempIndexed) PartitionRows(ctx *sql.Context, p sql.Partition) (sql.RowIter, error) {
	lp, ok := p.(tempLookup)
	if !ok {
		return t.tempTable.PartitionRows(ctx, p)
	}
	ix, ok := lp.lookup.Index.(*tempIndex)
	ranges, isMySQL := lp.lookup.Ranges.(sql.MySQLRangeCollection)
	if !ok || !isMySQL {
		return nil, fmt.Errorf("temporary table %s: a lookup of %T over %T", t.name, lp.lookup.Index, lp.lookup.Ranges)
	}
	cols := make([]sql.Expression, len(ix.cols))
	for n, c := range ix.cols {
		col := t.sch.Schema[c]
		cols[n] = expression.NewGetField(c, col.Type, col.Name, col.Nullable)
	}
	filter, err := expression.NewRangeFilterExpr(ctx, cols, ranges)
	if err != nil {
		return nil, err
	}
	if filter == nil {
		return t.orderedRows(ctx, nil)
	}
	return t.orderedRows(ctx, func(r sql.Row) (bool, error) {
		in, err := sql.EvaluateCondition(ctx, filter, r)
		return sql.IsTrue(in), err
	})
}

// PreciseMatch implements sql.IndexAddressable.
func (t *tempTable) PreciseMatch() bool { return false }

func (t *tempTable) CreateIndex(ctx *sql.Context, def sql.IndexDef) error {
	if def.IsPrimary() {
		return errNotSupported("adding a primary key to a temporary table")
	}
	if def.IsSpatial() || def.IsFullText() || def.IsVector() {
		return errNotSupported("SPATIAL, FULLTEXT and VECTOR indexes on temporary tables")
	}
	ix := &tempIndex{t: t, name: def.Name, unique: def.IsUnique(), comment: def.Comment}
	for _, c := range def.Columns {
		if c.Length > 0 {
			return errNotSupported("index prefix lengths")
		}
		pos := t.sch.Schema.IndexOfColName(c.Name)
		if pos < 0 {
			return sql.ErrKeyColumnDoesNotExist.New(c.Name)
		}
		switch t.cols[pos].Type {
		case row.TypeJSON:
			return errJSONKey(t.cols[pos].Name)
		case row.TypeBlob:
			return errNotSupported("indexes on BLOB/TEXT columns without a prefix")
		case row.TypeGeometry:
			return errGeometryKey(&t.cols[pos]) // spatial.go
		}
		ix.cols = append(ix.cols, pos)
	}
	if ix.name == "" {
		ix.name = t.sch.Schema[ix.cols[0]].Name
	}
	for _, o := range t.indexes {
		if strings.EqualFold(o.name, ix.name) {
			return sql.ErrDuplicateKey.New(ix.name)
		}
	}
	if ix.unique {
		ix.entries = map[string]int{}
		for slot, r := range t.rows {
			if hasNull(r, ix.cols) {
				continue
			}
			k, err := t.key(ctx, ix.cols, r)
			if err != nil {
				return err
			}
			if other, ok := ix.entries[k]; ok {
				return t.duplicate(r, t.rows[other], ix.name, ix.cols)
			}
			ix.entries[k] = slot
		}
	}
	t.indexes = append(t.indexes, ix)
	return nil
}

func (t *tempTable) DropIndex(_ *sql.Context, name string) error {
	for i, ix := range t.indexes {
		if strings.EqualFold(ix.name, name) {
			t.indexes = slices.Delete(t.indexes, i, i+1)
			return nil
		}
	}
	return sql.ErrIndexNotFound.New(name)
}

func (t *tempTable) RenameIndex(_ *sql.Context, from, to string) error {
	for _, ix := range t.indexes {
		if strings.EqualFold(ix.name, from) {
			ix.name = to
			return nil
		}
	}
	return sql.ErrIndexNotFound.New(from)
}

func (i *tempIndex) ID() string                            { return i.name }
func (i *tempIndex) Database() string                      { return i.t.db }
func (i *tempIndex) Table() string                         { return i.t.name }
func (i *tempIndex) IsUnique() bool                        { return i.unique }
func (i *tempIndex) IsSpatial() bool                       { return false }
func (i *tempIndex) IsFullText() bool                      { return false }
func (i *tempIndex) IsVector() bool                        { return false }
func (i *tempIndex) Comment() string                       { return i.comment }
func (i *tempIndex) IndexType() string                     { return "BTREE" }
func (i *tempIndex) IsGenerated() bool                     { return false }
func (i *tempIndex) PrefixLengths() []uint16               { return nil }
func (i *tempIndex) CanSupportOrderBy(sql.Expression) bool { return false }

// CanSupport implements sql.Index: MySQL's ranges (tempIndexed reads
// them).
func (i *tempIndex) CanSupport(_ *sql.Context, rs ...sql.Range) bool {
	for _, r := range rs {
		if _, ok := r.(sql.MySQLRange); !ok {
			return false
		}
	}
	return true
}

func (i *tempIndex) Expressions() []string {
	out := make([]string, len(i.cols))
	for n, c := range i.cols {
		out[n] = i.t.name + "." + i.t.sch.Schema[c].Name
	}
	return out
}

func (i *tempIndex) ColumnExpressionTypes(*sql.Context) []sql.ColumnExpressionType {
	out := make([]sql.ColumnExpressionType, len(i.cols))
	for n, c := range i.cols {
		out[n] = sql.ColumnExpressionType{Expression: i.t.name + "." + i.t.sch.Schema[c].Name, Type: i.t.sch.Schema[c].Type}
	}
	return out
}

// CHECK constraints: kept and enforced by go-mysql-server.

func (t *tempTable) GetChecks(*sql.Context) ([]sql.CheckDefinition, error) {
	return slices.Clone(t.checks), nil
}

func (t *tempTable) CreateCheck(_ *sql.Context, def *sql.CheckDefinition) error {
	c := *def
	if c.Name == "" {
		c.Name = fmt.Sprintf("%s_chk_%d", t.name, len(t.checks)+1) // MySQL's name
	}
	t.checks = append(t.checks, c)
	return nil
}

func (t *tempTable) DropCheck(_ *sql.Context, name string) error {
	for i, c := range t.checks {
		if strings.EqualFold(c.Name, name) {
			t.checks = slices.Delete(t.checks, i, i+1)
			return nil
		}
	}
	return sql.ErrUnknownConstraint.New(name)
}
