package sqlengine

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// Account statements go-mysql-server gets wrong in ways that matter:
//
//   - ALTER USER is allowed to anyone whose user name equals the target's,
//     whatever the host: 'app'@'%' could change the password of
//     'app'@'localhost', another account. MySQL allows changing one's own
//     account only; any other needs CREATE USER (or UPDATE on mysql).
//   - CREATE USER ... ACCOUNT LOCK, FAILED_LOGIN_ATTEMPTS,
//     PASSWORD_LOCK_TIME, PASSWORD EXPIRE, PASSWORD HISTORY / REUSE
//     INTERVAL and the MAX_*_PER_HOUR / MAX_USER_CONNECTIONS limits are
//     parsed and then ignored: the account is created without them. They
//     are refused with an error instead (their default values, which tools
//     copying accounts write, are accepted). ACCOUNT LOCK and the
//     password-locking options are Lockstep's own in an ALTER USER of
//     their own (accountlock.go).
//   - IDENTIFIED BY RANDOM PASSWORD made an account without a password;
//     DEFAULT ROLE, COMMENT and ATTRIBUTE were dropped. They are refused.
//
// Under read_only, account changes are refused up front (as MySQL does
// without SUPER), not after go-mysql-server has changed the accounts in
// memory (see accountlog.go).

// checkAccountStatement applies these rules to st.
func checkAccountStatement(ctx *sql.Context, st ast.Statement) error {
	if isAccountStatement(st) {
		if s := sessionOf(ctx); s != nil {
			if err := s.eng.writable(ctx); err != nil {
				return err
			}
		}
	}
	switch n := st.(type) {
	case *ast.DDL:
		if n.Action == ast.AlterStr && n.Authentication != nil {
			if n.Authentication.RandomPassword {
				return errNotSupported("IDENTIFIED BY RANDOM PASSWORD")
			}
			return checkAlterUser(ctx, n.User)
		}
	case *ast.CreateUser:
		for _, u := range n.Users {
			if u.Auth1 != nil && u.Auth1.RandomPassword {
				return errNotSupported("IDENTIFIED BY RANDOM PASSWORD")
			}
		}
		switch {
		case len(n.DefaultRoles) > 0:
			return errNotSupported("CREATE USER ... DEFAULT ROLE (every granted role is active: GRANT the role instead)")
		case n.Attribute != "":
			return errNotSupported("CREATE USER ... COMMENT / ATTRIBUTE")
		}
		if what := ignoredAccountOption(n.Locked, n.PasswordOptions, n.AccountLimits); what != "" {
			return errNotSupported(what)
		}
	}
	return nil
}

func checkAlterUser(ctx *sql.Context, target ast.AccountName) error {
	s := sessionOf(ctx)
	if s == nil {
		return nil
	}
	db := s.eng.GMS.Analyzer.Catalog.MySQLDb
	if superless(ctx, func() bool {
		return db.UserHasPrivileges(ctx, sql.NewPrivilegedOperation(sql.PrivilegeCheckSubject{}, sql.PrivilegeType_CreateUser)) ||
			db.UserHasPrivileges(ctx, sql.NewPrivilegedOperation(sql.PrivilegeCheckSubject{Database: "mysql"}, sql.PrivilegeType_Update))
	}) {
		return nil
	}
	c := ctx.Session.Client()
	rd := db.Reader()
	me := db.GetUser(rd, c.User, c.Address, false)
	rd.Close()
	host := target.Host
	if target.AnyHost || host == "" {
		host = "%"
	}
	if me != nil && me.User == target.Name && strings.EqualFold(me.Host, host) {
		return nil // one's own account
	}
	return errNeedCreateUser
}

// ignoredAccountOption names the first option go-mysql-server would
// ignore, or "".
func ignoredAccountOption(locked bool, p *ast.PasswordOptions, l *ast.AccountLimits) string {
	set := func(v *ast.SQLVal) bool {
		if v == nil {
			return false
		}
		s := strings.ToUpper(string(v.Val))
		return s != "" && s != "0" && s != "DEFAULT" && s != "NEVER"
	}
	switch {
	case locked:
		return "ACCOUNT LOCK"
	case p != nil && set(p.FailedAttempts):
		return "FAILED_LOGIN_ATTEMPTS"
	case p != nil && set(p.LockTime):
		return "PASSWORD_LOCK_TIME"
	case p != nil && set(p.ExpirationTime):
		return "PASSWORD EXPIRE"
	case p != nil && (set(p.History) || set(p.ReuseInterval)):
		return "PASSWORD HISTORY / PASSWORD REUSE INTERVAL"
	case l != nil && (set(l.MaxQueriesPerHour) || set(l.MaxUpdatesPerHour) || set(l.MaxConnectionsPerHour) || set(l.MaxUserConnections)):
		return "account resource limits (MAX_*)"
	}
	return ""
}
