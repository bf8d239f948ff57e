package storage

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/row"
)

// CatalogChange is one DDL effect on storage. It is logged in the binlog
// (a Rows_query event, see binlog.AddCatalog) next to the DDL statement, so replaying the binlog
// redoes it exactly: every change is deterministic given the data before it.
type CatalogChange struct {
	Op        string       `json:"op"` // create_db drop_db create_table drop_table add_index drop_index truncate rename_table rewrite_table alter_table set_accounts create_view drop_view create_trigger drop_trigger create_routine alter_routine drop_routine
	DB        *DatabaseDef `json:"db,omitempty"`
	Table     *TableDef    `json:"table,omitempty"`
	TableID   uint64       `json:"table_id,omitempty"`
	IndexName string       `json:"index,omitempty"`
	Index     *IndexDef    `json:"index_def,omitempty"`

	// rewrite_table (a column added, dropped or changed): every row is
	// rewritten under Table, the new definition. New column i takes old
	// column Sources[i], or, where that is -1, column i of Fill, a row
	// image under the new definition. The values are logged, not the
	// expressions that made them, so replay writes exactly the same rows.
	Sources []int  `json:"sources,omitempty"`
	Fill    []byte `json:"fill,omitempty"`

	// set_accounts: the server's accounts and grants, whole, in the SQL
	// layer's own encoding. Storage keeps them opaque, next to the tables,
	// so that an account change commits atomically with its binlog event
	// and replay restores it like any other change.
	Accounts []byte `json:"accounts,omitempty"`

	// create_view (which replaces a view of the same name) and
	// drop_view: the view.
	View *ViewDef `json:"view,omitempty"`

	// create_trigger and drop_trigger: the trigger (triggers.go).
	Trigger *TriggerDef `json:"trigger,omitempty"`

	// create_routine, alter_routine and drop_routine: the stored procedure
	// (routines.go).
	Routine *RoutineDef `json:"routine,omitempty"`

	// staged: Stage has written the rebuild's data (rebuild.go).
	staged bool
}

// Encode serialises the change for the binlog.
func (c *CatalogChange) Encode() []byte {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // only plain data
	}
	return b
}

// DecodeCatalogChange parses a logged change.
func DecodeCatalogChange(b []byte) (*CatalogChange, error) {
	var c CatalogChange
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("bad catalog change in binlog: %w", err)
	}
	return &c, nil
}

// accountsKey holds the accounts of the last set_accounts change.
var accountsKey = []byte("\x00cat/accounts")

// Accounts returns the accounts of the last set_accounts change applied,
// if there was one.
func (e *Engine) Accounts() ([]byte, bool, error) {
	return get(e.db, accountsKey)
}

func tabKey(id uint64) []byte { return binary.BigEndian.AppendUint64([]byte("\x00cat/tab/"), id) }
func dbKey(name string) []byte {
	return []byte("\x00cat/db/" + strings.ToLower(name))
}
func viewKey(db, name string) []byte { return []byte("\x00cat/view/" + nameKey(db, name)) }

