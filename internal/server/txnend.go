package server

import (
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/lockstepdb/lockstep/internal/protocol"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// txnEndStatement answers COMMIT and ROLLBACK that chain a transaction or
// release the connection (sqlengine/txnend.go). For RELEASE the wire
// layer closes the connection once the OK is on its way, as MySQL does;
// every client connection is the wire layer's.
func (s *Server) txnEndStatement(c *mysql.Conn, query string) (*sqltypes.Result, bool, error) {
	if !sqlengine.MaybeTxnEnd(query) {
		return nil, false, nil
	}
	w, wrapped := c.Conn.(*protocol.Conn)
	if !wrapped {
		return nil, false, nil
	}
	handled, release, err := s.sql.TxnEndStatement(c.ConnectionID, query)
	if !handled || err != nil {
		return nil, handled, err
	}
	if release {
		w.AfterReply(func() { w.Close() })
	}
	return &sqltypes.Result{}, true, nil
}
