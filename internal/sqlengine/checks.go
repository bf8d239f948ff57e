package sqlengine

// CHECK constraints, as in MySQL 8.0.16 and later.
//
// go-mysql-server evaluates them: it asks the table for its checks
// (GetChecks) when it plans an INSERT, UPDATE or REPLACE, fails a row
// that makes one false with 3819, and checks the rows already there when
// ALTER TABLE adds one. Lockstep keeps them in the table's SQL metadata
// and commits each change as an alter_table catalog change whose binlog
// statement is MySQL's own (ALTER TABLE ... ADD CONSTRAINT ... CHECK, DROP
// CONSTRAINT), which MySQL, MariaDB and Lockstep replicas apply.
//
// Invariants:
//   - No row violating an enforced check commits. The fast path takes no
//     write on a table with checks (writesNeedGMS: go-mysql-server
//     evaluates them); a
//     replica applies rows as its source checked them, as MySQL's do.
//   - A check is never added over rows that violate it: the statement
//     that adds one holds the table's exclusive metadata lock from its
//     start (holdDDL), so no write commits between go-mysql-server's scan
//     of the rows and the check's publication. A CREATE TABLE with
//     checks, keys or foreign keys (added after the table) holds its new
//     table the same way until they are added.
//   - Check names are unique in a database (3822), and a name not given
//     is MySQL's: the table's name, "_chk_" and the next number.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/lockstepdb/lockstep/internal/lock"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// checkMeta is one check in a table's SQL metadata.
type checkMeta struct {
	Name     string `json:"name"`
	Expr     string `json:"expr"` // go-mysql-server's serialisation
	Enforced bool   `json:"enforced"`
}

var (
	_ sql.CheckTable          = (*Table)(nil)
	_ sql.CheckAlterableTable = (*Table)(nil)
)

// MySQL's errors for checks.
const (
	erCheckConstraintNotFound = 3821
	erCheckConstraintDupName  = 3822
)

// tableChecks reads the checks of a table definition.
func tableChecks(def *storage.TableDef) []checkMeta { return loadMeta[checkMeta](def, "checks") }

// GetChecks implements sql.CheckTable.
func (t *Table) GetChecks(*sql.Context) ([]sql.CheckDefinition, error) {
	cs := tableChecks(t.st.Def)
	out := make([]sql.CheckDefinition, len(cs))
	for i, c := range cs {
		out[i] = sql.CheckDefinition{Name: c.Name, CheckExpression: c.Expr, Enforced: c.Enforced}
	}
	return out, nil
}

// CreateCheck implements sql.CheckAlterableTable.
func (t *Table) CreateCheck(ctx *sql.Context, def *sql.CheckDefinition) error {
	cur := t.current().Def
	checks := tableChecks(cur)
	name := def.Name
	if name == "" {
		name = nextCheckName(cur.Name, checks)
	}
	for _, other := range t.e.store.Tables(t.db.name) {
		for _, c := range tableChecks(other.Def) {
			if strings.EqualFold(c.Name, name) {
				return mysql.NewSQLError(erCheckConstraintDupName, "HY000", "Duplicate check constraint name '%s'.", name)
			}
		}
	}
	m := checkMeta{Name: name, Expr: def.CheckExpression, Enforced: def.Enforced}
	stmt := fmt.Sprintf("ALTER TABLE %s ADD %s", quoteIdent(cur.Name), checkSQL(m))
	return t.setChecks(ctx, stmt, append(checks, m))
}

// DropCheck implements sql.CheckAlterableTable.
func (t *Table) DropCheck(ctx *sql.Context, name string) error {
	cur := t.current().Def
	checks := tableChecks(cur)
	for i, c := range checks {
		if strings.EqualFold(c.Name, name) {
			stmt := fmt.Sprintf("ALTER TABLE %s DROP CONSTRAINT %s", quoteIdent(cur.Name), quoteIdent(c.Name))
			return t.setChecks(ctx, stmt, append(checks[:i:i], checks[i+1:]...))
		}
	}
	return mysql.NewSQLError(erCheckConstraintNotFound, "HY000", "Check constraint '%s' is not found in the table.", name)
}

func (t *Table) setChecks(ctx *sql.Context, stmt string, checks []checkMeta) error {
	nd := cloneDef(t.current().Def)
	if err := storeMeta(nd, "checks", checks); err != nil {
		return fmt.Errorf("table %s: bad SQL metadata: %w", nd.Name, err)
	}
	return t.e.ddl(ctx, t.db.name, stmt, &storage.CatalogChange{Op: "alter_table", TableID: nd.ID, Table: nd}, []uint64{nd.ID})
}

// checkSQL is a check as a CONSTRAINT clause, as MySQL writes it (its
// SHOW CREATE TABLE and binlog: NOT ENFORCED in a versioned comment).
func checkSQL(c checkMeta) string {
	s := fmt.Sprintf("CONSTRAINT %s CHECK (%s)", quoteIdent(c.Name), c.Expr)
	if !c.Enforced {
		s += " /*!80016 NOT ENFORCED */"
	}
	return s
}