// PrepareCatalog validates a change against the current catalog and adds its
// storage effects to b. The in-memory catalog changes in PublishCatalog,
// after b is applied.
func (e *Engine) PrepareCatalog(b *Batch, c *CatalogChange) error {
	e.mu.RLock()
	defer e.mu.RUnlock()
	switch c.Op {
	case "set_accounts":
		if len(c.Accounts) == 0 {
			return fmt.Errorf("set_accounts without accounts")
		}
		return b.Set(accountsKey, c.Accounts)
	case "create_db":
		if _, ok := e.dbs[strings.ToLower(c.DB.Name)]; ok {
			return fmt.Errorf("database %q exists", c.DB.Name)
		}
		v, _ := json.Marshal(c.DB)
		return b.Set(dbKey(c.DB.Name), v)
	case "drop_db":
		for _, t := range e.tables {
			if strings.EqualFold(t.Def.DB, c.DB.Name) {
				if err := dropTableData(b, t); err != nil {
					return err
				}
			}
		}
		for _, v := range e.views {
			if strings.EqualFold(v.DB, c.DB.Name) {
				if err := b.Delete(viewKey(v.DB, v.Name)); err != nil {
					return err
				}
			}
		}
		for _, tr := range e.triggers {
			if strings.EqualFold(tr.DB, c.DB.Name) {
				if err := b.Delete(triggerKey(tr.DB, tr.Name)); err != nil {
					return err
				}
			}
		}
		if err := e.prepareDatabaseRoutines(b, c.DB.Name); err != nil {
			return err
		}
		return b.Delete(dbKey(c.DB.Name))
	case "create_trigger", "drop_trigger":
		return e.prepareTriggerChange(b, c)
	case "create_routine", "alter_routine", "drop_routine":
		return e.prepareRoutineChange(b, c)
	case "create_view", "drop_view":
		if c.View == nil || c.View.Name == "" {
			return fmt.Errorf("%s without a view", c.Op)
		}
		if _, ok := e.dbs[strings.ToLower(c.View.DB)]; !ok {
			return fmt.Errorf("database %q not found", c.View.DB)
		}
		if c.Op == "drop_view" {
			if _, ok := e.views[nameKey(c.View.DB, c.View.Name)]; !ok {
				return fmt.Errorf("view %s.%s not found", c.View.DB, c.View.Name)
			}
			return b.Delete(viewKey(c.View.DB, c.View.Name))
		}
		if _, ok := e.byName[nameKey(c.View.DB, c.View.Name)]; ok {
			return fmt.Errorf("a table %s.%s exists", c.View.DB, c.View.Name)
		}
		v, _ := json.Marshal(c.View)
		return b.Set(viewKey(c.View.DB, c.View.Name), v)
	case "create_table":
		if _, ok := e.views[nameKey(c.Table.DB, c.Table.Name)]; ok {
			return fmt.Errorf("a view %s.%s exists", c.Table.DB, c.Table.Name)
		}
		for i := range c.Table.Columns {
			if err := c.Table.Columns[i].Validate(); err != nil {
				return err
			}
		}
		v, _ := json.Marshal(c.Table)
		// A crash may have left a rebuild's chunks under this id
		// (rebuild.go).
		p := e.newTable(c.Table).prefix
		if err := b.b.DeleteRange(p, row.PrefixEnd(p), nil); err != nil {
			return err
		}
		return b.Set(tabKey(c.Table.ID), v)
	case "drop_table", "truncate":
		t, ok := e.tables[c.TableID]
		if !ok {
			return fmt.Errorf("table id %d not found", c.TableID)
		}
		if c.Op == "truncate" {
			return b.b.DeleteRange(t.prefix, row.PrefixEnd(t.prefix), nil)
		}
		if err := e.prepareTableTriggers(b, c); err != nil {
			return err
		}
		return dropTableData(b, t)
	case "add_index", "drop_index", "rename_table", "rewrite_table", "alter_table":
		t, ok := e.tables[c.TableID]
		if !ok {
			return fmt.Errorf("table id %d not found", c.TableID)
		}
		if err := e.prepareTableTriggers(b, c); err != nil {
			return err
		}
		v, _ := json.Marshal(c.Table)
		if c.Op == "rewrite_table" && c.Table.ID != c.TableID {
			// Rewritten under a new id (rebuild.go): the old table goes
			// as the new one is published.
			if !c.staged {
				if err := e.stageLocked(c); err != nil {
					return err
				}
			}
			if err := dropTableData(b, t); err != nil {
				return err
			}
			return b.Set(tabKey(c.Table.ID), v)
		}
		if err := b.Set(tabKey(c.TableID), v); err != nil {
			return err
		}
		switch c.Op {
		case "rewrite_table":
			// Logged before rewrites took a new id: in place, in b.
			for i := range t.Def.Indexes {
				p := t.IndexPrefix(i)
				if err := b.b.DeleteRange(p, row.PrefixEnd(p), nil); err != nil {
					return err
				}
			}
			if t.Keyless() {
				p := append(append([]byte(nil), t.prefix...), kindImage)
				if err := b.b.DeleteRange(p, row.PrefixEnd(p), nil); err != nil {
					return err
				}
			}
			return e.rewriteRows(&memSink{b: b, seen: map[string]bool{}}, t, e.newTable(c.Table), c.Sources, c.Fill)
		case "add_index":
			if c.staged {
				return nil
			}
			return e.stageLocked(c)
		case "drop_index":
			for i, ix := range t.Def.Indexes {
				if strings.EqualFold(ix.Name, c.IndexName) {
					p := t.IndexPrefix(i)
					return b.b.DeleteRange(p, row.PrefixEnd(p), nil)
				}
			}
			return fmt.Errorf("index %q not found", c.IndexName)
		}
		return nil
	}
	return fmt.Errorf("unknown catalog change %q", c.Op)
}

func dropTableData(b *Batch, t *Table) error {
	if err := b.b.DeleteRange(t.prefix, row.PrefixEnd(t.prefix), nil); err != nil {
		return err
	}
	return b.Delete(tabKey(t.Def.ID))
}

