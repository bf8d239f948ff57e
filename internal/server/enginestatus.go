package server

// SHOW ENGINE ... STATUS and SHOW ENGINE ... MUTEX, which monitoring tools
// run (mysqld_exporter's engine_innodb_status collector, PMM,
// pt-deadlock-logger). go-mysql-server does not parse them (1064).
//
// Tables say ENGINE=InnoDB, as applications expect, but the store is
// Lockstep's: SHOW ENGINE INNODB STATUS answers with InnoDB's result
// shape (Type, Name, Status) and a text that says so and gives what
// Lockstep has of the same things (row lock waits, deadlocks, the binlog's
// group commit and fsyncs), never made-up InnoDB figures; tools that look
// for InnoDB's sections find none and report nothing. SHOW ENGINE INNODB
// MUTEX has no mutex statistics to give: an empty result. Another engine
// gets MySQL's 1286. Both need PROCESS, as in MySQL.

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

var showEngine = regexp.MustCompile(`(?is)^\s*show\s+engine\s+(\w+)\s+(status|mutex)\s*;?\s*$`)

const erUnknownStorageEngine = 1286 // ER_UNKNOWN_STORAGE_ENGINE

// engineStatement answers SHOW ENGINE name STATUS | MUTEX.
func (s *Server) engineStatement(c *mysql.Conn, query string) (*sqltypes.Result, bool, error) {
	q := strings.TrimLeft(query, " \t\r\n")
	if len(q) < 11 || !strings.EqualFold(q[:4], "show") {
		return nil, false, nil
	}
	m := showEngine.FindStringSubmatch(q)
	if m == nil {
		return nil, false, nil
	}
	if err := s.sql.Require(c, sqlengine.NeedProcess); err != nil {
		return nil, true, err
	}
	if !strings.EqualFold(m[1], "innodb") {
		return nil, true, mysql.NewSQLError(erUnknownStorageEngine, "42000", "Unknown storage engine '%s'", m[1])
	}
	res := &sqltypes.Result{Fields: []*querypb.Field{
		{Name: "Type", Type: sqltypes.VarChar, Charset: 255},
		{Name: "Name", Type: sqltypes.VarChar, Charset: 255},
		{Name: "Status", Type: sqltypes.VarChar, Charset: 255},
	}}
	if strings.EqualFold(m[2], "status") {
		res.Rows = append(res.Rows, []sqltypes.Value{sqltypes.NewVarChar("InnoDB"), sqltypes.NewVarChar(""), sqltypes.NewVarChar(s.engineStatusText())})
	}
	return res, true, nil
}

// engineStatusText is the Status of SHOW ENGINE INNODB STATUS.
func (s *Server) engineStatusText() string {
	stat := func(name string) string {
		if _, v, ok := sql.StatusVariables.GetGlobal(name); ok {
			return fmt.Sprint(v)
		}
		return "-"
	}
	var b strings.Builder
	line := strings.Repeat("=", 37)
	fmt.Fprintf(&b, "\n%s\n%s LOCKSTEP STATUS (asked as INNODB MONITOR OUTPUT)\n%s\n", line, time.Now().Format("2006-01-02 15:04:05"), line)
	b.WriteString("Tables are shown as ENGINE=InnoDB, but the store is Lockstep's (Pebble, with the binlog as\n" +
		"its only log): there are no InnoDB buffer pool, redo log or semaphore figures to show.\n")
	b.WriteString("------------\nTRANSACTIONS\n------------\n")
	fmt.Fprintf(&b, "Row lock waits %s, waiting now %s, total wait %s ms\n", stat("Innodb_row_lock_waits"), stat("Innodb_row_lock_current_waits"), stat("Innodb_row_lock_time"))
	fmt.Fprintf(&b, "Deadlocks detected %s, lock wait timeouts %s\n", stat("Innodb_deadlocks"), stat("Lockstep_lock_wait_timeouts"))
	if s.pipe != nil {
		b.WriteString("--------\nBINLOG\n--------\n")
		fmt.Fprintf(&b, "Commits %s in %s groups, fsyncs %s\n", stat("Binlog_commits"), stat("Binlog_group_commits"), stat("Lockstep_binlog_fsyncs"))
	}
	b.WriteString("----------------------------\nEND OF LOCKSTEP STATUS OUTPUT\n============================\n")
	return b.String()
}
