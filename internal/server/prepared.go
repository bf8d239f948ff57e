package server

import (
	"regexp"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
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
// Each connection keeps the ids of its statements (wireConn.stmts, touched
// by its own goroutine only), and Server.prepared their total, which is
// Prepared_stmt_count: a statement counts from its admission here until
// COM_STMT_CLOSE (seen by the wire layer, since the protocol library does
// not tell the handler), COM_RESET_CONNECTION or the connection's end.

const erMaxPreparedStmtCount = 1461 // ER_MAX_PREPARED_STMT_COUNT_REACHED

// admitPrepare counts p, which the protocol library has just added to c's
// statements, and refuses it (removing it again) past the limit.
func (s *Server) admitPrepare(c *mysql.Conn, p *mysql.PrepareData) error {
	w, ok := c.Conn.(*wireConn)
	if !ok {
		return nil
	}
	if w.stmts == nil {
		w.stmts = map[uint32]string{}
	}
	w.stmts[p.StatementID] = ""
	total := s.prepared.Add(1) + s.sql.SQLPrepared.Load()
	_, v, _ := sql.SystemVariables.GetGlobal("max_prepared_stmt_count")
	if limit := toInt64(v); total > limit {
		delete(c.PrepareData, p.StatementID)
		w.stmtClosed(p.StatementID)
		return mysql.NewSQLError(erMaxPreparedStmtCount, "42000", "Can't create more than max_prepared_stmt_count statements (current value: %d)", limit)
	}
	n := int64(len(p.PrepareStmt))
	if err := s.sql.AdmitPreparedBytes(n, &s.preparedBytes); err != nil {
		delete(c.PrepareData, p.StatementID)
		w.stmtClosed(p.StatementID)
		return err
	}
	if w.stmtBytes == nil {
		w.stmtBytes = map[uint32]int64{}
	}
	w.stmtBytes[p.StatementID] = n
	return nil
}

// Parameters sent in pieces (COM_STMT_SEND_LONG_DATA) are kept by the
// protocol library until the statement is executed, reset or closed, with
// no limit of their own: a connection's pieces together are bounded by
// max_allowed_packet, as one command is (past it, 1153 and the connection
// ends, as for a command too large).

// admitLongData counts n more bytes of long data for statement id and
// reports whether the connection's total stays within limit.
func (c *wireConn) admitLongData(id uint32, n, limit int64) bool {
	if c.longData == nil {
		c.longData = map[uint32]int64{}
	}
	c.longData[id] += n
	c.longTotal += n
	return c.longTotal <= limit
}

// longDataUsed forgets statement id's long data (executed or reset).
func (c *wireConn) longDataUsed(id uint32) {
	if n, ok := c.longData[id]; ok {
		c.longTotal -= n
		delete(c.longData, id)
	}
}

// stmtKept records the SQL layer's key for statement id (once prepared).
func (c *wireConn) stmtKept(id uint32, key string) {
	if _, ok := c.stmts[id]; ok {
		c.stmts[id] = key
	}
}

// stmtClosed uncounts statement id of the connection, if it was counted,
// and lets the SQL layer drop what it kept for it.
func (c *wireConn) stmtClosed(id uint32) {
	c.longDataUsed(id)
	if n, ok := c.stmtBytes[id]; ok && c.l.preparedBytes != nil {
		delete(c.stmtBytes, id)
		c.l.preparedBytes.Add(-n)
	}
	if key, ok := c.stmts[id]; ok && c.l.prepared != nil {
		delete(c.stmts, id)
		c.l.prepared.Add(-1)
		if key != "" && c.l.releaseStatement != nil {
			c.l.releaseStatement(c.connID, key)
		}
	}
}

// stmtsClosed uncounts every statement of the connection (its session,
// and what the SQL layer kept in it, ends or is replaced).
func (c *wireConn) stmtsClosed() {
	if c.l.prepared != nil {
		c.l.prepared.Add(-int64(len(c.stmts)))
	}
	c.stmts = nil
	if c.l.preparedBytes != nil {
		for _, n := range c.stmtBytes {
			c.l.preparedBytes.Add(-n)
		}
	}
	c.stmtBytes = nil
	c.longData, c.longTotal = nil, 0
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
	if limit := toInt64(v); s.prepared.Load()+s.sql.SQLPrepared.Load() >= limit {
		return nil, true, mysql.NewSQLError(erMaxPreparedStmtCount, "42000", "Can't create more than max_prepared_stmt_count statements (current value: %d)", limit)
	}
	return nil, false, nil
}
