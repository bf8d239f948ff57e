package sqlengine

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/vitess/go/mysql"
)

// SET ROLE and SET DEFAULT ROLE, which the parser lacks.
//
// Lockstep activates every role granted to an account, always: that is
// go-mysql-server's privilege model, and MySQL's with
// activate_all_roles_on_login = ON, which Lockstep shows read-only. So:
//
//   - SET DEFAULT ROLE (MySQL's TO form and MariaDB's FOR form) is checked
//     as MySQL checks it (the roles must be granted: 3530; another
//     account's defaults need CREATE USER: 1227) and logged in the binlog
//     for replicas, but changes nothing here: with every role active at
//     login, as under MySQL's activate_all_roles_on_login, default roles
//     do not change what a session may do.
//   - SET ROLE is accepted when it names every granted role (ALL, the
//     full list, or NONE for an account with no roles), which is the
//     state a session is in. A SET ROLE that would narrow the active roles
//     is refused with 1235 instead of being accepted and ignored.

const (
	erRoleNotGranted = 3530 // ER_ROLE_NOT_GRANTED
	erCannotUser     = 1396 // ER_CANNOT_USER
)

// accountRef names an account or a role.
type accountRef struct{ user, host string }

func (a accountRef) String() string { return "`" + a.user + "`@`" + a.host + "`" }

// RoleStatement runs query if it is SET ROLE or SET DEFAULT ROLE; handled
// reports whether it was.
func (e *Engine) RoleStatement(ctx *sql.Context, query string) (handled bool, err error) {
	if len(query) > 1<<16 || !containsFold(query, "role") {
		return false, nil
	}
	toks := lexTokens(query)
	for len(toks) > 0 && toks[len(toks)-1].text(query) == ";" {
		toks = toks[:len(toks)-1]
	}
	switch {
	case len(toks) >= 2 && toks[0].is("set") && toks[1].is("role"):
		return true, e.setRole(ctx, query, toks[2:])
	case len(toks) >= 3 && toks[0].is("set") && toks[1].is("default") && toks[2].is("role"):
		return true, e.setDefaultRole(ctx, query, toks[3:])
	}
	return false, nil
}

func syntaxErrorNear(query string, toks []token) error {
	near := ""
	if len(toks) > 0 {
		near = query[toks[0].start:]
	}
	return mysql.NewSQLError(mysql.ERParseError, "42000", "You have an error in your SQL syntax; near '%s'", near)
}

// sessionAccount is the mysql.user entry the session logged in as.
func (e *Engine) sessionAccount(ctx *sql.Context, rd *mysql_db.Reader) (accountRef, bool) {
	db := e.GMS.Analyzer.Catalog.MySQLDb
	u := SessionUser(db, rd, ctx.Session.Client())
	if u == nil {
		return accountRef{}, false
	}
	return accountRef{u.User, u.Host}, true
}

// grantedRoles lists the roles granted to a.
func grantedRoles(rd *mysql_db.Reader, a accountRef) map[accountRef]bool {
	out := map[accountRef]bool{}
	for _, edge := range rd.GetToUserRoleEdges(mysql_db.RoleEdgesToKey{ToHost: a.host, ToUser: a.user}) {
		out[accountRef{edge.FromUser, edge.FromHost}] = true
	}
	return out
}

func (e *Engine) setRole(ctx *sql.Context, query string, toks []token) error {
	db := e.GMS.Analyzer.Catalog.MySQLDb
	rd := db.Reader()
	defer rd.Close()
	me, ok := e.sessionAccount(ctx, rd)
	if !ok {
		return nil // a session of Lockstep's own (replication): nothing is active
	}
	granted := grantedRoles(rd, me)
	narrow := func(what string) error {
		return mysql.NewSQLError(mysql.ERNotSupportedYet, "42000",
			"This version of Lockstep doesn't yet support 'SET ROLE %s while other roles are granted: every granted role is always active (activate_all_roles_on_login)'", what)
	}
	switch {
	case len(toks) == 0:
		return syntaxErrorNear(query, toks)
	case len(toks) == 1 && toks[0].is("all"):
		return nil
	case len(toks) >= 2 && toks[0].is("all") && toks[1].is("except"):
		except, rest, err := parseAccounts(query, toks[2:], "%")
		if err != nil || len(rest) > 0 {
			return syntaxErrorNear(query, rest)
		}
		for _, r := range except {
			if granted[r] {
				return narrow("ALL EXCEPT")
			}
		}
		return nil
	case len(toks) == 1 && (toks[0].is("none") || toks[0].is("default")):
		if len(granted) > 0 {
			return narrow(strings.ToUpper(toks[0].word))
		}
		return nil
	}
	roles, rest, err := parseAccounts(query, toks, "%")
	if err != nil || len(rest) > 0 {
		return syntaxErrorNear(query, rest)
	}
	named := map[accountRef]bool{}
	for _, r := range roles {
		if !granted[r] {
			return mysql.NewSQLError(erRoleNotGranted, "HY000", "%s is not granted to %s", r, me)
		}
		named[r] = true
	}
	if len(named) < len(granted) {
		return narrow("with some of the granted roles")
	}
	return nil
}

