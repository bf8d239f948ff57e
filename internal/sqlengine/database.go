package sqlengine

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/commit"
	"github.com/lockstepdb/lockstep/internal/lock"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// provider lists Lockstep's databases to GMS.
type provider struct{ e *Engine }

var (
	_ sql.MutableDatabaseProvider  = provider{}
	_ sql.CollatedDatabaseProvider = provider{}
)

func (p provider) Database(ctx *sql.Context, name string) (sql.Database, error) {
	if sd, ok := p.e.systemDB(name); ok {
		return sd, nil
	}
	d, ok := p.e.store.Database(name)
	if !ok {
		return nil, sql.ErrDatabaseNotFound.New(name)
	}
	return &Database{e: p.e, name: d.Name, coll: sql.CollationID(d.Collation)}, nil
}

func (p provider) HasDatabase(ctx *sql.Context, name string) bool {
	if _, ok := p.e.systemDB(name); ok {
		return true
	}
	_, ok := p.e.store.Database(name)
	return ok
}

func (p provider) AllDatabases(ctx *sql.Context) []sql.Database {
	out := p.e.systemDBList()
	for _, d := range p.e.store.Databases() {
		out = append(out, &Database{e: p.e, name: d.Name, coll: sql.CollationID(d.Collation)})
	}
	return out
}

func (p provider) CreateDatabase(ctx *sql.Context, name string) error {
	return p.CreateCollatedDatabase(ctx, name, sql.Collation_Default)
}

func (p provider) CreateCollatedDatabase(ctx *sql.Context, name string, coll sql.CollationID) error {
	if err := checkIdentifierLength(name); err != nil {
		return err
	}
	if p.HasDatabase(ctx, name) {
		return sql.ErrDatabaseExists.New(name)
	}
	if coll == sql.Collation_Unspecified {
		coll = sql.Collation_Default
	}
	// A statement from a replication source without its own character set
	// or collation gets the source server's default (GMS has put ours in).
	if s := sessionOf(ctx); s != nil && s.replGTID != nil && s.replCollation != 0 && knownCollation(s.replCollation) {
		q := strings.ToUpper(ctx.Query())
		if !strings.Contains(q, "COLLATE") && !strings.Contains(q, "CHARSET") && !strings.Contains(q, "CHARACTER") {
			coll = sql.CollationID(s.replCollation)
		}
	}
	stmt := fmt.Sprintf("CREATE DATABASE %s /*!40100 DEFAULT CHARACTER SET %s COLLATE %s */", quoteIdent(name), coll.CharacterSet().Name(), coll.Name())
	return p.e.ddl(ctx, name, stmt, &storage.CatalogChange{Op: "create_db", DB: &storage.DatabaseDef{Name: name, Collation: uint16(coll)}}, nil)
}

func (p provider) DropDatabase(ctx *sql.Context, name string) error {
	d, ok := p.e.store.Database(name)
	if !ok {
		return sql.ErrDatabaseNotFound.New(name)
	}
	var ids []uint64
	for _, t := range p.e.store.Tables(d.Name) {
		ids = append(ids, t.Def.ID)
	}
	if err := p.e.referencedFromOutside(ctx, d.Name); err != nil {
		return err
	}
	return p.e.ddl(ctx, name, "DROP DATABASE "+quoteIdent(d.Name), &storage.CatalogChange{Op: "drop_db", DB: &d}, ids)
}

// Database is one schema.
type Database struct {
	noRoutines
	e    *Engine
	name string
	coll sql.CollationID
}

var (
	_ sql.Database         = (*Database)(nil)
	_ sql.TableCreator     = (*Database)(nil)
	_ sql.TableDropper     = (*Database)(nil)
	_ sql.CollatedDatabase = (*Database)(nil)
)

func (d *Database) Name() string { return d.name }

