package server

import (
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/lockstepdb/lockstep/internal/protocol"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// Connection timeouts, as mysqld's:
//
//   - connect_timeout bounds the whole connection phase (TLS handshake and
//     authentication) from accept, so that connections that never log in
//     do not hold max_connections' slots;
//   - wait_timeout bounds the wait for a client's next command; a session
//     of a client that announced CLIENT_INTERACTIVE starts with
//     interactive_timeout instead, as in mysqld. The client is told why it
//     was disconnected (error 4031, as MySQL 8.0.24 and later);
//   - net_read_timeout bounds reading the rest of a command once it has
//     started arriving, net_write_timeout each write of results.
//
// The session's values are read when it logs in and again after any SET
// statement that mentions a timeout (SET SESSION wait_timeout = ...), and
// so is max_execution_time (sessionlimits.go). A
// binlog dump has none of them: a replica may stay quiet for longer than
// any of them between semi-sync ACKs.

// connectTimeout reads connect_timeout.
func connectTimeout() time.Duration {
	_, v, _ := sql.SystemVariables.GetGlobal("connect_timeout")
	return time.Duration(sqlengine.IntValue(v)) * time.Second
}

// startTimeouts applies the session's timeouts once c has logged in; an
// interactive client's session gets interactive_timeout as wait_timeout.
func (s *Server) startTimeouts(c *mysql.Conn, w *protocol.Conn) {
	_ = w.Conn.SetDeadline(time.Time{}) // the end of connect_timeout
	if w.Interactive() {
		if v, ok := s.sql.SessionVariable(c.ConnectionID, "interactive_timeout"); ok {
			_ = s.sql.SetSessionVariable(c.ConnectionID, "wait_timeout", v)
		}
	}
	s.refreshTimeouts(c, w)
}

// refreshTimeouts reads the session's timeouts into the connection.
func (s *Server) refreshTimeouts(c *mysql.Conn, w *protocol.Conn) {
	for _, t := range []struct {
		name string
		to   interface{ Store(int64) }
	}{
		{"wait_timeout", &w.WaitTimeout},
		{"net_read_timeout", &w.ReadTimeout},
		{"net_write_timeout", &w.WriteTimeout},
	} {
		if v, ok := s.sql.SessionVariable(c.ConnectionID, t.name); ok {
			t.to.Store(sqlengine.IntValue(v) * int64(time.Second))
		}
	}
	if v, ok := s.sql.SessionVariable(c.ConnectionID, "max_execution_time"); ok {
		w.ExecTimeout.Store(sqlengine.IntValue(v) * int64(time.Millisecond))
	}
	if s.member != nil {
		w.SyncMask.Store(s.sessionSyncMask(c))
	}
}

// afterStatement refreshes the timeouts after a statement that may have
// changed one: a SET that mentions a timeout, max_execution_time or a
// cluster member's causal-read setting (checked cheaply, as this runs
// after every query).
func (s *Server) afterStatement(c *mysql.Conn, query string) {
	q := strings.TrimLeft(bareStatement(query), " \t\r\n")
	if len(q) < 3 || !strings.EqualFold(q[:3], "set") {
		return
	}
	if slowSettingChanged(q) {
		s.refreshSlowLog()
	}
	if l := strings.ToLower(q); !strings.Contains(l, "timeout") && !strings.Contains(l, "execution_time") &&
		!strings.Contains(l, "sync_wait") && !strings.Contains(l, "consistency") {
		return
	}
	if w, ok := c.Conn.(*protocol.Conn); ok {
		s.refreshTimeouts(c, w)
	}
}
