package sqlengine

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/lockstepdb/lockstep/internal/row"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// Column changes: ALTER TABLE ... ADD, DROP, MODIFY, CHANGE and RENAME
// COLUMN.
//
// The binlog is the only log, so a column change must be one logged
// transaction that replay redoes exactly, and that a MySQL replica can run
// from its statement text. It is a storage.CatalogChange "rewrite_table":
// the new definition, the old column each new column is taken from, and one
// fill value per added column. Storage rewrites every row from those alone
// (storage.rewriteRows), inside the DDL's exclusive commit, and rebuilds the
// indexes.
//
// GMS decides what the new rows are: through sql.RewritableTable it reads
// every row and hands the new one (defaults evaluated, types converted,
// NOT NULL checked, with MySQL's errors) to the inserter below. The inserter
// writes nothing; it checks that each row GMS made is the one storage will
// make (the old stored values, and the same fill value in every row), and
// on Close commits the change. A change storage cannot reproduce, because
// it alters stored values (a type conversion that is not a widening, a
// DEFAULT that differs from row to row), is refused with 1235 before
// anything is written. The primary key must keep its columns and values.
var _ sql.RewritableTable = (*Table)(nil)

// ShouldRewriteTable: every column change goes through RewriteInserter, so
// GMS never falls back to AddColumn plus an UPDATE of every row (which
// would log the rows as a second transaction). Other changes GMS asks
// about (CREATE INDEX, primary key changes: no column given) keep their
// own paths.
func (t *Table) ShouldRewriteTable(_ *sql.Context, _, _ sql.PrimaryKeySchema, oldCol, newCol *sql.Column) bool {
	return oldCol != nil || newCol != nil
}

// AddColumn, DropColumn and ModifyColumn are reached only if GMS skips the
// rewrite, which ShouldRewriteTable prevents.
func (t *Table) AddColumn(*sql.Context, *sql.Column, *sql.ColumnOrder) error {
	return errNotSupported("ALTER TABLE ... ADD COLUMN without a table rewrite")
}

func (t *Table) DropColumn(*sql.Context, string) error {
	return errNotSupported("ALTER TABLE ... DROP COLUMN without a table rewrite")
}

// ModifyColumn is what GMS calls, without a rewrite, for RENAME COLUMN and
// ALTER COLUMN ... SET/DROP DEFAULT: changes of name and metadata, which
// leave every stored value as it is. They commit as a rewrite_table change
// all the same (one code path for replay).
func (t *Table) ModifyColumn(ctx *sql.Context, name string, col *sql.Column, order *sql.ColumnOrder) error {
	i := t.sch.Schema.IndexOfColName(name)
	if i < 0 {
		return sql.ErrTableColumnNotFound.New(t.Name(), name)
	}
	if order != nil {
		return errNotSupported("moving a column without a table rewrite")
	}
	if severalChanges(ctx) {
		return errSeveralChanges
	}
	oldCol := t.sch.Schema[i]
	nc := *col
	sch := append(sql.Schema(nil), t.sch.Schema...)
	sch[i] = &nc
	a, err := storageColumn(oldCol)
	if err != nil {
		return err
	}
	a.Fsp, a.Precision, a.Scale = t.st.Def.Columns[i].Fsp, t.st.Def.Columns[i].Precision, t.st.Def.Columns[i].Scale
	b, err := storageColumn(&nc)
	if err != nil {
		return err
	}
	// What the statement declares of the column, else the column's own
	// (coldecl.go).
	applyDeclared(ctx, &b, nc.Name)
	keepDeclared(ctx, &b, a)
	a.Name, b.Name = "", ""
	if !reflect.DeepEqual(a, b) {
		return errNotSupported(fmt.Sprintf("changing the type of column `%s` without a table rewrite", name))
	}
	ins, err := t.RewriteInserter(ctx, t.sch, sql.NewPrimaryKeySchema(sch, t.sch.PkOrdinals...), oldCol, &nc, nil)
	if err != nil {
		return err
	}
	if w, ok := ins.(*rewriter); ok {
		w.sameImages = true // checked above: no stored value changes
	}
	return ins.Close(ctx)
}

// errSeveralChanges refuses an ALTER TABLE that combines a column change
// with other changes. GMS runs each part as its own step, and each commits
// on its own, so a failing later part would leave the earlier ones done.
var errSeveralChanges = errNotSupported("a column change combined with other changes in one ALTER TABLE statement; run each as its own statement")