func (d *Database) GetTableInsensitive(ctx *sql.Context, name string) (sql.Table, bool, error) {
	if s := sessionOf(ctx); s != nil {
		if t, ok := s.tempTable(d.name, name); ok {
			return t, true, nil // it hides a table of the same name
		}
		if s.temporaryOnly {
			return nil, false, nil
		}
	}
	t, ok := d.e.store.Table(d.name, name)
	if !ok {
		return nil, false, nil
	}
	tab, err := d.e.sqlTable(ctx, d, t)
	if err != nil {
		return nil, false, err
	}
	return tab, true, nil
}

func (d *Database) GetTableNames(ctx *sql.Context) ([]string, error) {
	var names []string
	for _, t := range d.e.store.Tables(d.name) {
		names = append(names, t.Def.Name)
	}
	return names, nil
}

func (d *Database) GetCollation(ctx *sql.Context) sql.CollationID { return d.coll }

func (d *Database) SetCollation(ctx *sql.Context, coll sql.CollationID) error {
	return errNotSupported("ALTER DATABASE ... COLLATE")
}

// IsTransactional implements sql.TransactionDatabase.
func (d *Database) IsTransactional() bool { return true }

// errTableWithoutPK is MySQL's ER_TABLE_WITHOUT_PK.
var errTableWithoutPK = mysql.NewSQLError(3750, "HY000", "Unable to create or change a table without a primary key, when the system variable 'sql_require_primary_key' is set. Add a primary key to the table or unset this variable to avoid this message. Note that tables without a primary key can cause performance problems in row-based replication, so please consult your DBA before changing this setting.")

// requiresPrimaryKey reports whether the session's sql_require_primary_key
// refuses a table without a primary key. Statements replicated from a
// source are not checked, as MySQL's applier does not check them by
// default (REQUIRE_TABLE_PRIMARY_KEY_CHECK = STREAM, and the source
// checked them under its own setting).
func requiresPrimaryKey(ctx *sql.Context) bool {
	if s := sessionOf(ctx); s == nil || s.replGTID != nil {
		return false
	}
	v, err := ctx.GetSessionVariable(ctx, "sql_require_primary_key")
	return err == nil && v != nil && fmt.Sprint(v) != "0"
}

func (d *Database) CreateTable(ctx *sql.Context, name string, sch sql.PrimaryKeySchema, coll sql.CollationID, comment string) error {
	if _, ok := d.e.store.Table(d.name, name); ok {
		return sql.ErrTableAlreadyExists.New(name)
	}
	if _, ok := d.e.store.View(d.name, name); ok {
		return sql.ErrTableAlreadyExists.New(name)
	}
	if len(sch.PkOrdinals) == 0 && requiresPrimaryKey(ctx) {
		return errTableWithoutPK
	}
	if coll == sql.Collation_Unspecified {
		coll = d.coll
	}
	def, err := newTableDef(ctx, d.e.GMS.Analyzer.Catalog, d.e.store.NewTableID(), d.name, name, sch, coll, comment)
	if err != nil {
		return err
	}
	s := sessionOf(ctx)
	if s != nil {
		// The statement's own KEY clauses go in with the table
		// (createindexes.go).
		ixs, spatial, ok, err := s.createIndexes(d.name, name, def)
		if err != nil {
			return err
		}
		if sp := s.likeSpatial(ctx, d.name, name); len(sp) > 0 {
			spatial, ok = sp, true // the columns are the copied table's, in order
		}
		if ok && len(ixs) > 0 {
			def.Indexes, def.NextIndex = ixs, uint32(len(ixs)+1)
			if s.embedded == nil {
				s.embedded = map[uint64][]storage.IndexDef{}
			}
			s.embedded[def.ID] = slices.Clone(ixs)
		}
		if ok && len(spatial) > 0 {
			if err := storeMeta(def, "spatial", spatial); err != nil {
				return err
			}
			if s.embeddedSpatial == nil {
				s.embeddedSpatial = map[uint64][]int{}
			}
			for _, ix := range spatial {
				s.embeddedSpatial[def.ID] = append(s.embeddedSpatial[def.ID], ix.Column)
			}
		}
	}
	stmt, err := createTableText(ctx, def, sch, coll, comment)
	if err != nil {
		return err
	}
	// go-mysql-server adds the table's checks, keys and foreign keys
	// after it: nobody else writes to it before the statement ends.
	if s != nil && s.holdCreated {
		if err := s.holdDDL(ctx, def.ID); err != nil {
			return err
		}
	}
	return d.e.ddl(ctx, d.name, stmt, &storage.CatalogChange{Op: "create_table", Table: def}, nil)
}

