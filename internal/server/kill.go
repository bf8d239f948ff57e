package server

import (
	"regexp"
	"strconv"
	"strings"

	gmsserver "github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// KILL [CONNECTION | QUERY] id, with MySQL's privileges: any account may
// end its own connections and statements; those of other accounts need
// CONNECTION_ADMIN (or SUPER). go-mysql-server asks SUPER for every KILL,
// one's own included, and CONNECTION_ADMIN cannot be used there.
var killStatement = regexp.MustCompile(`(?i)^\s*KILL\s+(CONNECTION\s+|QUERY\s+)?(\d+)\s*;?\s*$`)

// Errors of KILL.
const (
	erNoSuchThread = 1094 // ER_NO_SUCH_THREAD
	erKillDenied   = 1095 // ER_KILL_DENIED_ERROR
)

func (s *Server) killStatement(c *mysql.Conn, query string) (*sqltypes.Result, bool, error) {
	if len(query) > 64 || !hasPrefixFold(strings.TrimLeft(query, " \t\r\n"), "kill") {
		return nil, false, nil
	}
	m := killStatement.FindStringSubmatch(query)
	if m == nil {
		return nil, false, nil
	}
	id64, err := strconv.ParseUint(m[2], 10, 32)
	if err != nil {
		return nil, true, mysql.NewSQLError(erNoSuchThread, "HY000", "Unknown thread id: %s", m[2])
	}
	id := uint32(id64)
	owner, found := "", false
	for _, p := range s.sql.GMS.ProcessList.Processes() {
		if p.Connection == id {
			owner, found = p.User, true
			break
		}
	}
	if !found {
		return nil, true, mysql.NewSQLError(erNoSuchThread, "HY000", "Unknown thread id: %d", id)
	}
	if owner != c.User && !s.sql.Holds(c, sqlengine.NeedConnectionAdmin) {
		return nil, true, mysql.NewSQLError(erKillDenied, "HY000", "You are not owner of thread %d", id)
	}
	s.sql.GMS.ProcessList.Kill(id)
	if len(m[1]) == 0 || m[1][0] == 'C' || m[1][0] == 'c' {
		// The connection belongs to one of the listeners' session managers;
		// the other ignores the id.
		for _, l := range []*gmsserver.Server{s.listener, s.mariadb} {
			if l != nil {
				_ = l.SessionManager().KillConnection(id)
			}
		}
	}
	return &sqltypes.Result{}, true, nil
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
