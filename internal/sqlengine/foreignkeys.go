package sqlengine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// Foreign keys, as InnoDB has them.
//
// go-mysql-server does the checking and the referential actions (its
// foreign key handler wraps the editor of a table with foreign keys); a
// Table gives it the constraints (sql.ForeignKeyTable) and an editor it can
// look rows up through. What Lockstep adds is what makes them hold under
// concurrency and replication:
//
//   - Every row go-mysql-server reads for a foreign key (the parent of a
//     row inserted or changed, the children of a parent deleted or
//     changed) is read as a locking read: the latest committed version,
//     under a shared row lock held to the end of the transaction, as
//     InnoDB does. A child insert and a delete of its parent therefore
//     serialise on the parent row's lock, and neither can commit an
//     orphan; a plain snapshot read would miss a parent deleted (or see
//     one not yet visible) after the transaction's snapshot.
//   - The rows such a read finds are referenced (txn.Reference): the
//     binlog's write set names them, so a replica applies a child insert
//     after the insert of its parent, and a cluster member certifies them
//     as shared keys, so a child insert on one member conflicts with a
//     concurrent delete of its parent on another.
//   - Referential actions run as row changes of the statement. They are
//     logged before the statement's own change, last made first, flagged
//     NO_FOREIGN_KEY_CHECKS_F (txn.MayCascade, TrxEvents.AddCascadeRow), as
//     MySQL 9 logs them: replay and Lockstep replicas apply rows, and a
//     MySQL 8 or MariaDB replica, which cascades by itself, finds them
//     done. A constraint with an action on its own table is refused: its
//     cascaded rows could not be told from the statement's own.
//   - Those sources log no cascaded rows, so a Lockstep replica of one
//     refuses a change of a parent an action would cascade from
//     (CascadeParent) rather than leave its children behind.
//   - The fast path takes no write on a table with foreign keys (declared
//     or referenced): go-mysql-server runs those.
//
// A constraint is kept in its (child) table's SQL metadata. Its parent is
// named by database and table, and also by table id once resolved, so a
// RENAME TABLE of the parent is followed without a change of the child. A
// change of a constraint is a catalog change of the child table (logged as
// ALTER TABLE ... ADD CONSTRAINT / DROP FOREIGN KEY).

// fkMeta is one constraint as stored.
type fkMeta struct {
	Name          string   `json:"name"`
	Columns       []string `json:"columns"`
	ParentDB      string   `json:"parent_db"`
	ParentTable   string   `json:"parent_table"`
	ParentID      uint64   `json:"parent_id,omitempty"` // 0: not resolved
	ParentColumns []string `json:"parent_columns"`
	OnUpdate      string   `json:"on_update,omitempty"`
	OnDelete      string   `json:"on_delete,omitempty"`
}

// fkCatalog is every constraint of the catalog, derived from it at
// version.
type fkCatalog struct {
	version    uint64
	declared   map[uint64][]sql.ForeignKeyConstraint // by child table id
	referenced map[string][]sql.ForeignKeyConstraint // by lower(parent db "." parent table)
	involved   map[uint64]bool                       // tables that are a child or a parent
	acting     map[uint64]bool                       // parents of a constraint with CASCADE or SET NULL
}

type fkCache struct{ p atomic.Pointer[fkCatalog] }

// foreignKeys returns the catalog's constraints, rebuilt after a change.
func (e *Engine) foreignKeys() *fkCatalog {
	v := e.store.CatalogVersion()
	if c := e.fks.p.Load(); c != nil && c.version == v {
		return c
	}
	c := &fkCatalog{version: v, declared: map[uint64][]sql.ForeignKeyConstraint{},
		referenced: map[string][]sql.ForeignKeyConstraint{}, involved: map[uint64]bool{}, acting: map[uint64]bool{}}
	for _, d := range e.store.Databases() {
		for _, t := range e.store.Tables(d.Name) {
			for _, m := range tableForeignKeys(t.Def) {
				fk := e.constraint(t.Def, m)
				c.declared[t.Def.ID] = append(c.declared[t.Def.ID], fk)
				k := strings.ToLower(fk.ParentDatabase + "." + fk.ParentTable)
				c.referenced[k] = append(c.referenced[k], fk)
				c.involved[t.Def.ID] = true
				if p, ok := e.store.Table(fk.ParentDatabase, fk.ParentTable); ok {
					c.involved[p.Def.ID] = true
					if acts(fk.OnDelete) || acts(fk.OnUpdate) {
						c.acting[p.Def.ID] = true
					}
				}
			}
		}
	}
	e.fks.p.Store(c)
	return c
}