// FillImage encodes the fill values of a rewrite_table change: a row image
// under t in which any column may be NULL (only the added columns' values
// are used).
func FillImage(t *Table, vals []row.Value) ([]byte, error) {
	return row.AppendImage(nil, fillColumns(t.Def.Columns), vals)
}

func fillColumns(cols []row.Column) []row.Column {
	out := append([]row.Column(nil), cols...)
	for i := range out {
		out[i].Nullable = true
	}
	return out
}

// NullValueError: a table rewrite met a NULL in a column that became NOT
// NULL (MySQL error 1138, "Invalid use of NULL value").
type NullValueError struct{ Column string }

func (e *NullValueError) Error() string {
	return fmt.Sprintf("Invalid use of NULL value (column %s)", e.Column)
}

// DuplicateKeyError reports a unique key collision (MySQL error 1062).
type DuplicateKeyError struct {
	Table *Table
	Index int // -1 for the primary key
	Key   []byte
	Entry string // the duplicate value as text, when known
	// Existing is the row image of the row that holds the key, when known.
	Existing []byte
}

func (e *DuplicateKeyError) Error() string {
	name := "PRIMARY"
	if e.Index >= 0 {
		name = e.Table.Def.Indexes[e.Index].Name
	}
	return fmt.Sprintf("Duplicate entry '%s' for key '%s.%s'", e.Entry, e.Table.Def.Name, name)
}

