package sqlengine

import (
	"context"
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/lockstepdb/lockstep/internal/mysqlerr"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// The table maintenance statements go-mysql-server does not parse: CHECK
// TABLE (mariadb-check and mysqlcheck send it for every table), CHECKSUM
// TABLE, ANALYZE TABLE, OPTIMIZE TABLE and REPAIR TABLE. Each answers per
// table in MySQL's rows (Table, Op, Msg_type, Msg_text; CHECKSUM's are
// Table, Checksum); a table that does not exist gets "Error" and "status
// Operation failed" (CHECKSUM: NULL). Temporary tables, views and system
// tables are not Lockstep's store's and get a note (CHECKSUM: NULL).
//
//   - CHECK verifies each table's secondary indexes against its rows on
//     one snapshot (storage.CheckTable): every row has its entries and
//     every entry belongs to its row. The answer is "status OK", or an
//     "error" row per problem (at most maxCheckProblems) and "error
//     Corrupt". Its options (QUICK, FAST, MEDIUM, EXTENDED, CHANGED, FOR
//     UPGRADE) are accepted, and every check is the full one.
//   - CHECKSUM is storage.ChecksumTable's value: equal on two Lockstep
//     servers with the same rows, not MySQL's. QUICK asks for a live
//     checksum, which Lockstep does not keep: NULL, as MySQL answers for a
//     table without one.
//   - OPTIMIZE compacts the table's range of the store.
//   - ANALYZE and REPAIR have nothing to do (no statistics are kept, and
//     damage is found by CHECK and repaired from a backup or a replica):
//     a note says the table does not support them, as MySQL says of
//     engines that do not.
//
// The account needs SELECT on the table for CHECK and CHECKSUM, and
// SELECT and INSERT for the others, as in MySQL. None is written to the
// binlog.

// maxCheckProblems bounds the problems listed for one table.
const maxCheckProblems = 20

// MaintenanceResult is one row of a maintenance statement's answer
// (Checksum is set only by CHECKSUM TABLE; nil is NULL).
type MaintenanceResult struct {
	Table, Op, MsgType, MsgText string
	Checksum                    *uint64
}

// maintenanceOps are the statements' first words, and the word after
// them (TABLE or TABLES) makes them one.
var maintenanceOps = map[string]bool{
	"check": true, "checksum": true, "analyze": true, "optimize": true, "repair": true,
}

// MaintenanceOp returns the table maintenance statement query is ("check",
// "checksum", "analyze", "optimize" or "repair"), or "" if none.
func MaintenanceOp(query string) string {
	// Every statement passes here: the first word decides, without the
	// tokenizer, for all but these.
	q := strings.TrimLeft(query, " \t\r\n")
	var word [9]byte
	end := 0
	for end < len(q) && end < len(word) && (q[end]|0x20 >= 'a' && q[end]|0x20 <= 'z') {
		word[end] = q[end] | 0x20
		end++
	}
	if !maintenanceOps[string(word[:end])] {
		return ""
	}
	tkn := ast.NewStringTokenizer(query)
	_, val := tkn.Scan()
	op := strings.ToLower(string(val))
	if !maintenanceOps[op] {
		return ""
	}
	typ, val := tkn.Scan()
	// ANALYZE, OPTIMIZE and REPAIR may say LOCAL or NO_WRITE_TO_BINLOG.
	if w := strings.ToLower(string(val)); w == "local" || w == "no_write_to_binlog" {
		typ, val = tkn.Scan()
	}
	if typ == ast.TABLE || strings.EqualFold(string(val), "tables") {
		return op
	}
	return ""
}

// TableMaintenance runs the maintenance statement query (MaintenanceOp
// gives its op) for connection connID.
func (e *Engine) TableMaintenance(ctx context.Context, connID uint32, op, query string) ([]MaintenanceResult, error) {
	sctx, ok := e.SessionContext(connID)
	if !ok {
		return nil, fmt.Errorf("lockstep: no session %d", connID)
	}
	names, opts, err := maintenanceNames(query)
	if err != nil {
		return nil, err
	}
	s := sessionOf(sctx)
	var out []MaintenanceResult
	snap := e.store.NewSnapshot()
	defer snap.Close()
	for _, n := range names {
		db := n[0]
		if db == "" {
			db = sctx.GetCurrentDatabase()
		}
		if db == "" {
			return nil, sql.ErrNoDatabaseSelected.New()
		}
		full := db + "." + n[1]
		if s != nil {
			if err := s.mayMaintain(sctx, op, db, n[1]); err != nil {
				return nil, err
			}
		}
		msg := func(typ, text string) {
			out = append(out, MaintenanceResult{Table: full, Op: op, MsgType: typ, MsgText: text})
		}
		checksum := func(v *uint64) {
			out = append(out, MaintenanceResult{Table: full, Op: op, Checksum: v})
		}
		var t *storage.Table
		temp := false
		if s != nil {
			_, temp = s.tempTable(db, n[1])
		}
		if !temp && !isSystemDatabase(db) {
			t, ok = e.store.Table(db, n[1])
			if !ok {
				if _, isView := e.store.View(db, n[1]); !isView {
					if op == "checksum" {
						sctx.Warn(mysql.ERNoSuchTable, "Table '%s' doesn't exist", full)
						checksum(nil)
						continue
					}
					msg("Error", fmt.Sprintf("Table '%s' doesn't exist", full))
					msg("status", "Operation failed")
					continue
				}
			}
		}
		if t == nil { // a temporary table, a view or a system table
			if op == "checksum" {
				checksum(nil)
			} else {
				msg("note", fmt.Sprintf("The storage engine for the table doesn't support %s", op))
			}
			continue
		}
		switch op {
		case "check":
			problems, err := storage.CheckTable(snap.Reader(), t, maxCheckProblems)
			if err != nil {
				return nil, err
			}
			for _, p := range problems {
				msg("error", p)
			}
			if len(problems) > 0 {
				msg("error", "Corrupt")
			} else {
				msg("status", "OK")
			}
		case "checksum":
			if opts["quick"] {
				checksum(nil)
				continue
			}
			v, err := storage.ChecksumTable(snap.Reader(), t)
			if err != nil {
				return nil, err
			}
			checksum(&v)
		case "optimize":
			if err := e.store.CompactTable(ctx, t); err != nil {
				return nil, err
			}
			msg("status", "OK")
		default: // analyze, repair
			msg("note", fmt.Sprintf("The storage engine for the table doesn't support %s", op))
		}
	}
	return out, nil
}

// maintenanceNames reads the [db.]table names of a maintenance statement
// (OP [LOCAL | NO_WRITE_TO_BINLOG] TABLE | TABLES name, ... [options]),
// and its options, lower-case.
func maintenanceNames(query string) ([][2]string, map[string]bool, error) {
	tkn := ast.NewStringTokenizer(query)
	tkn.Scan() // the op
	if _, val := tkn.Scan(); !strings.EqualFold(string(val), "table") && !strings.EqualFold(string(val), "tables") {
		tkn.Scan() // LOCAL or NO_WRITE_TO_BINLOG, then TABLE
	}
	var names [][2]string
	opts := map[string]bool{}
	syntax := func() error {
		return mysql.NewSQLError(mysql.ERParseError, mysql.SSClientError, "You have an error in your SQL syntax near '%s'", query)
	}
	name := func(typ int, val []byte) bool { return typ == ast.ID || typ >= 256 && len(val) > 0 }
	for {
		typ, val := tkn.Scan()
		if !name(typ, val) {
			return nil, nil, syntax()
		}
		n := [2]string{"", string(val)}
		typ, val = tkn.Scan()
		if typ == '.' {
			typ, val = tkn.Scan()
			if !name(typ, val) {
				return nil, nil, syntax()
			}
			n = [2]string{n[1], string(val)}
			typ, val = tkn.Scan()
		}
		names = append(names, n)
		if typ == ',' {
			continue
		}
		for typ != 0 && typ != ';' {
			w := strings.ToLower(string(val))
			if typ != ast.FOR && !maintenanceOptions[w] {
				return nil, nil, syntax()
			}
			opts[w] = true
			typ, val = tkn.Scan()
		}
		return names, opts, nil
	}
}

// maintenanceOptions are the words that may follow the names (UPGRADE
// after FOR; USE_FRM is REPAIR's).
var maintenanceOptions = map[string]bool{
	"quick": true, "fast": true, "medium": true, "extended": true, "changed": true,
	"upgrade": true, "use_frm": true,
}

// mayMaintain refuses op on table name of db unless the session's
// account holds SELECT on it (and INSERT, but for CHECK and CHECKSUM),
// globally, on the database or on the table.
func (s *Session) mayMaintain(ctx *sql.Context, op, db, name string) error {
	need := []sql.PrivilegeType{sql.PrivilegeType_Select}
	if op != "check" && op != "checksum" {
		need = append(need, sql.PrivilegeType_Insert)
	}
	for _, p := range need {
		if !s.holdsOnTable(ctx, p, db, name) { // droptables.go
			c := ctx.Session.Client()
			return mysql.NewSQLError(mysqlerr.TableAccessDenied, "42000", "%s command denied to user '%s'@'%s' for table '%s'",
				strings.ToUpper(p.String()), c.User, c.Address, name)
		}
	}
	return nil
}