func (e *Engine) setDefaultRole(ctx *sql.Context, query string, toks []token) error {
	var roles []accountRef
	var rest []token
	var err error
	switch {
	case len(toks) > 0 && (toks[0].is("none") || toks[0].is("all")):
		rest = toks[1:]
	default:
		if roles, rest, err = parseAccounts(query, toks, "%"); err != nil || len(roles) == 0 {
			return syntaxErrorNear(query, rest)
		}
	}
	db := e.GMS.Analyzer.Catalog.MySQLDb
	// Read before the reader below: the set is read under its own lock.
	mayCreateUser := db.UserActivePrivilegeSet(ctx).Has(sql.PrivilegeType_CreateUser)
	rd := db.Reader()
	me, known := e.sessionAccount(ctx, rd)
	var targets []accountRef
	switch {
	case len(rest) == 0 && known:
		targets = []accountRef{me} // MariaDB: the session's own account
	case len(rest) > 1 && (rest[0].is("to") || rest[0].is("for")):
		var after []token
		targets, after, err = parseAccounts(query, rest[1:], "%")
		if err != nil || len(after) > 0 || len(targets) == 0 {
			rd.Close()
			return syntaxErrorNear(query, after)
		}
	default:
		rd.Close()
		return syntaxErrorNear(query, rest)
	}
	s := sessionOf(ctx)
	replicated := s != nil && s.replGTID != nil
	if !replicated {
		for _, t := range targets {
			if t != me && !mayCreateUser {
				rd.Close()
				return errNeedCreateUser
			}
		}
	}
	for _, t := range targets {
		if _, ok := rd.GetUser(mysql_db.UserPrimaryKey{Host: t.host, User: t.user}); !ok {
			rd.Close()
			return mysql.NewSQLError(erCannotUser, "HY000", "Operation SET DEFAULT ROLE failed for %s", t)
		}
		granted := grantedRoles(rd, t)
		for _, r := range roles {
			if !granted[r] {
				rd.Close()
				return mysql.NewSQLError(erRoleNotGranted, "HY000", "%s is not granted to %s", r, t)
			}
		}
	}
	rd.Close()
	if err := e.writable(ctx); err != nil {
		return err
	}
	return e.accounts.logUnchanged(ctx, strings.TrimRight(strings.TrimSpace(query), "; \t\r\n"))
}

// parseAccounts reads a comma-separated list of account names (name,
// name@host, quoted either way; host defaults to defaultHost) from toks
// and returns the tokens after it.
func parseAccounts(query string, toks []token, defaultHost string) ([]accountRef, []token, error) {
	var out []accountRef
	for {
		if len(toks) == 0 {
			return nil, toks, errNoAccount
		}
		name, ok := identText(query, toks[0])
		if !ok {
			return nil, toks, errNoAccount
		}
		toks = toks[1:]
		host := defaultHost
		if len(toks) >= 2 && toks[0].text(query) == "@" {
			if host, ok = identText(query, toks[1]); !ok {
				return nil, toks, errNoAccount
			}
			toks = toks[2:]
		}
		out = append(out, accountRef{name, host})
		if len(toks) == 0 || toks[0].text(query) != "," {
			return out, toks, nil
		}
		toks = toks[1:]
	}
}

var errNoAccount = mysql.NewSQLError(mysql.ERParseError, "42000", "an account name was expected")

// identText is the name a word or quoted token stands for.
func identText(query string, t token) (string, bool) {
	s := t.text(query)
	switch t.kind {
	case tokWord:
		return s, true
	case tokString, tokQuotedIdent:
		q := s[:1]
		s = s[1 : len(s)-1]
		s = strings.ReplaceAll(s, q+q, q)
		if q != "`" {
			s = strings.ReplaceAll(s, `\`+q, q)
			s = strings.ReplaceAll(s, `\\`, `\`)
		}
		return s, true
	}
	return "", false
}