// checkIndexParts vets every part of a multi-part ALTER TABLE made only of
// index additions and drops before its first part commits. GMS runs the
// parts one by one and each commits on its own, so a part failing on the
// data (a UNIQUE index over duplicates) or on a name (one already taken,
// one not there) left the earlier parts applied, where MySQL applies none.
// The check runs once per statement (the later parts see the table the
// earlier ones changed). A concurrent write between the check and a later
// part can still make that part fail.
func (t *Table) checkIndexParts(ctx *sql.Context) error {
	s := sessionOf(ctx)
	if s == nil || s.indexPartsChecked {
		return nil
	}
	q := ctx.Query()
	if q := strings.TrimSpace(q); len(q) < 5 || !strings.EqualFold(q[:5], "alter") {
		return nil
	}
	stmt, err := sqlparser.Parse(q)
	if err != nil {
		return nil
	}
	at, ok := stmt.(*sqlparser.AlterTable)
	if !ok || len(at.Statements) < 2 {
		return nil
	}
	for _, d := range at.Statements {
		if d.IndexSpec == nil || (d.IndexSpec.Action != "create" && d.IndexSpec.Action != "drop") {
			return nil // other kinds of parts: handled (or refused) elsewhere
		}
	}
	s.indexPartsChecked = true
	cur := t.current()
	nd := cloneDef(cur.Def)
	names := map[string]bool{"primary": true}
	for _, ix := range nd.Indexes {
		names[strings.ToLower(ix.Name)] = true
	}
	for _, d := range at.Statements {
		spec := d.IndexSpec
		name := spec.ToName.String()
		if spec.Action == "drop" {
			if !names[strings.ToLower(name)] && !d.IfExists {
				return mysql.NewSQLError(mysql.ERCantDropFieldOrKey, "42000", "Can't DROP '%s'; check that column/key exists", name)
			}
			delete(names, strings.ToLower(name))
			continue
		}
		if name != "" {
			if names[strings.ToLower(name)] && !d.IfNotExists {
				return mysql.NewSQLError(mysql.ERDupKeyName, "42000", "Duplicate key name '%s'", name)
			}
			names[strings.ToLower(name)] = true
		}
		if !strings.EqualFold(spec.Type, "unique") {
			continue
		}
		var ics []sql.IndexColumn
		for _, c := range spec.Columns {
			ics = append(ics, sql.IndexColumn{Name: c.Column.String()})
		}
		cols, err := columnsOf(nd, ics)
		if err != nil {
			return nil // GMS reports it
		}
		ix := storage.IndexDef{ID: math.MaxUint32, Name: name, Columns: cols, Unique: true}
		check := cloneDef(nd)
		check.Indexes = append(check.Indexes, ix)
		if err := t.e.store.CheckIndex(cur, check, &check.Indexes[len(check.Indexes)-1]); err != nil {
			var dup *storage.DuplicateKeyError
			if errors.As(err, &dup) {
				return sql.NewUniqueKeyErr(fmt.Sprintf("Duplicate entry for key '%s'", name), false, nil)
			}
			return err
		}
	}
	return nil
}

// severalChanges reports whether the statement being run is an ALTER TABLE
// with more than one part, one of them a column change. Every step of such
// a statement checks it before it commits anything, so the first step
// refuses the whole statement.
func severalChanges(ctx *sql.Context) bool {
	q := ctx.Query()
	if t := strings.TrimSpace(q); len(t) < 5 || !strings.EqualFold(t[:5], "alter") {
		return false
	}
	stmt, err := sqlparser.Parse(q)
	if err != nil {
		return false
	}
	at, ok := stmt.(*sqlparser.AlterTable)
	if !ok || len(at.Statements) < 2 {
		return false
	}
	for _, d := range at.Statements {
		if d.ColumnAction != "" {
			return true
		}
	}
	return false
}

