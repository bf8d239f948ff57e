package sqlengine

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// DROP TABLE of tables that do not exist answers as MySQL does: 1051
// "Unknown table 'db.a,db.b'", naming every missing table, and drops
// nothing. go-mysql-server answered 1146 "table not found" for the first
// one, which clients that look for 1051 (schema tools dropping before
// creating) read as another failure.
//
// An account without DROP on a missing table learns nothing from the
// answer: the check leaves the statement to go-mysql-server, whose
// privilege check refuses it, so table existence is not revealed. System
// databases' tables are not Lockstep's store's and are left to it too,
// as is IF EXISTS (a note per missing table). DROP TEMPORARY TABLE looks
// its names up among the session's temporary tables only
// (Session.temporaryOnly): with IF EXISTS, a permanent table of the name
// is passed over with that note, and never dropped.

// checkDropTables refuses a DROP TABLE naming tables that do not exist,
// and a DROP TEMPORARY TABLE naming tables that are not the session's
// temporary tables (1051 for both, as MySQL answers).
func checkDropTables(ctx *sql.Context, st ast.Statement) error {
	d, ok := st.(*ast.DDL)
	if !ok || d.Action != ast.DropStr || d.IfExists || len(d.FromTables) == 0 {
		return nil
	}
	s := sessionOf(ctx)
	if s == nil {
		return nil
	}
	if d.Temporary {
		var missing []string
		for _, tn := range d.FromTables {
			db := tn.DbQualifier.String()
			if db == "" {
				db = ctx.GetCurrentDatabase()
			}
			if _, ok := s.tempTable(db, tn.Name.String()); !ok {
				missing = append(missing, db+"."+tn.Name.String())
			}
		}
		if len(missing) == 0 {
			return nil
		}
		return mysql.NewSQLError(mysql.ERBadTable, "42S02", "Unknown table '%s'", strings.Join(missing, ","))
	}
	var missing []string
	for _, tn := range d.FromTables {
		db := tn.DbQualifier.String()
		if db == "" {
			db = ctx.GetCurrentDatabase()
		}
		name := tn.Name.String()
		if db == "" || isSystemDatabase(db) {
			return nil
		}
		if _, ok := s.eng.store.Table(db, name); ok {
			continue
		}
		if _, ok := s.tempTable(db, name); ok {
			continue
		}
		if !s.holdsOnTable(ctx, sql.PrivilegeType_Drop, db, name) {
			return nil
		}
		missing = append(missing, db+"."+name)
	}
	if len(missing) == 0 {
		return nil
	}
	return mysql.NewSQLError(mysql.ERBadTable, "42S02", "Unknown table '%s'", strings.Join(missing, ","))
}

// isSystemDatabase says whether db is one of the databases go-mysql-server
// serves itself.
func isSystemDatabase(db string) bool {
	switch strings.ToLower(db) {
	case "mysql", "information_schema", "performance_schema", "sys":
		return true
	}
	return false
}

// holdsOnTable says whether the session's account holds priv on table
// name of db (globally, on the database or on the table).
func (s *Session) holdsOnTable(ctx *sql.Context, priv sql.PrivilegeType, db, name string) bool {
	mdb := s.eng.GMS.Analyzer.Catalog.MySQLDb
	if !mdb.Enabled() {
		return true
	}
	set := s.privileges(ctx)
	dbSet := set.Database(db)
	return set.Has(priv) || dbSet.Has(priv) || dbSet.Table(name).Has(priv)
}