// tableForeignKeys reads a table's constraints from its SQL metadata.
func tableForeignKeys(def *storage.TableDef) []fkMeta {
	var m struct {
		ForeignKeys []fkMeta `json:"foreign_keys"`
	}
	if !bytes.Contains(def.SQL, []byte(`"foreign_keys"`)) {
		return nil
	}
	if err := json.Unmarshal(def.SQL, &m); err != nil {
		return nil
	}
	return m.ForeignKeys
}

// constraint is m, declared by table def, as go-mysql-server knows it:
// the parent under its current name when it is resolved.
func (e *Engine) constraint(def *storage.TableDef, m fkMeta) sql.ForeignKeyConstraint {
	pdb, ptab := m.ParentDB, m.ParentTable
	resolved := false
	if m.ParentID != 0 {
		if p, ok := e.store.TableByID(m.ParentID); ok {
			pdb, ptab, resolved = p.Def.DB, p.Def.Name, true
		}
	}
	if !resolved {
		_, resolved = e.store.Table(pdb, ptab)
	}
	return sql.ForeignKeyConstraint{
		Name: m.Name, Database: def.DB, Table: def.Name, Columns: slices.Clone(m.Columns),
		ParentDatabase: pdb, ParentTable: ptab, ParentColumns: slices.Clone(m.ParentColumns),
		OnUpdate: sql.ForeignKeyReferentialAction(m.OnUpdate), OnDelete: sql.ForeignKeyReferentialAction(m.OnDelete),
		IsResolved: resolved,
	}
}

// involvedInForeignKeys reports whether table id is a child or a parent.
func (e *Engine) involvedInForeignKeys(id uint64) bool {
	return e.foreignKeys().involved[id]
}

// CascadeParent reports whether changing or deleting a row of table id
// can change other rows through a foreign key's action. A replica asks:
// MySQL 8 and MariaDB sources do not log those changes (their replicas
// make them again), and Lockstep's applier applies rows, not foreign
// keys.
func (e *Engine) CascadeParent(id uint64) bool {
	return e.foreignKeys().acting[id]
}

// referencedFromOutside refuses (3730) to drop database db while a table
// of another database has a constraint on one of its tables, as MySQL
// does under foreign_key_checks (go-mysql-server checks DROP TABLE only).
func (e *Engine) referencedFromOutside(ctx *sql.Context, db string) error {
	if v, err := ctx.GetSessionVariable(ctx, "foreign_key_checks"); err == nil && !isOn(v) {
		return nil
	}
	for _, fks := range e.foreignKeys().referenced {
		for _, fk := range fks {
			if strings.EqualFold(fk.ParentDatabase, db) && !strings.EqualFold(fk.Database, db) {
				return mysql.NewSQLError(3730, "HY000", "Cannot drop table '%s' referenced by a foreign key constraint '%s' on table '%s'.", fk.ParentTable, fk.Name, fk.Table)
			}
		}
	}
	return nil
}

var _ sql.ForeignKeyTable = (*Table)(nil)

// GetDeclaredForeignKeys implements sql.ForeignKeyTable.
func (t *Table) GetDeclaredForeignKeys(ctx *sql.Context) ([]sql.ForeignKeyConstraint, error) {
	fks := slices.Clone(t.e.foreignKeys().declared[t.st.Def.ID])
	// By name, as InnoDB keeps them: SHOW CREATE TABLE lists them so, and
	// tools that reflect a schema (SQLAlchemy's) expect that order.
	slices.SortStableFunc(fks, func(a, b sql.ForeignKeyConstraint) int {
		return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name))
	})
	return fks, nil
}

// GetReferencedForeignKeys implements sql.ForeignKeyTable.
func (t *Table) GetReferencedForeignKeys(ctx *sql.Context) ([]sql.ForeignKeyConstraint, error) {
	return slices.Clone(t.e.foreignKeys().referenced[strings.ToLower(t.st.Def.DB+"."+t.st.Def.Name)]), nil
}

// CreateIndexForForeignKey implements sql.ForeignKeyTable.
func (t *Table) CreateIndexForForeignKey(ctx *sql.Context, def sql.IndexDef) error {
	return t.CreateIndex(ctx, def)
}

