package server

import (
	"context"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/lockstepdb/lockstep/internal/sqlengine"
)

// GRANT and REVOKE of the dynamic privileges Lockstep checks but
// go-mysql-server refuses to grant (it knows only REPLICATION_SLAVE_ADMIN
// and CLONE_ADMIN): without this, the only way to let an operator KILL
// others' connections or SET GLOBAL was SUPER, which grants everything.
// A statement naming only such privileges, ON *.*, is applied here to the
// accounts (or roles) in go-mysql-server's mysql database; any other goes
// to go-mysql-server as before. As in MySQL, the grantor must hold each
// privilege WITH GRANT OPTION (or SUPER with GRANT OPTION), and the
// accounts must exist (GRANT: 1410, as MySQL does not create accounts on
// GRANT; REVOKE: 1141).
var grantableDynamic = map[string]bool{
	"connection_admin":        true, // KILL of others, max_connections' reserved slot
	"system_variables_admin":  true, // SET GLOBAL, SET gtid_next
	"session_variables_admin": true, // SET gtid_next
	"binlog_admin":            true, // PURGE BINARY LOGS
	"replication_applier":     true, // SET gtid_next
}

const (
	erCantCreateUserWithGrant = 1410 // ER_CANT_CREATE_USER_WITH_GRANT
	erNonexistingGrant        = 1141 // ER_NONEXISTING_GRANT
)

func (s *Server) grantStatement(c *mysql.Conn, query string) (*sqltypes.Result, bool, error) {
	q := strings.TrimLeft(query, " \t\r\n")
	if len(q) > 4096 || !(hasPrefixFold(q, "grant") || hasPrefixFold(q, "revoke")) {
		return nil, false, nil
	}
	st, n, err := sqlengine.ParseOne(context.Background(), query, ast.ParserOptions{})
	if err != nil || strings.TrimSpace(strings.Trim(query[n:], "; \t\r\n")) != "" {
		return nil, false, nil // go-mysql-server reports it
	}
	var privs []ast.Privilege
	var level ast.PrivilegeLevel
	var accounts []ast.AccountName
	var withGrant, grant bool
	switch n := st.(type) {
	case *ast.GrantPrivilege:
		privs, level, accounts, withGrant, grant = n.Privileges, n.PrivilegeLevel, n.To, n.WithGrantOption, true
		if n.As != nil {
			return nil, false, nil
		}
	case *ast.RevokePrivilege:
		privs, level, accounts = n.Privileges, n.PrivilegeLevel, n.From
	default:
		return nil, false, nil
	}
	var names []string
	for _, p := range privs {
		name := strings.ToLower(p.DynamicName)
		if p.Type != ast.PrivilegeType_Dynamic || !grantableDynamic[name] {
			return nil, false, nil
		}
		names = append(names, name)
	}
	if len(names) == 0 || level.Database != "*" || level.TableRoutine != "*" {
		return nil, false, nil
	}
	if !s.mayGrant(c, names) {
		return nil, true, mysql.NewSQLError(erSpecificAccessDenied, "42000",
			"Access denied; you need (at least one of) the %s privilege(s) with GRANT OPTION for this operation", strings.ToUpper(strings.Join(names, ", ")))
	}
	db := s.sql.GMS.Analyzer.Catalog.MySQLDb
	ed := db.Editor()
	defer ed.Close()
	var users []*mysql_db.User
	for _, a := range accounts {
		host := a.Host
		if a.AnyHost || host == "" {
			host = "%"
		}
		u, ok := ed.GetUser(mysql_db.UserPrimaryKey{Host: host, User: a.Name})
		if !ok && grant {
			return nil, true, mysql.NewSQLError(erCantCreateUserWithGrant, "42000", "You are not allowed to create a user with GRANT")
		}
		if !ok {
			return nil, true, mysql.NewSQLError(erNonexistingGrant, "42000", "There is no such grant defined for user '%s' on host '%s'", a.Name, host)
		}
		users = append(users, u)
	}
	for _, u := range users {
		if grant {
			u.PrivilegeSet.AddGlobalDynamic(withGrant, names...)
		} else {
			u.PrivilegeSet.RemoveGlobalDynamic(names...)
		}
		ed.PutUser(u)
	}
	if err := db.Persist(sql.NewEmptyContext(), ed); err != nil {
		return nil, true, err
	}
	return &sqltypes.Result{}, true, nil
}

// mayGrant reports whether c's account may grant or revoke names: it
// holds each with GRANT OPTION, or holds SUPER with GRANT OPTION.
func (s *Server) mayGrant(c *mysql.Conn, names []string) bool {
	set, ok := s.privileges(c)
	if !ok {
		return false
	}
	if set.Has(sql.PrivilegeType_Super, sql.PrivilegeType_GrantOption) {
		return true
	}
	withGrant := map[string]bool{}
	for _, d := range set.ToSliceDynamic(true) {
		withGrant[strings.ToLower(d)] = true
	}
	for _, n := range names {
		if !withGrant[n] {
			return false
		}
	}
	return true
}
