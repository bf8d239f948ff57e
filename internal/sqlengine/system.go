package sqlengine

import (
	"strings"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
)

// System databases are read-only databases whose tables are computed when
// read (performance_schema's replication tables). The SQL layer only
// serves them; what they show is registered by the server, which knows
// the parts (replication) this package must not.

// SystemTableFunc returns a system table's rows when it is read.
type SystemTableFunc func(ctx *sql.Context) ([]sql.Row, error)

type systemDBs struct {
	mu  sync.RWMutex
	dbs map[string]*systemDB // lower-case name
}

// AddSystemTable registers a read-only table db.name with schema sch whose
// rows rows returns.
func (e *Engine) AddSystemTable(db, name string, sch sql.Schema, rows SystemTableFunc) {
	e.addSystemTable(db, newSystemTable(db, name, sch, rows))
}

// AddTruncatableSystemTable is AddSystemTable for a table that TRUNCATE
// TABLE empties by calling reset (performance_schema's summaries).
func (e *Engine) AddTruncatableSystemTable(db, name string, sch sql.Schema, rows SystemTableFunc, reset func()) {
	e.addSystemTable(db, &truncatableSystemTable{systemTable: newSystemTable(db, name, sch, rows), reset: reset})
}

func (e *Engine) addSystemTable(db string, t sql.Table) {
	e.system.mu.Lock()
	defer e.system.mu.Unlock()
	if e.system.dbs == nil {
		e.system.dbs = map[string]*systemDB{}
	}
	d := e.system.dbs[strings.ToLower(db)]
	if d == nil {
		d = &systemDB{name: db, tables: map[string]sql.Table{}}
		e.system.dbs[strings.ToLower(db)] = d
	}
	d.tables[strings.ToLower(t.Name())] = t
}

func (e *Engine) systemDB(name string) (*systemDB, bool) {
	e.system.mu.RLock()
	defer e.system.mu.RUnlock()
	d, ok := e.system.dbs[strings.ToLower(name)]
	return d, ok
}

func (e *Engine) systemDBList() []sql.Database {
	e.system.mu.RLock()
	defer e.system.mu.RUnlock()
	var out []sql.Database
	for _, d := range e.system.dbs {
		out = append(out, d)
	}
	return out
}

type systemDB struct {
	noRoutines
	name   string
	tables map[string]sql.Table // set before the server serves
}

var (
	_ sql.Database                = (*systemDB)(nil)
	_ sql.TriggerDatabase         = (*systemDB)(nil)
	_ sql.StoredProcedureDatabase = (*systemDB)(nil)
	_ sql.EventDatabase           = (*systemDB)(nil)
)

func (d *systemDB) Name() string { return d.name }

func (d *systemDB) GetTableInsensitive(_ *sql.Context, name string) (sql.Table, bool, error) {
	t, ok := d.tables[strings.ToLower(name)]
	return t, ok, nil
}

func (d *systemDB) GetTableNames(*sql.Context) ([]string, error) {
	var out []string
	for _, t := range d.tables {
		out = append(out, t.Name())
	}
	return out, nil
}

type systemTable struct {
	name string
	sch  sql.Schema
	rows SystemTableFunc
}

var _ sql.Table = (*systemTable)(nil)

// newSystemTable is table db.name with schema sch whose rows rows returns.
func newSystemTable(db, name string, sch sql.Schema, rows SystemTableFunc) *systemTable {
	for _, c := range sch {
		c.Source, c.DatabaseSource = name, db
	}
	return &systemTable{name: name, sch: sch, rows: rows}
}

func (t *systemTable) Name() string                   { return t.name }
func (t *systemTable) String() string                 { return t.name }
func (t *systemTable) Schema(*sql.Context) sql.Schema { return t.sch }
func (t *systemTable) Collation() sql.CollationID     { return sql.Collation_Default }
func (t *systemTable) Partitions(*sql.Context) (sql.PartitionIter, error) {
	return sql.PartitionsToPartitionIter(systemPartition{}), nil
}

func (t *systemTable) PartitionRows(ctx *sql.Context, _ sql.Partition) (sql.RowIter, error) {
	rows, err := t.rows(ctx)
	if err != nil {
		return nil, err
	}
	return sql.RowsToRowIter(rows...), nil
}

// truncatableSystemTable is a system table TRUNCATE TABLE empties.
type truncatableSystemTable struct {
	*systemTable
	reset func()
}

var _ sql.TruncateableTable = (*truncatableSystemTable)(nil)

// Truncate implements sql.TruncateableTable; the count of rows removed is
// 0, as MySQL reports for performance_schema tables.
func (t *truncatableSystemTable) Truncate(*sql.Context) (int, error) {
	t.reset()
	return 0, nil
}

type systemPartition struct{}

func (systemPartition) Key() []byte { return []byte("system") }

// A system database has no views; GMS asks every database for them.
var _ sql.ViewDatabase = (*systemDB)(nil)

func (d *systemDB) CreateView(*sql.Context, string, string, string) error {
	return sql.ErrDatabaseWriteLocked.New()
}

func (d *systemDB) DropView(*sql.Context, string) error {
	return sql.ErrDatabaseWriteLocked.New()
}

func (d *systemDB) GetViewDefinition(*sql.Context, string) (sql.ViewDefinition, bool, error) {
	return sql.ViewDefinition{}, false, nil
}

func (d *systemDB) AllViews(*sql.Context) ([]sql.ViewDefinition, error) { return nil, nil }
