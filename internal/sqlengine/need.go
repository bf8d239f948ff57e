package sqlengine

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/lockstepdb/lockstep/internal/mysqlerr"
)

// Privileges of what Lockstep answers itself, before go-mysql-server
// (which checks its own statements): the statements the server and its
// administration package intercept (gtid_next, replica control and
// status, binlog administration, KILL, SHUTDOWN, CLONE, ...) and the
// replication protocol commands. Each Need names what MySQL 8.4
// requires; holding any one of the privileges listed is enough. SUPER
// (deprecated in MySQL) counts where MySQL still accepts it: for the
// administrative privileges it was split into (the dynamic ones here) and
// REPLICATION CLIENT; not for RELOAD or REPLICATION SLAVE, which it never
// stood for. Roles granted to the account count, as they do for
// go-mysql-server's own checks. A denial is MySQL's 1227 with its text
// and SQLSTATE 42000.

// Need is what a statement requires: one of its privileges.
type Need struct {
	Static  []sql.PrivilegeType
	Dynamic []string // lower case, as go-mysql-server keeps them
	Super   bool     // SUPER is enough too
}

var (
	// NeedGTIDNext: SET gtid_next. (SET GLOBAL is checked where
	// go-mysql-server sets it: the variable registry.)
	NeedGTIDNext = Need{Dynamic: []string{"system_variables_admin", "session_variables_admin", "replication_applier"}, Super: true}
	// NeedReplicaAdmin: CHANGE REPLICATION SOURCE, START/STOP REPLICA.
	NeedReplicaAdmin = Need{Dynamic: []string{"replication_slave_admin"}, Super: true}
	// NeedReload: RESET REPLICA, FLUSH.
	NeedReload = Need{Static: []sql.PrivilegeType{sql.PrivilegeType_Reload}}
	// NeedReplicationClient: SHOW REPLICA STATUS, SHOW BINARY LOG STATUS.
	NeedReplicationClient = Need{Static: []sql.PrivilegeType{sql.PrivilegeType_ReplicationClient}, Super: true}
	// NeedBinlogAdmin: PURGE BINARY LOGS.
	NeedBinlogAdmin = Need{Dynamic: []string{"binlog_admin"}, Super: true}
	// NeedConnectionAdmin: the connection max_connections keeps for
	// administrators, KILL of another account's connection, ALTER
	// INSTANCE RELOAD TLS.
	NeedConnectionAdmin = Need{Dynamic: []string{"connection_admin"}, Super: true}
	// NeedReplicationSlave: COM_REGISTER_SLAVE, the dump commands, SHOW
	// REPLICAS.
	NeedReplicationSlave = Need{Static: []sql.PrivilegeType{sql.PrivilegeType_ReplicationSlave}}
	// NeedBackupAdmin: LOCK INSTANCE FOR BACKUP, CLONE.
	NeedBackupAdmin = Need{Dynamic: []string{"backup_admin"}, Super: true}
	// NeedGroupAdmin: Group Replication's functions.
	NeedGroupAdmin = Need{Dynamic: []string{"group_replication_admin"}, Super: true}
	// NeedProcess: SHOW ENGINE ... STATUS.
	NeedProcess = Need{Static: []sql.PrivilegeType{sql.PrivilegeType_Process}}
	// NeedShutdown: SHUTDOWN, COM_SHUTDOWN.
	NeedShutdown = Need{Static: []sql.PrivilegeType{sql.PrivilegeType_Shutdown}}
)

// Names lists the privileges as MySQL's message does.
func (n Need) Names() string {
	var out []string
	if n.Super {
		out = append(out, "SUPER")
	}
	for _, p := range n.Static {
		out = append(out, p.String())
	}
	for _, d := range n.Dynamic {
		out = append(out, strings.ToUpper(d))
	}
	return strings.Join(out, " or ")
}

// Denied is MySQL's 1227 for a statement that needs n.
func (n Need) Denied() error {
	return mysql.NewSQLError(mysqlerr.SpecificAccessDenied, "42000", "Access denied; you need (at least one of) the %s privilege(s) for this operation", n.Names())
}

// Require returns nil if the connection's account (with its roles) holds
// one of n's privileges, and MySQL's 1227 otherwise.
func (e *Engine) Require(c *mysql.Conn, n Need) error {
	if e.Holds(c, n) {
		return nil
	}
	return n.Denied()
}

// ConnPrivileges returns the privileges of c's account with its roles.
func (e *Engine) ConnPrivileges(c *mysql.Conn) (mysql_db.PrivilegeSet, bool) {
	u, ok := c.UserData.(sql.MysqlConnectionUser)
	if !ok {
		return mysql_db.PrivilegeSet{}, false
	}
	db := e.GMS.Analyzer.Catalog.MySQLDb
	rd := db.Reader()
	defer rd.Close()
	user := SessionUser(db, rd, sql.Client{User: u.User, Address: u.Host})
	if user == nil {
		return mysql_db.PrivilegeSet{}, false
	}
	return AccountPrivileges(rd, user), true
}

// Holds reports whether c's account (with its roles) holds one of n's
// privileges.
func (e *Engine) Holds(c *mysql.Conn, n Need) bool {
	set, ok := e.ConnPrivileges(c)
	if !ok {
		return false
	}
	return HasNeed(set, n)
}

// HasNeed reports whether set holds one of n's privileges.
func HasNeed(set mysql_db.PrivilegeSet, n Need) bool {
	if n.Super && set.Has(sql.PrivilegeType_Super) {
		return true
	}
	for _, p := range n.Static {
		if set.Has(p) {
			return true
		}
	}
	for _, d := range n.Dynamic {
		if set.HasDynamic(d) {
			return true
		}
	}
	return false
}