// AddForeignKey implements sql.ForeignKeyTable. go-mysql-server has
// checked the columns, the parent's index and (under
// foreign_key_checks) the rows already there.
func (t *Table) AddForeignKey(ctx *sql.Context, fk sql.ForeignKeyConstraint) error {
	for _, other := range t.e.foreignKeys().declared {
		for _, o := range other {
			if strings.EqualFold(o.Database, t.db.name) && strings.EqualFold(o.Name, fk.Name) {
				return sql.ErrForeignKeyDuplicateName.New(fk.Name)
			}
		}
	}
	m := fkMeta{Name: fk.Name, Columns: fk.Columns, ParentDB: fk.ParentDatabase, ParentTable: fk.ParentTable,
		ParentColumns: fk.ParentColumns, OnUpdate: string(fk.OnUpdate), OnDelete: string(fk.OnDelete)}
	if m.ParentDB == "" {
		m.ParentDB = t.db.name
	}
	tables := []uint64{t.st.Def.ID}
	if p, ok := t.e.store.Table(m.ParentDB, m.ParentTable); ok {
		m.ParentID = p.Def.ID
		if p.Def.ID != t.st.Def.ID {
			tables = append(tables, p.Def.ID)
		} else if acts(fk.OnDelete) || acts(fk.OnUpdate) {
			// Its cascaded changes could not be told from the
			// statement's own in the binlog (txn.MayCascade).
			return errNotSupported("ON DELETE or ON UPDATE CASCADE or SET NULL in a foreign key of a table on itself")
		}
	}
	stmt := fmt.Sprintf("ALTER TABLE %s ADD %s", quoteIdent(t.st.Def.Name), constraintSQL(t.db.name, m))
	return t.setForeignKeys(ctx, stmt, tables, func(fks []fkMeta) ([]fkMeta, error) { return append(fks, m), nil })
}

// DropForeignKey implements sql.ForeignKeyTable.
func (t *Table) DropForeignKey(ctx *sql.Context, name, _, _ string) error {
	stmt := fmt.Sprintf("ALTER TABLE %s DROP FOREIGN KEY %s", quoteIdent(t.st.Def.Name), quoteIdent(name))
	return t.setForeignKeys(ctx, stmt, []uint64{t.st.Def.ID}, func(fks []fkMeta) ([]fkMeta, error) {
		for i, m := range fks {
			if strings.EqualFold(m.Name, name) {
				return slices.Delete(fks, i, i+1), nil
			}
		}
		return nil, sql.ErrForeignKeyNotFound.New(name, t.st.Def.Name)
	})
}

// UpdateForeignKey implements sql.ForeignKeyTable. go-mysql-server calls
// it after renaming a table or a column a constraint names; a parent
// followed by its id needs no change.
func (t *Table) UpdateForeignKey(ctx *sql.Context, name string, fk sql.ForeignKeyConstraint) error {
	var cur *fkMeta
	fks := tableForeignKeys(t.current().Def)
	for i := range fks {
		if strings.EqualFold(fks[i].Name, name) {
			cur = &fks[i]
		}
	}
	if cur == nil {
		return sql.ErrForeignKeyNotFound.New(name, t.st.Def.Name)
	}
	now := t.e.constraint(t.current().Def, *cur)
	if strings.EqualFold(now.Name, fk.Name) && slices.Equal(now.Columns, fk.Columns) &&
		strings.EqualFold(now.ParentDatabase, fk.ParentDatabase) && strings.EqualFold(now.ParentTable, fk.ParentTable) &&
		slices.Equal(now.ParentColumns, fk.ParentColumns) && now.OnUpdate == fk.OnUpdate && now.OnDelete == fk.OnDelete {
		return nil
	}
	m := fkMeta{Name: fk.Name, Columns: fk.Columns, ParentDB: fk.ParentDatabase, ParentTable: fk.ParentTable,
		ParentColumns: fk.ParentColumns, OnUpdate: string(fk.OnUpdate), OnDelete: string(fk.OnDelete)}
	if p, ok := t.e.store.Table(m.ParentDB, m.ParentTable); ok {
		m.ParentID = p.Def.ID
	}
	stmt := fmt.Sprintf("ALTER TABLE %s DROP FOREIGN KEY %s, ADD %s", quoteIdent(t.st.Def.Name), quoteIdent(name), constraintSQL(t.db.name, m))
	return t.setForeignKeys(ctx, stmt, []uint64{t.st.Def.ID}, func(fks []fkMeta) ([]fkMeta, error) {
		for i := range fks {
			if strings.EqualFold(fks[i].Name, name) {
				fks[i] = m
			}
		}
		return fks, nil
	})
}

// setForeignKeys commits the table's constraints as edit changes them.
func (t *Table) setForeignKeys(ctx *sql.Context, stmt string, tables []uint64, edit func([]fkMeta) ([]fkMeta, error)) error {
	nd := cloneDef(t.current().Def)
	fks, err := edit(tableForeignKeys(nd))
	if err != nil {
		return err
	}
	if err := storeMeta(nd, "foreign_keys", fks); err != nil {
		return fmt.Errorf("table %s: bad SQL metadata: %w", nd.Name, err)
	}
	return t.e.ddl(ctx, t.db.name, stmt, &storage.CatalogChange{Op: "alter_table", TableID: nd.ID, Table: nd}, tables)
}

