package server

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// Privileges of what Lockstep answers itself, before go-mysql-server
// (which checks its own statements): the interceptors (gtid_next,
// replica control and status, binlog administration) and the replication
// protocol commands. Each names what MySQL 8.4 requires; holding any one
// of the privileges listed is enough. SUPER (deprecated in MySQL) counts
// where MySQL still accepts it: for the administrative privileges it was
// split into (the dynamic ones here) and REPLICATION CLIENT; not for
// RELOAD or REPLICATION SLAVE, which it never stood for. Roles granted to the account
// count, as they do for go-mysql-server's own checks. A denial is MySQL's
// 1227 with its text and SQLSTATE 42000.
// MySQL's access-denied errors.
const (
	erSpecificAccessDenied = 1227 // ER_SPECIFIC_ACCESS_DENIED_ERROR
)

type need struct {
	static  []sql.PrivilegeType
	dynamic []string // lower case, as go-mysql-server keeps them
	super   bool     // SUPER is enough too
}

var (
	// SET gtid_next. (SET GLOBAL is checked where go-mysql-server sets
	// it: sqlengine's variable registry.)
	needGTIDNext = need{dynamic: []string{"system_variables_admin", "session_variables_admin", "replication_applier"}, super: true}
	// CHANGE REPLICATION SOURCE, START/STOP REPLICA.
	needReplicaAdmin = need{dynamic: []string{"replication_slave_admin"}, super: true}
	// RESET REPLICA.
	needReload = need{static: []sql.PrivilegeType{sql.PrivilegeType_Reload}}
	// SHOW REPLICA STATUS, SHOW BINARY LOG STATUS.
	needReplicationClient = need{static: []sql.PrivilegeType{sql.PrivilegeType_ReplicationClient}, super: true}
	// PURGE BINARY LOGS.
	needBinlogAdmin = need{dynamic: []string{"binlog_admin"}, super: true}
	// The connection max_connections keeps for administrators.
	needConnectionAdmin = need{dynamic: []string{"connection_admin"}, super: true}
	// COM_REGISTER_SLAVE, the dump commands, SHOW REPLICAS.
	needReplicationSlave = need{static: []sql.PrivilegeType{sql.PrivilegeType_ReplicationSlave}}
)

// names lists the privileges as MySQL's message does.
func (n need) names() string {
	var out []string
	if n.super {
		out = append(out, "SUPER")
	}
	for _, p := range n.static {
		out = append(out, p.String())
	}
	for _, d := range n.dynamic {
		out = append(out, strings.ToUpper(d))
	}
	return strings.Join(out, " or ")
}

// require returns nil if the connection's account (with its roles) holds
// one of n's privileges, and MySQL's 1227 otherwise.
func (s *Server) require(c *mysql.Conn, n need) error {
	if s.holds(c, n) {
		return nil
	}
	return mysql.NewSQLError(erSpecificAccessDenied, "42000", "Access denied; you need (at least one of) the %s privilege(s) for this operation", n.names())
}

// privileges returns the privileges of c's account with its roles.
func (s *Server) privileges(c *mysql.Conn) (mysql_db.PrivilegeSet, bool) {
	u, ok := c.UserData.(sql.MysqlConnectionUser)
	if !ok {
		return mysql_db.PrivilegeSet{}, false
	}
	db := s.sql.GMS.Analyzer.Catalog.MySQLDb
	rd := db.Reader()
	defer rd.Close()
	user := sqlengine.SessionUser(db, rd, sql.Client{User: u.User, Address: u.Host})
	if user == nil {
		return mysql_db.PrivilegeSet{}, false
	}
	return sqlengine.AccountPrivileges(rd, user), true
}

func (s *Server) holds(c *mysql.Conn, n need) bool {
	set, ok := s.privileges(c)
	if !ok {
		return false
	}
	if n.super && set.Has(sql.PrivilegeType_Super) {
		return true
	}
	for _, p := range n.static {
		if set.Has(p) {
			return true
		}
	}
	for _, d := range n.dynamic {
		if set.HasDynamic(d) {
			return true
		}
	}
	return false
}
