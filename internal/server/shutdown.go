package server

import (
	"regexp"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/lockstepdb/lockstep/internal/protocol"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// SHUTDOWN (and COM_SHUTDOWN, which mysqladmin shutdown sends and the
// wire layer turns into it) stops the server as SIGTERM does: the
// statement is answered with OK, and once the OK is written Run closes
// the server (connections drained, commits finished, the store flushed). It needs SHUTDOWN. A
// program that embeds the server with Start watches ShutdownRequested
// itself.

var shutdownStatement = regexp.MustCompile(`(?is)^\s*shutdown\s*;?\s*$`)

func (s *Server) shutdownStatement(c *mysql.Conn, query string) (*sqltypes.Result, bool, error) {
	if len(query) > 64 || !shutdownStatement.MatchString(query) {
		return nil, false, nil
	}
	if err := s.sql.Require(c, sqlengine.NeedShutdown); err != nil {
		return nil, true, err
	}
	s.log.Info("shutdown requested", "user", c.User, "connection", c.ConnectionID)
	stop := func() { s.shutdownOnce.Do(func() { close(s.shutdownCh) }) }
	if w, ok := c.Conn.(*protocol.Conn); ok {
		w.AfterReply(stop) // once the OK is on its way
	} else {
		stop()
	}
	return &sqltypes.Result{}, true, nil
}

// ShutdownRequested is closed when a client asked the server to stop.
func (s *Server) ShutdownRequested() <-chan struct{} { return s.shutdownCh }