// acts reports whether a referential action changes the children.
func acts(a sql.ForeignKeyReferentialAction) bool {
	return a == sql.ForeignKeyReferentialAction_Cascade || a == sql.ForeignKeyReferentialAction_SetNull ||
		a == sql.ForeignKeyReferentialAction_SetDefault
}

// constraintSQL is m as a CONSTRAINT clause, in the database db of its
// table.
func constraintSQL(db string, m fkMeta) string {
	cols := func(names []string) string {
		q := make([]string, len(names))
		for i, n := range names {
			q[i] = quoteIdent(n)
		}
		return strings.Join(q, ", ")
	}
	parent := quoteIdent(m.ParentTable)
	if !strings.EqualFold(m.ParentDB, db) {
		parent = quoteIdent(m.ParentDB) + "." + parent
	}
	s := fmt.Sprintf("CONSTRAINT %s FOREIGN KEY (%s) REFERENCES %s (%s)", quoteIdent(m.Name), cols(m.Columns), parent, cols(m.ParentColumns))
	for _, a := range []struct{ on, action string }{{"DELETE", m.OnDelete}, {"UPDATE", m.OnUpdate}} {
		if a.action != "" && a.action != string(sql.ForeignKeyReferentialAction_DefaultAction) {
			s += " ON " + a.on + " " + a.action
		}
	}
	return s
}

// GetForeignKeyEditor implements sql.ForeignKeyTable: the table's editor,
// through which go-mysql-server also looks rows up for its checks; those
// lookups are locking reads that reference what they find.
func (t *Table) GetForeignKeyEditor(ctx *sql.Context) sql.ForeignKeyEditor {
	return fkEditor{editor{t}}
}

type fkEditor struct{ editor }

var _ sql.ForeignKeyEditor = fkEditor{}

// StatementBegin also says that every change go-mysql-server makes through
// this editor may start or be a referential action: the transaction logs
// the statement's changes of other tables as such (txn.MayCascade).
func (ed fkEditor) StatementBegin(ctx *sql.Context) {
	ed.editor.StatementBegin(ctx)
	if _, tx, err := ed.t.begin(ctx); err == nil {
		tx.MayCascade()
	}
}

func (ed fkEditor) IndexedAccess(ctx *sql.Context, lookup sql.IndexLookup) sql.IndexedTable {
	nt := *ed.t
	nt.lookup = &lookup
	nt.fkRead = true
	return &nt
}

func (ed fkEditor) GetIndexes(ctx *sql.Context) ([]sql.Index, error) { return ed.t.GetIndexes(ctx) }

func (ed fkEditor) PreciseMatch() bool { return false }

// carryForeignKeys gives nd, old rewritten (column i of old is column
// newAt[i] of nd, or dropped where -1), old's constraints with their
// columns renamed as nd names them. go-mysql-server refuses to drop a
// column a constraint uses before the rewrite is made.
func carryForeignKeys(old, nd *storage.TableDef, fks []fkMeta, newAt []int) error {
	if len(fks) == 0 {
		return nil
	}
	// go-mysql-server renames a constraint's columns (UpdateForeignKey)
	// before it renames the column itself: a name the new definition has
	// is kept as it is.
	rename := map[string]string{}
	for i, c := range old.Columns {
		if newAt[i] >= 0 {
			rename[strings.ToLower(c.Name)] = nd.Columns[newAt[i]].Name
		}
	}
	for _, c := range nd.Columns {
		if _, ok := rename[strings.ToLower(c.Name)]; !ok {
			rename[strings.ToLower(c.Name)] = c.Name
		}
	}
	renamed := func(names []string, fk string) ([]string, error) {
		out := make([]string, len(names))
		for j, c := range names {
			n, ok := rename[strings.ToLower(c)]
			if !ok {
				return nil, sql.ErrForeignKeyDropColumn.New(c, fk)
			}
			out[j] = n
		}
		return out, nil
	}
	fks = slices.Clone(fks)
	for i := range fks {
		var err error
		if fks[i].Columns, err = renamed(fks[i].Columns, fks[i].Name); err != nil {
			return err
		}
		if fks[i].ParentID == old.ID { // a constraint of the table on itself
			if fks[i].ParentColumns, err = renamed(fks[i].ParentColumns, fks[i].Name); err != nil {
				return err
			}
		}
	}
	return storeMeta(nd, "foreign_keys", fks)
}