// PublishCatalog updates the in-memory catalog after a change was applied.
func (e *Engine) PublishCatalog(c *CatalogChange) {
	if c.Op == "set_accounts" {
		if f := e.AccountsChanged; f != nil {
			f()
		}
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.catalogVersion.Add(1)
	e.publishTriggerChange(c)
	e.publishRoutineChange(c)
	switch c.Op {
	case "create_db":
		d := *c.DB
		e.dbs[strings.ToLower(d.Name)] = &d
	case "drop_db":
		for id, t := range e.tables {
			if strings.EqualFold(t.Def.DB, c.DB.Name) {
				e.forgetSeq(id)
				delete(e.tables, id)
				delete(e.byName, nameKey(t.Def.DB, t.Def.Name))
			}
		}
		for k, v := range e.views {
			if strings.EqualFold(v.DB, c.DB.Name) {
				delete(e.views, k)
			}
		}
		delete(e.dbs, strings.ToLower(c.DB.Name))
	case "create_view":
		v := *c.View
		e.views[nameKey(v.DB, v.Name)] = &v
	case "drop_view":
		delete(e.views, nameKey(c.View.DB, c.View.Name))
	case "create_table", "add_index", "drop_index", "rename_table", "rewrite_table", "alter_table":
		if old, ok := e.tables[c.Table.ID]; ok {
			delete(e.byName, nameKey(old.Def.DB, old.Def.Name))
		}
		if old, ok := e.tables[c.TableID]; ok && c.Op == "rewrite_table" && c.TableID != c.Table.ID {
			delete(e.tables, c.TableID)
			delete(e.byName, nameKey(old.Def.DB, old.Def.Name))
		}
		d := *c.Table
		t := e.newTable(&d)
		e.tables[d.ID] = t
		e.byName[nameKey(d.DB, d.Name)] = t
		e.nextID = max(e.nextID, d.ID+1)
	case "drop_table":
		e.forgetSeq(c.TableID)
		if t, ok := e.tables[c.TableID]; ok {
			delete(e.tables, c.TableID)
			delete(e.byName, nameKey(t.Def.DB, t.Def.Name))
		}
	}
}

// ApplyRowEvent adds the effect of one *_rows event (as logged) to b. Used
// by replay; it trusts the images (no uniqueness checks: the source already
// enforced them). Rows of a table with a primary key are written blindly; a
// keyless table's copies are counted against the store plus own, the keys
// this transaction wrote before (filled here).
func (e *Engine) ApplyRowEvent(b *Batch, own ownWrites, typ byte, r binlog.Rows) error {
	t, ok := e.TableByID(r.TableID)
	if !ok {
		return fmt.Errorf("rows event for unknown table id %d", r.TableID)
	}
	if r.NCols != len(t.Def.Columns) {
		return fmt.Errorf("rows event for %s.%s has %d columns, table has %d", t.Def.DB, t.Def.Name, r.NCols, len(t.Def.Columns))
	}
	data := r.Data
	// Each row's values are decoded into a buffer reused by the next row;
	// an update's after image has a buffer of its own.
	var vals, after []row.Value
	decode := func(buf *[]row.Value) ([]byte, []row.Value, error) {
		v, n, err := row.DecodeImage(data, t.Def.Columns, *buf)
		if err != nil {
			return nil, nil, err
		}
		img := data[:n]
		data = data[n:]
		*buf = v
		return img, v, nil
	}
	next := func() ([]byte, []row.Value, error) { return decode(&vals) }
	var c RowChange
	for len(data) > 0 {
		switch typ {
		case binlog.WriteRowsEventV2:
			img, v, err := next()
			if err != nil {
				return err
			}
			if err := e.putRow(b, own, &c, t, img, v); err != nil {
				return err
			}
		case binlog.DeleteRowsEventV2:
			img, v, err := next()
			if err != nil {
				return err
			}
			if err := e.deleteRow(b, own, &c, t, img, v); err != nil {
				return err
			}
		case binlog.UpdateRowsEventV2:
			bimg, bv, err := next()
			if err != nil {
				return err
			}
			aimg, av, err := decode(&after)
			if err != nil {
				return err
			}
			if err := e.updateRow(b, own, &c, t, bimg, bv, aimg, av); err != nil {
				return err
			}
		default:
			return fmt.Errorf("event type %d is not a rows event", typ)
		}
	}
	return nil
}

// ownWrites is what a replayed transaction has written so far to the keys
// of keyless tables (nil: deleted), which its later rows must see.
type ownWrites map[string][]byte

func (e *Engine) getter(own ownWrites) Getter {
	return func(k []byte) ([]byte, bool, error) {
		if v, ok := own[string(k)]; ok {
			return v, v != nil, nil
		}
		var out []byte
		ok, err := view(e.db, k, func(v []byte) error {
			out = append([]byte(nil), v...)
			return nil
		})
		return out, ok, err
	}
}

// set and del write to b and, for keyless tables, remember the write.
func (own ownWrites) set(b *Batch, keyless bool, k, v []byte) error {
	if keyless {
		own[string(k)] = v
	}
	return b.Set(k, v)
}

func (own ownWrites) del(b *Batch, keyless bool, k []byte) error {
	if keyless {
		own[string(k)] = nil
	}
	return b.Delete(k)
}

// putRow, deleteRow and updateRow plan a row change of t (see change.go)
// and write it to b.

func (e *Engine) putRow(b *Batch, own ownWrites, c *RowChange, t *Table, img []byte, vals []row.Value) error {
	c.Reset()
	if err := t.PlanInsert(c, img, vals, e.getter(own), nil); err != nil {
		return err
	}
	return own.apply(b, t.Keyless(), c)
}

func (e *Engine) deleteRow(b *Batch, own ownWrites, c *RowChange, t *Table, img []byte, vals []row.Value) error {
	at, err := e.locate(own, t, img, vals)
	if err != nil {
		return err
	}
	c.Reset()
	if err := t.PlanDelete(c, at, vals); err != nil {
		return err
	}
	return own.apply(b, t.Keyless(), c)
}

// updateRow changes the row with image bimg (values bvals) to aimg
// (avals). A keyless row keeps its key and moves from its old image's
// index entry to a new one.
func (e *Engine) updateRow(b *Batch, own ownWrites, c *RowChange, t *Table, bimg []byte, bvals []row.Value, aimg []byte, avals []row.Value) error {
	at, err := e.locate(own, t, bimg, bvals)
	if err != nil {
		return err
	}
	c.Reset()
	if err := t.PlanUpdate(c, at, bimg, bvals, aimg, avals, e.getter(own), nil); err != nil {
		return err
	}
	return own.apply(b, t.Keyless(), c)
}

// locate finds the row a logged change acts on: the log's before image is
// the row as the source changed it.
func (e *Engine) locate(own ownWrites, t *Table, img []byte, vals []row.Value) (Located, error) {
	at, err := t.Locate(img, vals, nil, e.getter(own), nil)
	if err == nil && at.Key == nil {
		err = fmt.Errorf("row to change in %s.%s (no primary key) not found", t.Def.DB, t.Def.Name)
	}
	return at, err
}

// apply writes a planned change to b.
func (own ownWrites) apply(b *Batch, keyless bool, c *RowChange) error {
	return WriteChange(c,
		func(k, v []byte) error { return own.set(b, keyless, k, v) },
		func(k []byte) error { return own.del(b, keyless, k) })
}

// Replay applies one logged transaction (recovery), redoing any catalog
// change it carries.
func (e *Engine) Replay(trx *binlog.Transaction, end binlog.Position) error {
	p, err := e.PrepareReplay(trx, false)
	if err != nil {
		return err
	}
	return e.ApplyPrepared([]*Prepared{p}, []binlog.Position{end})
}

// Prepared is a logged transaction turned into its storage batch and the
// catalog changes it carries, to be applied in log order by
// ApplyPrepared.
type Prepared struct {
	b       *Batch
	changes []*CatalogChange
	version uint64 // the catalog version it was prepared against
	// Ordered: prepared ahead, the transaction turned out to need the
	// store as it will be when its turn comes; nothing was built.
	Ordered bool
}

// Close releases a Prepared that will not be applied.
func (p *Prepared) Close() {
	if p.b != nil {
		p.b.Close()
		p.b = nil
	}
}

// ChangesCatalog reports whether p carries a catalog change: it must be
// the last of the Prepareds given to one ApplyPrepared, and nothing may
// be prepared against the catalog before it is applied.
func (p *Prepared) ChangesCatalog() bool { return len(p.changes) > 0 }

// PrepareReplay builds the batch that applies a logged transaction.
//
// With ahead, the caller may not have applied every transaction before
// this one yet, and may be preparing others at the same time. Rows of
// tables with a primary key are written blind (their images carry every
// key and index entry), so such a transaction is prepared from its events
// and the catalog alone; one that changes the catalog, or a table without
// a primary key (whose row keys depend on the rows already stored), or
// that names a table the catalog does not show yet, comes back Ordered,
// to be prepared again without ahead once everything before it is
// applied. A transaction prepared ahead is also prepared again if the
// catalog changed since (Stale).
func (e *Engine) PrepareReplay(trx *binlog.Transaction, ahead bool) (*Prepared, error) {
	p := &Prepared{version: e.CatalogVersion()}
	b := e.NewBatch()
	fail := func(err error) (*Prepared, error) {
		b.Close()
		if ahead {
			return &Prepared{Ordered: true}, nil
		}
		return nil, err
	}
	own := ownWrites{}
	for _, ev := range trx.Events {
		switch ev.Type {
		case binlog.WriteRowsEventV2, binlog.UpdateRowsEventV2, binlog.DeleteRowsEventV2:
			r, err := binlog.ParseRows(ev.Type, ev.Body())
			if err != nil {
				b.Close()
				return nil, err
			}
			if ahead {
				if t, ok := e.TableByID(r.TableID); !ok || t.Keyless() {
					b.Close()
					return &Prepared{Ordered: true}, nil
				}
			}
			if err := e.ApplyRowEvent(b, own, ev.Type, r); err != nil {
				return fail(fmt.Errorf("replaying GTID %s:%d: %w", trx.GTID.SID, trx.GTID.GNO, err))
			}
		case binlog.RowsQueryEvent:
			payload, ok := binlog.CatalogPayload(ev.Body())
			if !ok {
				continue
			}
			if ahead {
				b.Close()
				return &Prepared{Ordered: true}, nil
			}
			c, err := DecodeCatalogChange(payload)
			if err != nil {
				b.Close()
				return nil, err
			}
			if err := e.PrepareCatalog(b, c); err != nil {
				b.Close()
				return nil, fmt.Errorf("replaying GTID %s:%d: %w", trx.GTID.SID, trx.GTID.GNO, err)
			}
			p.changes = append(p.changes, c)
		}
	}
	b.SetGTID(trx.GTID.SID, trx.GTID.GNO)
	p.b = b
	return p, nil
}

// Stale reports whether the catalog changed since p was prepared: it
// must be prepared again.
func (e *Engine) Stale(p *Prepared) bool { return p.version != e.CatalogVersion() }

// ApplyPrepared applies prepared transactions in order, each ending at
// its position in a synced binlog, then publishes the catalog changes
// they carry. Only the last may change the catalog.
func (e *Engine) ApplyPrepared(ps []*Prepared, ends []binlog.Position) error {
	batches := make([]*Batch, len(ps))
	for i, p := range ps {
		if p.b == nil {
			return fmt.Errorf("storage: applying a transaction that was not prepared")
		}
		if p.ChangesCatalog() && i != len(ps)-1 {
			return fmt.Errorf("storage: a catalog change applied before other transactions prepared against the catalog it changes")
		}
		batches[i] = p.b
	}
	// Open syncs the binlog before replaying from it.
	if err := e.Apply(batches, ends, true); err != nil {
		return err
	}
	for _, p := range ps {
		p.b = nil
		for _, c := range p.changes {
			e.PublishCatalog(c)
		}
	}
	return nil
}
