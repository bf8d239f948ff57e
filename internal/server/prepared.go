package server

import (
	"regexp"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/lockstepdb/lockstep/internal/protocol"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// max_prepared_stmt_count bounds the prepared statements of all
// connections together (each holds its text, its parsed form and, on the
// fast path, a plan), so that a client preparing statements without end
// cannot exhaust memory: past it, COM_STMT_PREPARE and SQL PREPARE get
// MySQL's 1461. Statements prepared with SQL PREPARE are kept by the
// session and counted by sqlengine (Engine.SQLPrepared).
//
// A count alone does not bound memory: a statement's parsed and planned
// form takes about a hundred times its text (a 500 KB select list held
// 45 MB), so 60 of them from one SELECT-only account took 2.7 GB.
// lockstep_max_prepared_stmt_bytes bounds their texts together (both
// kinds; 16 MiB by default, far above what applications prepare), with
// the same 1461 past it.
//
// Each connection keeps the ids of its statements (protocol.Conn's, touched
// by its own goroutine only), and Server.prepared their total, which is
// Prepared_stmt_count: a statement counts from its admission here until
// COM_STMT_CLOSE (seen by the wire layer, since the protocol library does
// not tell the handler), COM_RESET_CONNECTION or the connection's end.

const erMaxPreparedStmtCount = 1461 // ER_MAX_PREPARED_STMT_COUNT_REACHED

// admitPrepare counts p, which the protocol library has just added to c's
// statements, and refuses it (removing it again) past the limit.
func (s *Server) admitPrepare(c *mysql.Conn, p *mysql.PrepareData) error {
	w, ok := c.Conn.(*protocol.Conn)
	if !ok {
		return nil
	}
	w.StmtAdmitted(p.StatementID)
	total := s.prepared.Add(1) + s.sql.SQLPrepared.Load()
	_, v, _ := sql.SystemVariables.GetGlobal("max_prepared_stmt_count")
	if limit := sqlengine.IntValue(v); total > limit {
		delete(c.PrepareData, p.StatementID)
		w.StmtClosed(p.StatementID)
		return mysql.NewSQLError(erMaxPreparedStmtCount, "42000", "Can't create more than max_prepared_stmt_count statements (current value: %d)", limit)
	}
	n := int64(len(p.PrepareStmt))
	if err := s.sql.AdmitPreparedBytes(n, &s.preparedBytes); err != nil {
		delete(c.PrepareData, p.StatementID)
		w.StmtClosed(p.StatementID)
		return err
	}
	w.StmtBytes(p.StatementID, n)
	return nil
}

func (s *Server) preparedStatus(live map[string]func() any) {
	live["Prepared_stmt_count"] = func() any { return s.prepared.Load() + s.sql.SQLPrepared.Load() }
}

// sqlPrepare is PREPARE name FROM ... (SQL prepared statements, kept by
// the session and counted by sqlengine).
var sqlPrepare = regexp.MustCompile("(?is)^\\s*prepare\\s+(`[^`]+`|\\w+)\\s+from\\b")

// sqlPrepareLimit refuses, with 1461, a PREPARE that would make the
// statements of all connections, both kinds, exceed
// max_prepared_stmt_count; a PREPARE that replaces one of the session's
// statements adds none. It handles nothing else.
func (s *Server) sqlPrepareLimit(c *mysql.Conn, query string) (*sqltypes.Result, bool, error) {
	q := strings.TrimLeft(query, " \t\r\n")
	if !hasPrefixFold(q, "prepare") {
		return nil, false, nil
	}
	m := sqlPrepare.FindStringSubmatch(q)
	if m == nil {
		return nil, false, nil
	}
	name := strings.Trim(m[1], "`")
	if s.sql.HasPrepared(c.ConnectionID, name) || s.sql.HasPrepared(c.ConnectionID, strings.ToLower(name)) {
		return nil, false, nil
	}
	_, v, _ := sql.SystemVariables.GetGlobal("max_prepared_stmt_count")
	if limit := sqlengine.IntValue(v); s.prepared.Load()+s.sql.SQLPrepared.Load() >= limit {
		return nil, true, mysql.NewSQLError(erMaxPreparedStmtCount, "42000", "Can't create more than max_prepared_stmt_count statements (current value: %d)", limit)
	}
	return nil, false, nil
}
