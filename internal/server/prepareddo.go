package server

// A DO prepared with COM_STMT_PREPARE. vitess parses the statement itself
// and has no DO: sqlengine.CheckPrepare gives it the SELECT of the same
// expressions (sqlengine/do.go) and says it was a DO, and the statement
// is noted here, by connection, until the handler's prepare takes it. It
// is prepared with no result columns, and each execution runs the SELECT
// (its expressions' effects, and its errors, are DO's) and answers with
// one OK, as MySQL answers DO. A statement is known by its PrepareData,
// the protocol library's, which a closed statement's id no longer finds.

import (
	"sync"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
)

type preparedDos struct {
	// pending: the connections whose prepare now in flight is a DO.
	pending sync.Map // connID -> struct{}
	// byConn: each connection's prepared DOs (its goroutine only).
	byConn sync.Map // connID -> map[uint32]*mysql.PrepareData
}

// checkPrepare is the protocol's CheckPrepare: the SQL layer's, noting
// whether the statement is a DO. Every COM_STMT_PREPARE passes here
// first, so a note left by one that vitess then refused (a syntax error;
// the handler never saw it) is gone before the next.
func (s *Server) checkPrepare(connID uint32, query string) (string, error) {
	text, do, err := s.sql.CheckPrepare(connID, query)
	err = unsupportedSyntax(query, err) // stmterrors.go
	if err == nil && do {
		s.dos.pending.Store(connID, struct{}{})
	} else {
		s.dos.pending.Delete(connID)
	}
	return text, err
}

// prepared notes that c's statement p, just prepared, is a DO if its
// check said so, and reports whether it is. failed: the prepare failed.
func (d *preparedDos) prepared(c *mysql.Conn, p *mysql.PrepareData, failed bool) bool {
	if _, do := d.pending.LoadAndDelete(c.ConnectionID); !do || failed {
		return false
	}
	v, _ := d.byConn.LoadOrStore(c.ConnectionID, map[uint32]*mysql.PrepareData{})
	m := v.(map[uint32]*mysql.PrepareData)
	for id := range m {
		if _, open := c.PrepareData[id]; !open {
			delete(m, id) // closed (COM_STMT_CLOSE does not reach the handler)
		}
	}
	m[p.StatementID] = p
	return true
}

// is reports whether c's statement p is a prepared DO.
func (d *preparedDos) is(c *mysql.Conn, p *mysql.PrepareData) bool {
	v, ok := d.byConn.Load(c.ConnectionID)
	return ok && v.(map[uint32]*mysql.PrepareData)[p.StatementID] == p
}

func (d *preparedDos) forget(connID uint32) {
	d.pending.Delete(connID)
	d.byConn.Delete(connID)
}

// okOnly answers a DO's execution: its rows are dropped and one OK sent.
func okOnly(cb func(*sqltypes.Result) error) func(*sqltypes.Result) error {
	sent := false
	return func(*sqltypes.Result) error {
		if sent {
			return nil
		}
		sent = true
		return cb(&sqltypes.Result{})
	}
}