func (d *Database) DropTable(ctx *sql.Context, name string) error {
	if s := sessionOf(ctx); s != nil {
		if _, ok := s.tempTable(d.name, name); ok {
			// DROP [TEMPORARY] TABLE drops the temporary table first, at
			// once and for good, committing nothing (as in MySQL).
			delete(s.temp, tempKey(d.name, name))
			return nil
		}
	}
	t, ok := d.e.store.Table(d.name, name)
	if !ok {
		return sql.ErrTableNotFound.New(name)
	}
	stmt := fmt.Sprintf("DROP TABLE %s /* generated by server */", quoteIdent(t.Def.Name))
	if err := d.e.ddl(ctx, d.name, stmt, &storage.CatalogChange{Op: "drop_table", TableID: t.Def.ID}, []uint64{t.Def.ID}); err != nil {
		return err
	}
	d.e.autoinc.forget(t.Def.ID)
	return nil
}

// createTableText is the CREATE TABLE statement logged for a new table (its
// secondary indexes follow as ALTER TABLE statements).
func createTableText(ctx *sql.Context, def *storage.TableDef, sch sql.PrimaryKeySchema, coll sql.CollationID, comment string) (string, error) {
	f := formatter
	var cols []string
	for i, c := range sch.Schema {
		dflt := ""
		if c.Default != nil {
			dflt = c.Default.String()
		}
		onUpdate := ""
		if c.OnUpdate != nil {
			onUpdate = c.OnUpdate.String()
		}
		cols = append(cols, f.GenerateCreateTableColumnDefinition(columnDisplay(c, def.Columns[i]), dflt, onUpdate, coll))
	}
	var pk []string
	for _, i := range def.PK {
		pk = append(pk, def.Columns[i].Name) // the formatter quotes
	}
	if len(pk) > 0 {
		cols = append(cols, f.GenerateCreateTablePrimaryKeyDefinition(pk))
	}
	for _, ix := range def.Indexes {
		var names []string
		for _, c := range ix.Columns {
			names = append(names, quoteIdent(def.Columns[c].Name))
		}
		kind := "KEY"
		if ix.Unique {
			kind = "UNIQUE KEY"
		}
		line := fmt.Sprintf("  %s %s (%s)", kind, quoteIdent(ix.Name), strings.Join(names, ","))
		if ix.Comment != "" {
			line += " COMMENT " + stringLiteral(ix.Comment)
		}
		cols = append(cols, line)
	}
	for _, ix := range tableSpatial(def) {
		cols = append(cols, "  "+spatialIndexText(def, ix))
	}
	return f.GenerateCreateTableStatement(def.Name, cols, "", "", coll.CharacterSet().Name(), coll.Name(), comment), nil
}

// ddl commits one catalog change as its own binlog transaction: the
// change's catalog event and the statement text, with no other commit in
// flight. It ends the session's open transaction first (DDL commits
// implicitly in MySQL) and holds an exclusive metadata lock on each table
// in tables, so it waits for every open transaction that used them.
func (e *Engine) ddl(ctx *sql.Context, db, stmt string, c *storage.CatalogChange, tables []uint64) error {
	// DDL commits the open transaction first, so a READ ONLY one does not
	// stop it; the session's transaction_read_only does, as in MySQL.
	if s := sessionOf(ctx); s != nil && s.replGTID == nil && s.defaultReadOnly(ctx) {
		return errReadOnlyTransaction
	}
	if err := e.writableServer(ctx); err != nil {
		return err
	}
	return e.commitCatalog(ctx, db, stmt, c, tables)
}