// nextCheckName is MySQL's name for an unnamed check of table.
func nextCheckName(table string, checks []checkMeta) string {
	prefix := strings.ToLower(table) + "_chk_"
	n := 0
	for _, c := range checks {
		if rest, ok := strings.CutPrefix(strings.ToLower(c.Name), prefix); ok {
			if k, err := strconv.Atoi(rest); err == nil && k > n {
				n = k
			}
		}
	}
	return fmt.Sprintf("%s_chk_%d", table, n+1)
}

// loadMeta reads the list kept under key in def's SQL metadata (storeMeta
// writes it): nil if there is none. Most tables have none, and a table's
// metadata is read per statement: it is parsed only if key is in it.
func loadMeta[T any](def *storage.TableDef, key string) []T {
	if !bytes.Contains(def.SQL, []byte(key)) {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(def.SQL, &m); err != nil || m[key] == nil {
		return nil
	}
	var v []T
	if err := json.Unmarshal(m[key], &v); err != nil {
		return nil
	}
	return v
}

// storeMeta sets one key of def's SQL metadata (removing it when v is
// empty), leaving the rest as it is.
func storeMeta[T any](def *storage.TableDef, key string, v []T) error {
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(def.SQL, &meta); err != nil {
		return err
	}
	if len(v) == 0 {
		delete(meta, key)
	} else {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		meta[key] = b
	}
	b, err := json.Marshal(meta)
	if err == nil {
		def.SQL = b
	}
	return err
}

// addsCheck reports the table an ALTER TABLE adds a check to.
func addsCheck(st ast.Statement) (ast.TableName, bool) {
	at, ok := st.(*ast.AlterTable)
	if !ok {
		return ast.TableName{}, false
	}
	for _, d := range at.Statements {
		if d == nil || d.TableSpec == nil {
			continue
		}
		for _, c := range d.TableSpec.Constraints {
			if _, ok := c.Details.(*ast.CheckConstraintDefinition); ok {
				return at.Table, true
			}
		}
	}
	return ast.TableName{}, false
}

// holdForCheck holds the table an ALTER TABLE adds a check to, from the
// statement's start: the statement first commits the session's
// transaction, as DDL does.
func (s *Session) holdForCheck(ctx *sql.Context, st ast.Statement) error {
	if err := s.checkNamesFree(ctx, st); err != nil {
		return err
	}
	if d, ok := st.(*ast.DDL); ok && d.Action == ast.CreateStr && d.TableSpec != nil {
		s.holdCreated = len(d.TableSpec.Constraints) > 0 || len(d.TableSpec.Indexes) > 0
	}
	tn, ok := addsCheck(st)
	if !ok {
		return nil
	}
	db := tn.DbQualifier.String()
	if db == "" {
		db = ctx.GetCurrentDatabase()
	}
	t, ok := s.eng.store.Table(db, tn.Name.String())
	if !ok {
		return nil // go-mysql-server reports it
	}
	if s.tx != nil && !s.tx.Ended() {
		if err := s.tx.Commit(); err != nil {
			return mysqlError(err)
		}
		s.tx = nil
	}
	return s.holdDDL(ctx, t.Def.ID)
}

// checkNamesFree refuses a CREATE TABLE whose named checks are taken in
// its database, or named twice, before go-mysql-server creates the table
// (it adds the checks after, and a failure there would leave the table).
func (s *Session) checkNamesFree(ctx *sql.Context, st ast.Statement) error {
	d, ok := st.(*ast.DDL)
	if !ok || d.Action != ast.CreateStr || d.TableSpec == nil {
		return nil
	}
	db := d.Table.DbQualifier.String()
	if db == "" {
		db = ctx.GetCurrentDatabase()
	}
	taken := map[string]bool{}
	for _, t := range s.eng.store.Tables(db) {
		for _, c := range tableChecks(t.Def) {
			taken[strings.ToLower(c.Name)] = true
		}
	}
	for _, c := range d.TableSpec.Constraints {
		if _, ok := c.Details.(*ast.CheckConstraintDefinition); !ok || c.Name == "" {
			continue
		}
		if taken[strings.ToLower(c.Name)] {
			return mysql.NewSQLError(erCheckConstraintDupName, "HY000", "Duplicate check constraint name '%s'.", c.Name)
		}
		taken[strings.ToLower(c.Name)] = true
	}
	return nil
}

// holdDDL takes table id's exclusive metadata lock for the rest of the
// statement: the statement's own reads, writes and DDL of the table go
// on, everyone else's wait (released by endDDLHold).
func (s *Session) holdDDL(ctx *sql.Context, id uint64) error {
	if s.holdsTableLock(id) {
		return nil
	}
	if s.ddlHold.owner == nil {
		s.ddlHold = sessionTableLocks{owner: s.eng.locks.NewOwner(), ids: map[uint64]bool{}}
	}
	if err := s.eng.locks.Lock(ctx, s.ddlHold.owner, mdlKey(id), lock.Exclusive, s.lockWaitTimeout(ctx)); err != nil {
		return mysqlError(err)
	}
	s.ddlHold.ids[id] = true
	return nil
}

// endDDLHold releases what holdDDL took.
func (s *Session) endDDLHold() {
	if s.ddlHold.owner != nil {
		s.eng.locks.ReleaseAll(s.ddlHold.owner)
		s.ddlHold = sessionTableLocks{}
	}
}
