package sqlengine

import (
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
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
//   - ALTER USER without IDENTIFIED (ALTER USER u WITH
//     MAX_USER_CONNECTIONS 0, or ALTER USER u alone) reached
//     go-mysql-server as IDENTIFIED BY '': it emptied the account's
//     password, so the account then logged in with none. Such a statement
//     now keeps the account's plugin and hash (it is given them as
//     IDENTIFIED WITH plugin AS 'hash'), and its MAX_* limits are refused
//     as in CREATE USER, with IDENTIFIED or without.
//
// Under read_only, account changes are refused up front (as MySQL does
// without SUPER), not after go-mysql-server has changed the accounts in
// memory (see accountlog.go).

// checkAccountStatement applies these rules to st, whose text is text.
func checkAccountStatement(ctx *sql.Context, st ast.Statement, text string) error {
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
			if what := ignoredAccountOption(false, nil, n.AccountLimits); what != "" {
				return errNotSupported(what)
			}
			if err := checkAlterUser(ctx, n.User); err != nil {
				return err
			}
			if *n.Authentication == (ast.Authentication{}) && !hasIdentified(text) {
				keepAuthentication(ctx, n)
			}
			return checkPasswordPolicy(ctx, n)
		}
	case *ast.GrantPrivilege:
		return checkTargets(ctx, n.To, erCantCreateUserWithGrant)
	case *ast.GrantRole:
		if err := checkTargets(ctx, n.Roles, erNonexistingGrant); err != nil {
			return err
		}
		return checkTargets(ctx, n.To, erCantCreateUserWithGrant)
	case *ast.RevokePrivilege:
		return checkTargets(ctx, n.From, erNonexistingGrant)
	case *ast.RevokeRole:
		if err := checkTargets(ctx, n.Roles, erNonexistingGrant); err != nil {
			return err
		}
		return checkTargets(ctx, n.From, erNonexistingGrant)
	case *ast.ShowGrants:
		if n.For != nil {
			return checkTargets(ctx, []ast.AccountName{*n.For}, erNonexistingGrant)
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
		return checkPasswordPolicy(ctx, n)
	}
	return nil
}

// checkTargets makes sure each account a GRANT, REVOKE or SHOW GRANTS
// names is the one go-mysql-server will change or show. It looks the name
// up with the wildcard matching of a login: GRANT ... TO app@'10.0.0.5'
// with only app@'%' existing granted to app@'%', where MySQL refuses
// (1410, and 1141 for REVOKE and SHOW GRANTS); and for a host of
// 127.0.0.1 or ::1, which it looks up as localhost, it could change
// another existing account of the same name, which is refused (1235)
// rather than done to the wrong account.
func checkTargets(ctx *sql.Context, names []ast.AccountName, missing int) error {
	s := sessionOf(ctx)
	if s == nil || len(names) == 0 {
		return nil
	}
	db := s.eng.GMS.Analyzer.Catalog.MySQLDb
	rd := db.Reader()
	defer rd.Close()
	for _, n := range names {
		k := accountKey(n)
		host := k.Host
		own, ok := rd.GetUser(k)
		if !ok {
			if missing == erCantCreateUserWithGrant {
				return mysql.NewSQLError(missing, "42000", "You are not allowed to create a user with GRANT")
			}
			return mysql.NewSQLError(missing, "42000", "There is no such grant defined for user '%s' on host '%s'", n.Name, host)
		}
		if other := db.GetUser(rd, n.Name, host, own.IsRole); other != own {
			return errNotSupported(fmt.Sprintf("naming '%s'@'%s' in GRANT, REVOKE or SHOW GRANTS while '%s'@'%s' exists (go-mysql-server would take the other account)", n.Name, host, other.User, other.Host))
		}
	}
	return nil
}

// hasIdentified reports whether an account statement's text has an
// IDENTIFIED clause (the word outside quotes and comments).
func hasIdentified(text string) bool {
	if !containsFold(text, "identified") {
		return false
	}
	for _, t := range lexTokens(text) {
		if t.is("identified") {
			return true
		}
	}
	return false
}

// keepAuthentication gives an ALTER USER without IDENTIFIED the target
// account's own plugin and hash, so that go-mysql-server, which sets the
// authentication of every ALTER USER, sets what the account has. An
// account that does not exist is left to go-mysql-server's error (or IF
// EXISTS).
func keepAuthentication(ctx *sql.Context, n *ast.DDL) {
	s := sessionOf(ctx)
	if s == nil {
		return
	}
	db := s.eng.GMS.Analyzer.Catalog.MySQLDb
	rd := db.Reader()
	defer rd.Close()
	u, ok := rd.GetUser(accountKey(n.User))
	if !ok {
		return
	}
	n.Authentication = &ast.Authentication{Plugin: u.Plugin, Identity: u.AuthString}
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
	rd := db.Reader()
	me := SessionUser(db, rd, ctx.Session.Client())
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
