package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	gmsserver "github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/lockstepdb/lockstep/internal/protocol"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// Limits on sessions and statements, as MySQL 8.4 has them:
//
//   - max_user_connections: at login, an account that already has that
//     many connections gets 1203 (0: no limit). Accounts are counted as
//     MySQL counts them, by the user@host entry the login matched.
//   - offline_mode: while ON, logins of accounts without CONNECTION_ADMIN
//     (or SUPER) get 3032, and turning it ON disconnects the clients of
//     such accounts that are connected.
//   - max_execution_time: a SELECT (the statements MySQL applies it to)
//     that runs longer than the session's value, or than its
//     MAX_EXECUTION_TIME(n) optimizer hint, is stopped with 3024.
//
// The registry of authenticated connections here is what the first two
// count and walk; a connection enters it at login and leaves it when it
// closes.
//
// Password policies and host blocking are not implemented: the variables
// that would configure them (password_history, password_reuse_interval,
// default_password_lifetime, max_connect_errors) are read-only and show
// what the server does, none of either.

// MySQL's errors for these limits.
const (
	erTooManyUserConnections = 1203 // ER_TOO_MANY_USER_CONNECTIONS
	erQueryTimeout           = 3024 // ER_QUERY_TIMEOUT
	erServerOfflineMode      = 3032 // ER_SERVER_OFFLINE_MODE
)

// sessions is the registry of authenticated connections.
type sessions struct {
	mu      sync.Mutex
	conns   map[uint32]*mysql.Conn
	account map[uint32]string // the account each connection counts for
	perAcct map[string]int
}

func newSessions() *sessions {
	return &sessions{conns: map[uint32]*mysql.Conn{}, account: map[uint32]string{}, perAcct: map[string]int{}}
}

// accountOf names the account c logged in as ('user'@'host' of the entry
// it matched).
func (s *Server) accountOf(c *mysql.Conn) string {
	u, ok := c.UserData.(sql.MysqlConnectionUser)
	if !ok {
		return fmt.Sprintf("'%s'@''", c.User)
	}
	db := s.sql.GMS.Analyzer.Catalog.MySQLDb
	rd := db.Reader()
	defer rd.Close()
	if user := sqlengine.SessionUser(db, rd, sql.Client{User: u.User, Address: u.Host}); user != nil {
		return fmt.Sprintf("'%s'@'%s'", user.User, user.Host)
	}
	return fmt.Sprintf("'%s'@'%s'", u.User, u.Host)
}

// admitSession checks offline_mode and max_user_connections for a
// connection that has just authenticated, and registers it.
func (s *Server) admitSession(c *mysql.Conn) error {
	admin := s.sql.Holds(c, sqlengine.NeedConnectionAdmin)
	if globalInt("offline_mode") != 0 && !admin {
		return mysql.NewSQLError(erServerOfflineMode, "HY000", "The server is currently in offline mode")
	}
	acct := s.accountOf(c)
	limit := globalInt("max_user_connections")
	r := s.sessions
	r.mu.Lock()
	defer r.mu.Unlock()
	if limit > 0 && int64(r.perAcct[acct]) >= limit {
		return mysql.NewSQLError(erTooManyUserConnections, "42000", "User %s already has more than 'max_user_connections' active connections", c.User)
	}
	r.conns[c.ConnectionID] = c
	r.account[c.ConnectionID] = acct
	r.perAcct[acct]++
	return nil
}

// sessionClosed unregisters a connection.
func (s *Server) sessionClosed(c *mysql.Conn) {
	r := s.sessions
	r.mu.Lock()
	defer r.mu.Unlock()
	acct, ok := r.account[c.ConnectionID]
	if !ok {
		return
	}
	delete(r.conns, c.ConnectionID)
	delete(r.account, c.ConnectionID)
	if r.perAcct[acct]--; r.perAcct[acct] <= 0 {
		delete(r.perAcct, acct)
	}
}

// goOffline disconnects the clients of accounts without CONNECTION_ADMIN,
// as turning offline_mode ON does.
func (s *Server) goOffline() {
	r := s.sessions
	r.mu.Lock()
	var out []uint32
	for id, c := range r.conns {
		if !s.sql.Holds(c, sqlengine.NeedConnectionAdmin) {
			out = append(out, id)
		}
	}
	r.mu.Unlock()
	for _, id := range out {
		s.sql.GMS.ProcessList.Kill(id)
		for _, l := range []*gmsserver.Server{s.listener, s.mariadb} {
			if l != nil {
				_ = l.SessionManager().KillConnection(id)
			}
		}
	}
}