func (t *Table) RewriteInserter(ctx *sql.Context, oldSch, newSch sql.PrimaryKeySchema, oldCol, newCol *sql.Column, _ []sql.IndexColumn) (sql.RowInserter, error) {
	if oldCol == nil && newCol == nil {
		// CREATE UNIQUE INDEX: GMS streams every row here after
		// CreateIndex, which has already built and checked the index.
		return discardRows{}, nil
	}
	if severalChanges(ctx) {
		return nil, errSeveralChanges
	}
	if newCol != nil && oldCol == nil && newCol.AutoIncrement {
		return nil, errNotSupported("ALTER TABLE ... ADD COLUMN ... AUTO_INCREMENT")
	}
	if oldCol != nil && newCol != nil && oldCol.AutoIncrement != newCol.AutoIncrement {
		return nil, errNotSupported("adding or removing AUTO_INCREMENT with ALTER TABLE")
	}
	cur := t.current()
	old := cur.Def
	// Where each new column comes from.
	sources := make([]int, len(newSch.Schema))
	for i, c := range newSch.Schema {
		name := c.Name
		if newCol != nil && oldCol != nil && strings.EqualFold(c.Name, newCol.Name) {
			name = oldCol.Name
		}
		sources[i] = -1
		if oldCol == nil && newCol != nil && strings.EqualFold(c.Name, newCol.Name) {
			continue // the added column
		}
		for j := range old.Columns {
			if strings.EqualFold(old.Columns[j].Name, name) {
				sources[i] = j
			}
		}
		if sources[i] < 0 {
			return nil, fmt.Errorf("column %s of the new schema has no source", c.Name)
		}
	}
	if err := keepsGenerated(old, newSch.Schema, sources); err != nil {
		return nil, err
	}
	newAt := make([]int, len(old.Columns)) // old column -> new position, -1 if dropped
	for j := range newAt {
		newAt[j] = -1
	}
	for i, s := range sources {
		if s >= 0 {
			newAt[s] = i
		}
	}
	// The primary key keeps its columns, in order.
	if len(newSch.PkOrdinals) != len(old.PK) {
		return nil, errNotSupported("changing the PRIMARY KEY")
	}
	for k, p := range old.PK {
		if newAt[p] < 0 || newAt[p] != newSch.PkOrdinals[k] {
			return nil, errNotSupported("changing the PRIMARY KEY")
		}
	}
	var meta sqlMeta
	if err := jsonUnmarshal(old.SQL, &meta); err != nil {
		return nil, err
	}
	pks := sql.NewPrimaryKeySchema(newSch.Schema, newSch.PkOrdinals...)
	nd, err := newTableDef(ctx, t.e.GMS.Analyzer.Catalog, old.ID, old.DB, old.Name, pks, sql.CollationID(old.Collation), meta.Comment)
	if err != nil {
		return nil, err
	}
	nd.NextIndex = old.NextIndex
	// A column the statement does not declare keeps its declaration
	// (coldecl.go).
	for i, src := range sources {
		if src >= 0 {
			keepDeclared(ctx, &nd.Columns[i], old.Columns[src])
		}
	}
	if err := carryForeignKeys(old, nd, meta.ForeignKeys, newAt); err != nil {
		return nil, err
	}
	// A check names columns by name; go-mysql-server refuses to rename
	// or drop one a check uses (3959), or drops a check on the column
	// dropped first.
	if err := storeMeta(nd, "checks", meta.Checks); err != nil {
		return nil, err
	}
	if err := carrySpatial(old, nd, newAt); err != nil { // spatial.go
		return nil, err
	}
	// Indexes follow their columns; a dropped column leaves its indexes,
	// and an index left with no column goes, as in MySQL.
	for _, ix := range old.Indexes {
		var cols []int
		for _, c := range ix.Columns {
			if newAt[c] >= 0 {
				cols = append(cols, newAt[c])
			}
		}
		if len(cols) == 0 {
			continue
		}
		ix.Columns = cols
		nd.Indexes = append(nd.Indexes, ix)
	}
	// A PRIMARY KEY column may be renamed, nothing else.
	for _, p := range old.PK {
		o, n := old.Columns[p], nd.Columns[newAt[p]]
		o.Name, n.Name = "", ""
		if o.Type != n.Type || o.RealType != n.RealType || o.Unsigned != n.Unsigned || o.MaxBytes != n.MaxBytes ||
			o.Precision != n.Precision || o.Scale != n.Scale || o.Fsp != n.Fsp || o.Collation != n.Collation {
			return nil, errNotSupported("changing the type of a PRIMARY KEY column")
		}
	}
	stmt, err := alterText(old, nd, newSch.Schema, oldCol, newCol, sql.CollationID(old.Collation))
	if err != nil {
		return nil, err
	}
	return &rewriter{t: t, old: cur, nd: nd, nt: t.e.store.Preview(nd), sch: newSch.Schema, sources: sources,
		fill: make([]row.Value, len(sources)), stmt: stmt, col: colName(oldCol, newCol)}, nil
}

