package sqlengine

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// RENAME USER, which go-mysql-server parses but does not implement. As in
// MySQL 8 it needs the global CREATE USER privilege, renames every pair or
// none (1396 names the pairs that fail: the old account missing or the
// new one taken), and keeps each account's privileges, password and the
// roles granted to it or by it. It commits like every account change
// (accountlog.go).

func (e *Engine) renameUser(ctx *sql.Context, st *ast.RenameUser, query string) error {
	if err := e.requireCreateUser(ctx); err != nil {
		return err
	}
	return e.changeAccounts(ctx, st, query, func(ed *mysql_db.Editor) error {
		// Check every pair against the accounts as the earlier pairs leave
		// them (RENAME USER a TO b, b TO c is valid).
		taken := map[mysql_db.UserPrimaryKey]bool{}
		ed.VisitUsers(func(u *mysql_db.User) { taken[mysql_db.UserPrimaryKey{Host: u.Host, User: u.User}] = true })
		var failed []string
		for _, r := range st.Accounts {
			from, to := accountKey(r.From), accountKey(r.To)
			if !taken[from] || taken[to] {
				failed = append(failed, accountSQL(from.User, from.Host))
				continue
			}
			delete(taken, from)
			taken[to] = true
		}
		if len(failed) > 0 {
			return mysql.NewSQLError(erCannotUser, "HY000", "Operation RENAME USER failed for %s", strings.Join(failed, ","))
		}
		for _, r := range st.Accounts {
			renameAccount(ed, accountKey(r.From), accountKey(r.To))
		}
		return nil
	})
}

// renameAccount moves account from to to, with the roles granted to it
// and by it.
func renameAccount(ed *mysql_db.Editor, from, to mysql_db.UserPrimaryKey) {
	u, _ := ed.GetUser(from)
	nu := *u
	nu.User, nu.Host = to.User, to.Host
	ed.RemoveUser(from)
	ed.PutUser(&nu)
	var edges []*mysql_db.RoleEdge
	ed.VisitRoleEdges(func(re *mysql_db.RoleEdge) {
		if (re.FromUser == from.User && re.FromHost == from.Host) || (re.ToUser == from.User && re.ToHost == from.Host) {
			edges = append(edges, re)
		}
	})
	for _, re := range edges {
		ed.RemoveRoleEdge(mysql_db.RoleEdgesPrimaryKey{FromHost: re.FromHost, FromUser: re.FromUser, ToHost: re.ToHost, ToUser: re.ToUser})
		ne := *re
		if ne.FromUser == from.User && ne.FromHost == from.Host {
			ne.FromUser, ne.FromHost = to.User, to.Host
		}
		if ne.ToUser == from.User && ne.ToHost == from.Host {
			ne.ToUser, ne.ToHost = to.User, to.Host
		}
		ed.PutRoleEdge(&ne)
	}
}

// MaybeAccountStatement is a cheap test of query's first word: false
// means AccountStatement would not handle it.
func MaybeAccountStatement(query string) bool {
	q := strings.TrimLeft(query, " \t\r\n")
	return hasPrefixFold(q, "grant") || hasPrefixFold(q, "revoke") || hasPrefixFold(q, "set") ||
		hasPrefixFold(q, "rename") || hasPrefixFold(q, "alter")
}

// AccountStatement runs query if it is an account statement
// go-mysql-server lacks: GRANT or REVOKE of dynamic privileges (mayGrant
// as for DynamicGrant), SET ROLE, SET DEFAULT ROLE, RENAME USER. handled
// reports whether it was one.
func (e *Engine) AccountStatement(ctx *sql.Context, query string, mayGrant func(names []string) bool) (handled bool, err error) {
	if handled, err = e.DynamicGrant(ctx, query, mayGrant); handled {
		return handled, err
	}
	if handled, err = e.RoleStatement(ctx, query); handled {
		return handled, err
	}
	q := strings.TrimLeft(query, " \t\r\n")
	if len(q) > 1<<16 {
		return false, nil
	}
	if hasPrefixFold(q, "alter") {
		return e.alterUserStatement(ctx, query)
	}
	if !hasPrefixFold(q, "rename") {
		return false, nil
	}
	st, n, err := ParseOne(ctx, query, ast.ParserOptions{})
	if err != nil || strings.TrimSpace(strings.Trim(query[n:], "; \t\r\n")) != "" {
		return false, nil // go-mysql-server reports it
	}
	ru, ok := st.(*ast.RenameUser)
	if !ok {
		return false, nil
	}
	return true, e.renameUser(ctx, ru, query)
}