func globalInt(name string) int64 {
	_, v, ok := sql.SystemVariables.GetGlobal(name)
	if !ok {
		return 0
	}
	return sqlengine.IntValue(v)
}

// executionHint is SELECT's MAX_EXECUTION_TIME(n) optimizer hint.
var executionHint = regexp.MustCompile(`(?is)^\s*\(*\s*select\s*/\*\+[^*]*?\bmax_execution_time\s*\(\s*(\d+)\s*\)`)

// statementTimeout is how long query may run under max_execution_time
// (0: no limit): only SELECTs are limited, by the hint if they have one,
// else by the session's value.
func (s *Server) statementTimeout(c *mysql.Conn, query string) time.Duration {
	q := strings.TrimLeft(query, " \t\r\n(")
	if !hasPrefixFold(q, "select") {
		return 0
	}
	if strings.Contains(q, "/*+") { // the regexp only for a query with a hint
		if m := executionHint.FindStringSubmatch(query); m != nil {
			ms, _ := strconv.ParseUint(m[1], 10, 32)
			return time.Duration(ms) * time.Millisecond
		}
	}
	if w, ok := c.Conn.(*protocol.Conn); ok {
		return time.Duration(w.ExecTimeout.Load())
	}
	return 0
}

// limitStatement runs query's statement under max_execution_time: run gets
// a context that ends when the time is up, and an error it returns after
// that is 3024.
func (s *Server) limitStatement(ctx context.Context, c *mysql.Conn, query string, run func(context.Context) error) error {
	d := s.statementTimeout(c, query)
	if d <= 0 {
		return run(ctx)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, d, errStatementTimeout)
	defer cancel()
	err := run(ctx)
	if err != nil && errors.Is(context.Cause(ctx), errStatementTimeout) {
		return mysql.NewSQLError(erQueryTimeout, "HY000", "Query execution was interrupted, maximum statement execution time exceeded")
	}
	return err
}

var errStatementTimeout = errors.New("max_execution_time exceeded")

// limitVariables are the variables of these limits, replacing
// go-mysql-server's (which shows them and enforces none).
func (s *Server) limitVariables() []sql.SystemVariable {
	global := sql.GetMysqlScope(sql.SystemVariableScope_Global)
	both := sql.GetMysqlScope(sql.SystemVariableScope_Both)
	readOnly := func(name string, v int64, hi int64) sql.SystemVariable {
		return &sql.MysqlSystemVariable{Name: name, Scope: global, Dynamic: false,
			Type: types.NewSystemIntType(name, 0, hi, false), Default: v}
	}
	return []sql.SystemVariable{
		&sql.MysqlSystemVariable{Name: "max_user_connections", Scope: global, Dynamic: true,
			Type: types.NewSystemIntType("max_user_connections", 0, math.MaxUint32, false), Default: int64(0)},
		// The texts of every connection's prepared statements together
		// (prepared.go).
		&sql.MysqlSystemVariable{Name: "lockstep_max_prepared_stmt_bytes", Scope: global, Dynamic: true,
			Type: types.NewSystemIntType("lockstep_max_prepared_stmt_bytes", 1024, math.MaxInt64, false), Default: int64(16 << 20)},
		&sql.MysqlSystemVariable{Name: "max_execution_time", Scope: both, Dynamic: true,
			Type: types.NewSystemIntType("max_execution_time", 0, math.MaxUint32, false), Default: int64(0)},
		&sql.MysqlSystemVariable{Name: "offline_mode", Scope: global, Dynamic: true,
			Type: types.NewSystemBoolType("offline_mode"), Default: int8(0),
			NotifyChanged: func(_ *sql.Context, _ sql.SystemVariableScope, v sql.SystemVarValue) error {
				if sqlengine.IntValue(v.Val) != 0 {
					go s.goOffline() // not under the variable registry's lock
				}
				return nil
			}},
		readOnly("password_history", 0, math.MaxUint32),
		readOnly("password_reuse_interval", 0, math.MaxUint32),
		readOnly("default_password_lifetime", 0, 65535),
		// The creator of a procedure gets no privileges on it (call.go).
		&sql.MysqlSystemVariable{Name: "automatic_sp_privileges", Scope: global, Dynamic: false,
			Type: types.NewSystemBoolType("automatic_sp_privileges"), Default: int8(0)},
		// Hosts are never blocked: the largest value says so.
		&sql.MysqlSystemVariable{Name: "max_connect_errors", Scope: global, Dynamic: false,
			Type: types.NewSystemUintType("max_connect_errors", 1, math.MaxUint64), Default: uint64(math.MaxUint64)},
	}
}
