package sqlengine

import (
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/lockstepdb/lockstep/internal/mysqlerr"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// CHECK TABLE, which go-mysql-server does not parse (mariadb-check and
// mysqlcheck send it for every table). Each table's secondary indexes are
// verified against its rows on one snapshot (storage.CheckTable): every
// row has its entries and every entry belongs to its row. The answer has
// MySQL's shape: per table, "status OK", or an "error" row per problem
// (at most maxCheckProblems) and "error Corrupt"; a table that does not
// exist gets "Error" and "status Operation failed". The options (QUICK,
// FAST, MEDIUM, EXTENDED, CHANGED, FOR UPGRADE) are accepted, and every
// check is the full one. Temporary tables, views and system tables are
// not checked: a note says so, as MySQL says of engines without a check.
// The account needs a privilege on the table, as in MySQL (SELECT here).

// maxCheckProblems bounds the problems listed for one table.
const maxCheckProblems = 20

// CheckResult is one row of CHECK TABLE's answer.
type CheckResult struct{ Table, Op, MsgType, MsgText string }

// IsCheckTable reports whether query is a CHECK TABLE statement.
func IsCheckTable(query string) bool {
	tkn := ast.NewStringTokenizer(query)
	typ, _ := tkn.Scan()
	if typ != ast.CHECK {
		return false
	}
	typ, val := tkn.Scan()
	return typ == ast.TABLE || strings.EqualFold(string(val), "tables")
}

// CheckTables runs CHECK TABLE query for connection connID.
func (e *Engine) CheckTables(connID uint32, query string) ([]CheckResult, error) {
	ctx, ok := e.SessionContext(connID)
	if !ok {
		return nil, fmt.Errorf("lockstep: no session %d", connID)
	}
	names, err := checkTableNames(query)
	if err != nil {
		return nil, err
	}
	s := sessionOf(ctx)
	var out []CheckResult
	snap := e.store.NewSnapshot()
	defer snap.Close()
	for _, n := range names {
		db := n[0]
		if db == "" {
			db = ctx.GetCurrentDatabase()
		}
		if db == "" {
			return nil, sql.ErrNoDatabaseSelected.New()
		}
		full := db + "." + n[1]
		if s != nil && !s.mayRead(ctx, db, n[1]) {
			return nil, mysql.NewSQLError(mysqlerr.TableAccessDenied, "42000", "SELECT command denied to user '%s'@'%s' for table '%s'",
				ctx.Session.Client().User, ctx.Session.Client().Address, n[1])
		}
		note := func(text string) {
			out = append(out, CheckResult{full, "check", "note", text})
		}
		if s != nil {
			if _, temp := s.tempTable(db, n[1]); temp {
				note("The storage engine for the table doesn't support check")
				continue
			}
		}
		if isSystemDatabase(db) {
			note("The storage engine for the table doesn't support check")
			continue
		}
		t, ok := e.store.Table(db, n[1])
		if !ok {
			if _, isView := e.store.View(db, n[1]); isView {
				out = append(out, CheckResult{full, "check", "status", "OK"})
				continue
			}
			out = append(out, CheckResult{full, "check", "Error", fmt.Sprintf("Table '%s' doesn't exist", full)},
				CheckResult{full, "check", "status", "Operation failed"})
			continue
		}
		problems, err := storage.CheckTable(snap.Reader(), t, maxCheckProblems)
		if err != nil {
			return nil, err
		}
		if len(problems) == 0 {
			out = append(out, CheckResult{full, "check", "status", "OK"})
			continue
		}
		for _, p := range problems {
			out = append(out, CheckResult{full, "check", "error", p})
		}
		out = append(out, CheckResult{full, "check", "error", "Corrupt"})
	}
	return out, nil
}

// checkTableNames reads the [db.]table names of CHECK TABLE (or TABLES)
// name, ... [options].
func checkTableNames(query string) ([][2]string, error) {
	tkn := ast.NewStringTokenizer(query)
	tkn.Scan() // CHECK
	tkn.Scan() // TABLE or TABLES
	var names [][2]string
	syntax := func() error {
		return mysql.NewSQLError(mysql.ERParseError, mysql.SSClientError, "You have an error in your SQL syntax near '%s'", query)
	}
	for {
		typ, val := tkn.Scan()
		if typ != ast.ID && !(typ >= 256 && len(val) > 0) {
			return nil, syntax()
		}
		name := [2]string{"", string(val)}
		typ, val = tkn.Scan()
		if typ == '.' {
			typ, val = tkn.Scan()
			if typ != ast.ID && !(typ >= 256 && len(val) > 0) {
				return nil, syntax()
			}
			name = [2]string{name[1], string(val)}
			typ, val = tkn.Scan()
		}
		names = append(names, name)
		if typ == ',' {
			continue
		}
		// The options, then the end.
		for typ != 0 && typ != ';' {
			if typ != ast.FOR && !isCheckOption(val) {
				return nil, syntax()
			}
			typ, val = tkn.Scan()
		}
		return names, nil
	}
}

// isCheckOption says whether val is one of CHECK TABLE's options (UPGRADE
// after FOR).
func isCheckOption(val []byte) bool {
	switch strings.ToLower(string(val)) {
	case "fast", "medium", "changed", "upgrade", "quick", "extended":
		return true
	}
	return false
}

// mayRead says whether the session's account holds SELECT on table name
// of db (globally, on the database or on the table).
func (s *Session) mayRead(ctx *sql.Context, db, name string) bool {
	mdb := s.eng.GMS.Analyzer.Catalog.MySQLDb
	if !mdb.Enabled() {
		return true
	}
	set := s.privileges(ctx)
	dbSet := set.Database(db)
	return set.Has(sql.PrivilegeType_Select) || dbSet.Has(sql.PrivilegeType_Select) ||
		dbSet.Table(name).Has(sql.PrivilegeType_Select)
}