func colName(oldCol, newCol *sql.Column) string {
	if newCol != nil {
		return newCol.Name
	}
	return oldCol.Name
}

// alterText is the statement logged for the change, in MySQL's syntax, with
// the column's place given explicitly.
func alterText(old, nd *storage.TableDef, sch sql.Schema, oldCol, newCol *sql.Column, coll sql.CollationID) (string, error) {
	tbl := "ALTER TABLE " + quoteIdent(old.Name)
	if newCol == nil {
		return tbl + " DROP COLUMN " + quoteIdent(oldCol.Name), nil
	}
	pos := sch.IndexOfColName(newCol.Name)
	if pos < 0 {
		return "", fmt.Errorf("column %s missing from the new schema", newCol.Name)
	}
	c := columnDisplay(sch[pos], nd.Columns[pos])
	def, onUpdate := "", ""
	if c.Default != nil {
		def = c.Default.String()
	}
	if c.OnUpdate != nil {
		onUpdate = c.OnUpdate.String()
	}
	text := strings.TrimSpace(formatter.GenerateCreateTableColumnDefinition(c, def, onUpdate, coll))
	place := " FIRST"
	if pos > 0 {
		place = " AFTER " + quoteIdent(sch[pos-1].Name)
	}
	if oldCol == nil {
		return tbl + " ADD COLUMN " + text + place, nil
	}
	return tbl + " CHANGE COLUMN " + quoteIdent(oldCol.Name) + " " + text + place, nil
}

// rewriter is the sql.RowInserter GMS streams the new rows into.
type rewriter struct {
	t       *Table
	old     *storage.Table
	nd      *storage.TableDef
	nt      *storage.Table
	sch     sql.Schema
	sources []int
	fill    []row.Value
	filled  bool
	stmt    string
	col     string

	discarded bool

	ovals []row.Value
	// Keyless tables: the multiset of images GMS made (a sum of their
	// hashes, and their number), checked against storage's at Close.
	sum        uint64
	n          int
	sameImages bool // no rows streamed: only names or metadata change
}

func (w *rewriter) StatementBegin(*sql.Context) {}

// DiscardChanges: GMS met an error (ours or its own) and will still call
// Close, which must then commit nothing.
func (w *rewriter) DiscardChanges(*sql.Context, error) error {
	w.discarded = true
	return nil
}

func (w *rewriter) StatementComplete(*sql.Context) error { return nil }

// Insert checks that storage's rewrite makes exactly this row.
func (w *rewriter) Insert(ctx *sql.Context, r sql.Row) error {
	if len(r) != len(w.sch) {
		return fmt.Errorf("rewritten row has %d values, table has %d columns", len(r), len(w.sch))
	}
	got := make([]row.Value, len(r))
	for i, v := range r {
		sv, err := toStorage(ctx, &w.nd.Columns[i], w.sch[i].Type, v)
		if err != nil {
			return err
		}
		got[i] = sv
	}
	if w.nt.Keyless() {
		return w.insertKeyless(got)
	}
	key, err := w.nt.RowKey(nil, got)
	if err != nil {
		return err
	}
	// The row as GMS read it: the same consistent read as its scan (rows
	// committed since are rewritten by storage all the same, and checked
	// there for NOT NULL).
	_, tx, err := w.t.begin(ctx)
	if err != nil {
		return err
	}
	img, ok, err := tx.Get(key)
	if err != nil {
		return err
	}
	if !ok {
		return errNotSupported(fmt.Sprintf("ALTER TABLE that changes the stored primary key values (column `%s`)", w.col))
	}
	if w.ovals, err = w.old.Decode(img, w.ovals); err != nil {
		return err
	}
	w.takeFill(got)
	want := make([]row.Value, len(got))
	for i, s := range w.sources {
		if s >= 0 {
			want[i] = w.ovals[s]
		} else {
			want[i] = w.fill[i]
		}
	}
	a, err := w.nt.Encode(nil, got)
	if err != nil {
		return err
	}
	b, err := w.nt.Encode(nil, want)
	if err != nil || !bytes.Equal(a, b) {
		for i, s := range w.sources {
			if s < 0 && !sameValue(w.nt, i, got, want) {
				return errNotSupported(fmt.Sprintf("ALTER TABLE ... ADD COLUMN whose value differs from row to row (column `%s`)", w.sch[i].Name))
			}
		}
		return w.converts()
	}
	return nil
}

