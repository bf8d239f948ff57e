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
// The protocol library closes statements (COM_STMT_CLOSE) without telling
// the handler, so a connection's count is its number of open statements as
// last seen at one of its own prepares (and is given back when it closes):
// the total can be above the truth, never below it.

const erMaxPreparedStmtCount = 1461 // ER_MAX_PREPARED_STMT_COUNT_REACHED

// admitPrepare counts p, which the protocol library has just added to c's
// statements, and refuses it (removing it again) past the limit.
func (s *Server) admitPrepare(c *mysql.Conn, p *mysql.PrepareData) error {
	w, ok := c.Conn.(*wireConn)
	if !ok {
		return nil
	}
	n := int64(len(c.PrepareData))
	total := s.prepared.Add(n - w.prepared)
	w.prepared = n
	_, v, _ := sql.SystemVariables.GetGlobal("max_prepared_stmt_count")
	if limit := toInt64(v); total > limit {
		delete(c.PrepareData, p.StatementID)
		w.prepared--
		s.prepared.Add(-1)
		return mysql.NewSQLError(erMaxPreparedStmtCount, "42000", "Can't create more than max_prepared_stmt_count statements (current value: %d)", limit)
	}
	return nil
}

func (s *Server) preparedStatus(live map[string]func() any) {
	live["Prepared_stmt_count"] = func() any { return s.prepared.Load() }
}