// commitCatalog is ddl without the read_only check, for a caller that made
// it itself (an account change checks before go-mysql-server locks the
// accounts, which the check reads).
func (e *Engine) commitCatalog(ctx *sql.Context, db, stmt string, c *storage.CatalogChange, tables []uint64) error {
	s := sessionOf(ctx)
	if s != nil && s.tx != nil && !s.tx.Ended() {
		if err := s.tx.Commit(); err != nil {
			return mysqlError(err)
		}
		s.tx = nil
	}
	owner := e.locks.NewOwner()
	defer e.locks.ReleaseAll(owner)
	timeout := 365 * 24 * time.Hour
	if s != nil {
		timeout = s.lockWaitTimeout(ctx)
	}
	held := false
	for _, id := range tables {
		if s != nil && s.holdsTableLock(id) {
			held = true
			continue // the session holds it already (LOCK TABLES)
		}
		if err := e.locks.Lock(ctx, owner, mdlKey(id), lock.Exclusive, timeout); err != nil {
			return mysqlError(err)
		}
	}
	if held && c.Op == "rewrite_table" && c.Table != nil {
		// The rewritten table takes a new id: the session's LOCK TABLES
		// lock follows it, taken before anyone can know the id.
		if err := s.lockTableID(ctx, c.Table.ID); err != nil {
			return err
		}
	}
	var keep *binlog.GTIDInfo
	if s != nil && s.replGTID != nil {
		if s.replUsed {
			return sql.ErrUnsupportedFeature.New("a replicated DDL statement that needs several catalog changes (CREATE TABLE with foreign keys or checks); create the table on the replica by hand and skip the GTID")
		}
		keep, s.replUsed = s.replGTID, true
	} else if s != nil {
		var err error
		if keep, err = s.keepGTIDNext(); err != nil { // gtidnext.go
			return err
		}
	}
	// The metadata locks hold the tables while a rebuild is written.
	var caller commit.Caller
	if s != nil {
		caller = s.caller(ctx)
	}
	err := ddlError(e.txns.CommitDDL(caller, c, db, stmt, binlog.QueryOptions{ThreadID: uint32(ctx.Session.ID())}, keep))
	if err == nil && s != nil && c.Op == "alter_table" {
		s.noteAltered(c.TableID)
	}
	return err
}

// ddlError maps a DDL's storage error to MySQL's.
func ddlError(err error) error {
	var dup *storage.DuplicateKeyError
	if errors.As(err, &dup) {
		return sql.NewUniqueKeyErr(fmt.Sprintf("Duplicate entry for key '%s'", dup.Table.Def.Indexes[dup.Index].Name), false, nil)
	}
	return mysqlError(err)
}

// mdlKey is the lock-table key of a table's metadata lock (row keys start
// with 0x01, so the spaces cannot meet).
func mdlKey(id uint64) string { return "mdl:" + strconv.FormatUint(id, 10) }

// noRoutines is a database's (empty) stored procedures and events, which
// are not stored yet: lookups find none and creating one is refused with
// 1235 instead of being forgotten. GMS asks every database for them
// (information_schema.ROUTINES, EVENTS; mysqldump). Databases' triggers
// are stored (triggers.go); the system databases have none.
type noRoutines struct{}

var (
	_ sql.TriggerDatabase         = (*Database)(nil)
	_ sql.StoredProcedureDatabase = (*Database)(nil)
	_ sql.EventDatabase           = (*Database)(nil)
)

func (noRoutines) GetTriggers(*sql.Context) ([]sql.TriggerDefinition, error) { return nil, nil }
func (noRoutines) CreateTrigger(*sql.Context, sql.TriggerDefinition) error {
	return mysql.NewSQLError(1465, "HY000", "Triggers can not be created on system tables") // ER_NO_TRIGGERS_ON_SYSTEM_SCHEMA
}
func (noRoutines) DropTrigger(_ *sql.Context, name string) error {
	return sql.ErrTriggerDoesNotExist.New(name)
}

