package server

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
)

// max_prepared_stmt_count bounds the prepared statements of all
// connections together (each holds its text, its parsed form and, on the
// fast path, a plan), so that a client preparing statements without end
// cannot exhaust memory: past it, COM_STMT_PREPARE gets MySQL's 1461.
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
		w.stmts = map[uint32]struct{}{}
	}
	w.stmts[p.StatementID] = struct{}{}
	total := s.prepared.Add(1)
	_, v, _ := sql.SystemVariables.GetGlobal("max_prepared_stmt_count")
	if limit := toInt64(v); total > limit {
		delete(c.PrepareData, p.StatementID)
		w.stmtClosed(p.StatementID)
		return mysql.NewSQLError(erMaxPreparedStmtCount, "42000", "Can't create more than max_prepared_stmt_count statements (current value: %d)", limit)
	}
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

// stmtClosed uncounts statement id of the connection, if it was counted.
func (c *wireConn) stmtClosed(id uint32) {
	c.longDataUsed(id)
	if _, ok := c.stmts[id]; ok && c.l.prepared != nil {
		delete(c.stmts, id)
		c.l.prepared.Add(-1)
	}
}

// stmtsClosed uncounts every statement of the connection.
func (c *wireConn) stmtsClosed() {
	if c.l.prepared != nil {
		c.l.prepared.Add(-int64(len(c.stmts)))
	}
	c.stmts = nil
	c.longData, c.longTotal = nil, 0
}

func (s *Server) preparedStatus(live map[string]func() any) {
	live["Prepared_stmt_count"] = func() any { return s.prepared.Load() }
}
