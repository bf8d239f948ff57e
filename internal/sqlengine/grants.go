package sqlengine

import (
	"context"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// GRANT and REVOKE of the dynamic privileges Lockstep checks but
// go-mysql-server refuses to grant (it knows only REPLICATION_SLAVE_ADMIN
// and CLONE_ADMIN): without this, the only way to let an operator KILL
// others' connections or SET GLOBAL was SUPER, which grants everything.
// A statement naming only such privileges, ON *.*, is applied here to the
// accounts (or roles) in go-mysql-server's mysql database and committed
// like every account change (accountlog.go); any other goes to
// go-mysql-server as before. As in MySQL, the accounts must exist (GRANT:
// 1410, as MySQL does not create accounts on GRANT; REVOKE: 1141).
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

// DynamicGrant applies query if it is such a GRANT or REVOKE (handled
// reports whether it was). allowed says whether the grantor may grant or
// revoke the privileges named (MySQL: each held WITH GRANT OPTION, or
// SUPER WITH GRANT OPTION); a denial is 1227.
func (e *Engine) DynamicGrant(ctx *sql.Context, query string, allowed func(names []string) bool) (handled bool, err error) {
	q := strings.TrimLeft(query, " \t\r\n")
	if len(q) > 4096 || !(hasPrefixFold(q, "grant") || hasPrefixFold(q, "revoke")) {
		return false, nil
	}
	st, n, err := ParseOne(context.Background(), query, ast.ParserOptions{})
	if err != nil || strings.TrimSpace(strings.Trim(query[n:], "; \t\r\n")) != "" {
		return false, nil // go-mysql-server reports it
	}
	var privs []ast.Privilege
	var level ast.PrivilegeLevel
	var accounts []ast.AccountName
	var withGrant, grant bool
	switch n := st.(type) {
	case *ast.GrantPrivilege:
		privs, level, accounts, withGrant, grant = n.Privileges, n.PrivilegeLevel, n.To, n.WithGrantOption, true
		if n.As != nil {
			return false, nil
		}
	case *ast.RevokePrivilege:
		privs, level, accounts = n.Privileges, n.PrivilegeLevel, n.From
	default:
		return false, nil
	}
	var names []string
	for _, p := range privs {
		name := strings.ToLower(p.DynamicName)
		if p.Type != ast.PrivilegeType_Dynamic || !grantableDynamic[name] {
			return false, nil
		}
		names = append(names, name)
	}
	if len(names) == 0 || level.Database != "*" || level.TableRoutine != "*" {
		return false, nil
	}
	if !allowed(names) {
		return true, mysql.NewSQLError(erSpecificAccessDenied, "42000",
			"Access denied; you need (at least one of) the %s privilege(s) with GRANT OPTION for this operation", strings.ToUpper(strings.Join(names, ", ")))
	}
	return true, e.changeAccounts(ctx, st, query, func(ed *mysql_db.Editor) error {
		var users []*mysql_db.User
		for _, a := range accounts {
			k := accountKey(a)
			u, ok := ed.GetUser(k)
			if !ok && grant {
				return mysql.NewSQLError(erCantCreateUserWithGrant, "42000", "You are not allowed to create a user with GRANT")
			}
			if !ok {
				return mysql.NewSQLError(erNonexistingGrant, "42000", "There is no such grant defined for user '%s' on host '%s'", k.User, k.Host)
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
		return nil
	})
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