// takeFill keeps the added columns' values of the first row: every row
// must have the same (storage writes one fill value).
func (w *rewriter) takeFill(got []row.Value) {
	if w.filled {
		return
	}
	for i, s := range w.sources {
		if s < 0 {
			w.fill[i] = got[i]
		}
	}
	w.filled = true
}

// insertKeyless checks a new row of a table without a primary key. No key
// leads from it to its old row, so each added column's value is checked
// here and the rows as a whole at Close, as a multiset.
func (w *rewriter) insertKeyless(got []row.Value) error {
	w.takeFill(got)
	for i, s := range w.sources {
		if s < 0 && !sameValue(w.nt, i, got, w.fill) {
			return errNotSupported(fmt.Sprintf("ALTER TABLE ... ADD COLUMN whose value differs from row to row (column `%s`)", w.sch[i].Name))
		}
	}
	img, err := w.nt.Encode(nil, got)
	if err != nil {
		return err
	}
	w.sum += imageHash(img)
	w.n++
	return nil
}

func imageHash(img []byte) uint64 {
	h := sha256.Sum256(img)
	return binary.LittleEndian.Uint64(h[:8])
}

// checkKeyless compares the rows GMS made with the rows storage's rewrite
// will make from the same snapshot, as multisets.
func (w *rewriter) checkKeyless(ctx *sql.Context) error {
	_, tx, err := w.t.begin(ctx)
	if err != nil {
		return err
	}
	p := w.old.PrimaryPrefix()
	it, err := tx.Scan(p, row.PrefixEnd(p))
	if err != nil {
		return err
	}
	defer it.Close()
	var sum uint64
	n := 0
	want := make([]row.Value, len(w.sources))
	for it.Next() {
		if w.ovals, err = w.old.Decode(it.KV().Value, w.ovals); err != nil {
			return err
		}
		for i, s := range w.sources {
			if s >= 0 {
				want[i] = w.ovals[s]
			} else {
				want[i] = w.fill[i]
			}
		}
		img, err := w.nt.Encode(nil, want)
		if err != nil {
			return w.converts()
		}
		sum += imageHash(img)
		n++
	}
	if err := it.Err(); err != nil {
		return err
	}
	if sum != w.sum || n != w.n {
		return w.converts()
	}
	return nil
}

func (w *rewriter) converts() error {
	return errNotSupported(fmt.Sprintf("ALTER TABLE that converts the stored values of column `%s` (only renames, widening integer and VARCHAR types, and NULL/NOT NULL changes keep them)", w.col))
}

// sameValue compares column i of two rows by their encodings.
func sameValue(t *storage.Table, i int, a, b []row.Value) bool {
	x := append([]row.Value(nil), a...)
	x[i] = b[i]
	ea, err1 := t.Encode(nil, a)
	eb, err2 := t.Encode(nil, x)
	return err1 == nil && err2 == nil && bytes.Equal(ea, eb)
}

// Close commits the change, unless it was discarded.
func (w *rewriter) Close(ctx *sql.Context) error {
	if w.discarded {
		return nil
	}
	if w.nt.Keyless() && !w.sameImages {
		if err := w.checkKeyless(ctx); err != nil {
			return err
		}
	}
	fill, err := storage.FillImage(w.nt, w.fill)
	if err != nil {
		return err
	}
	// The rewritten table takes a new id (see storage/rebuild.go).
	nd := *w.nd
	nd.ID = w.t.e.store.NewTableID()
	c := &storage.CatalogChange{Op: "rewrite_table", TableID: w.nd.ID, Table: &nd, Sources: w.sources, Fill: fill}
	err = w.t.e.ddl(ctx, w.t.db.name, w.stmt, c, []uint64{w.nd.ID})
	var nv *storage.NullValueError
	if errors.As(err, &nv) {
		return mysql.NewSQLError(1138, "22004", "Invalid use of NULL value")
	}
	if err != nil {
		return err
	}
	w.t.e.autoinc.forget(w.nd.ID)
	return nil
}

// discardRows is the inserter for a rewrite that has nothing left to do.
type discardRows struct{}

func (discardRows) StatementBegin(*sql.Context)              {}
func (discardRows) DiscardChanges(*sql.Context, error) error { return nil }
func (discardRows) StatementComplete(*sql.Context) error     { return nil }
func (discardRows) Insert(*sql.Context, sql.Row) error       { return nil }
func (discardRows) Close(*sql.Context) error                 { return nil }