func (noRoutines) GetStoredProcedure(*sql.Context, string) (sql.StoredProcedureDetails, bool, error) {
	return sql.StoredProcedureDetails{}, false, nil
}
func (noRoutines) GetStoredProcedures(*sql.Context) ([]sql.StoredProcedureDetails, error) {
	return nil, nil
}
func (noRoutines) SaveStoredProcedure(*sql.Context, sql.StoredProcedureDetails) error {
	return errNotSupported("CREATE PROCEDURE")
}
func (noRoutines) DropStoredProcedure(_ *sql.Context, name string) error {
	return sql.ErrStoredProcedureDoesNotExist.New(name)
}

func (noRoutines) GetEvent(*sql.Context, string) (sql.EventDefinition, bool, error) {
	return sql.EventDefinition{}, false, nil
}
func (noRoutines) GetEvents(*sql.Context) ([]sql.EventDefinition, any, error) {
	return nil, nil, nil
}
func (noRoutines) SaveEvent(*sql.Context, sql.EventDefinition) (bool, error) {
	return false, errNotSupported("CREATE EVENT")
}
func (noRoutines) DropEvent(_ *sql.Context, name string) error {
	return sql.ErrEventDoesNotExist.New(name)
}
func (noRoutines) UpdateEvent(*sql.Context, string, sql.EventDefinition) (bool, error) {
	return false, errNotSupported("ALTER EVENT")
}
func (noRoutines) NeedsToReloadEvents(*sql.Context, any) (bool, error) { return false, nil }
func (noRoutines) UpdateLastExecuted(*sql.Context, string, time.Time) error {
	return nil
}

var _ sql.TableRenamer = (*Database)(nil)

// RenameTable renames a table within the database (RENAME TABLE, ALTER
// TABLE ... RENAME). It waits for open transactions on the table.
func (d *Database) RenameTable(ctx *sql.Context, oldName, newName string) error {
	if s := sessionOf(ctx); s != nil {
		if tt, ok := s.tempTable(d.name, oldName); ok {
			// A temporary table is renamed in the session alone, at once
			// (ALTER TABLE ... RENAME and RENAME TABLE, as in MySQL 8).
			if _, taken := s.tempTable(d.name, newName); taken {
				return sql.ErrTableAlreadyExists.New(newName)
			}
			if err := checkIdentifierLength(newName); err != nil {
				return err
			}
			delete(s.temp, tempKey(d.name, oldName))
			tt.name = newName
			s.temp[tempKey(d.name, newName)] = tt
			return nil
		}
	}
	t, ok := d.e.store.Table(d.name, oldName)
	if !ok {
		return sql.ErrTableNotFound.New(oldName)
	}
	if _, exists := d.e.store.Table(d.name, newName); exists {
		return sql.ErrTableAlreadyExists.New(newName)
	}
	nd := cloneDef(t.Def)
	nd.Name = newName
	stmt := fmt.Sprintf("RENAME TABLE %s TO %s", quoteIdent(t.Def.Name), quoteIdent(newName))
	return d.e.ddl(ctx, d.name, stmt, &storage.CatalogChange{Op: "rename_table", TableID: nd.ID, Table: nd}, []uint64{nd.ID})
}

// knownCollation reports whether GMS knows collation id c (its table of
// collations is a fixed array that panics past its end).
func knownCollation(c uint16) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return sql.CollationID(c).Name() != ""
}

// checkIdentifierLength refuses a name longer than MySQL's 64 characters
// (1059). go-mysql-server checks the names of tables, columns, indexes
// and constraints, not those of databases and views.
func checkIdentifierLength(name string) error {
	if utf8.RuneCountInString(name) > sql.MaxIdentifierLength {
		return mysql.NewSQLError(erTooLongIdent, "42000", "Identifier name '%s' is too long", name)
	}
	return nil
}

// erTooLongIdent is MySQL's ER_TOO_LONG_IDENT.
const erTooLongIdent = 1059
