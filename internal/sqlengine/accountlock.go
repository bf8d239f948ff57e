package sqlengine

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/vitess/go/mysql"
)

// ALTER USER ... ACCOUNT LOCK | ACCOUNT UNLOCK | FAILED_LOGIN_ATTEMPTS n |
// PASSWORD_LOCK_TIME {n | UNBOUNDED}, which the parser lacks.
//
// ACCOUNT LOCK sets the account's locked flag, which logins check (3118).
// The two password-locking options are kept where MySQL 8 keeps them, in
// the account's attributes ({"Password_locking": {"failed_login_attempts":
// n, "password_lock_time_days": d}}, d = -1 for UNBOUNDED); the server's
// login check counts failures against them (server/auth.go). As in MySQL,
// this ALTER USER (and ACCOUNT UNLOCK) resets the account's failure count
// and temporary lock, through the LoginFailuresReset hook.
//
// The options are taken alone (with several accounts and several options);
// together with IDENTIFIED, in one statement, they are refused with 1235,
// and so are they in CREATE USER (see accounts.go): the account would
// exist, for a moment, without them.

// passwordLockingKey is MySQL's attribute name.
const passwordLockingKey = "Password_locking"

type passwordLocking struct {
	FailedLoginAttempts  int `json:"failed_login_attempts"`
	PasswordLockTimeDays int `json:"password_lock_time_days"`
}

// PasswordLocking returns an account's FAILED_LOGIN_ATTEMPTS and
// PASSWORD_LOCK_TIME (days, -1 for UNBOUNDED); zero attempts or zero days
// mean no tracking.
func PasswordLocking(u *mysql_db.User) (attempts, days int) {
	if u.Attributes == nil {
		return 0, 0
	}
	var attrs map[string]json.RawMessage
	if json.Unmarshal([]byte(*u.Attributes), &attrs) != nil {
		return 0, 0
	}
	var p passwordLocking
	if raw, ok := attrs[passwordLockingKey]; !ok || json.Unmarshal(raw, &p) != nil {
		return 0, 0
	}
	return p.FailedLoginAttempts, p.PasswordLockTimeDays
}

// setPasswordLocking stores the two options in u's attributes.
func setPasswordLocking(u *mysql_db.User, attempts, days int) {
	attrs := map[string]json.RawMessage{}
	if u.Attributes != nil {
		_ = json.Unmarshal([]byte(*u.Attributes), &attrs)
	}
	if attempts == 0 && days == 0 {
		delete(attrs, passwordLockingKey)
	} else {
		b, _ := json.Marshal(passwordLocking{attempts, days})
		attrs[passwordLockingKey] = b
	}
	if len(attrs) == 0 {
		u.Attributes = nil
		return
	}
	b, _ := json.Marshal(attrs)
	s := string(b)
	u.Attributes = &s
}

// lockOptions is what an ALTER USER of this form sets; nil fields are left
// as they are.
type lockOptions struct {
	locked   *bool
	attempts *int
	days     *int
}

// isLockOption reports whether t starts one of the options.
func isLockOption(t token) bool {
	return t.is("account") || t.is("failed_login_attempts") || t.is("password_lock_time")
}

// alterUserStatement runs query if it is an ALTER USER with these
// options.
func (e *Engine) alterUserStatement(ctx *sql.Context, query string) (bool, error) {
	toks := lexTokens(query)
	for len(toks) > 0 && toks[len(toks)-1].text(query) == ";" {
		toks = toks[:len(toks)-1]
	}
	if len(toks) < 3 || !toks[0].is("alter") || !toks[1].is("user") {
		return false, nil
	}
	after := toks[2:]
	if len(after) >= 2 && after[0].is("if") && after[1].is("exists") {
		after = after[2:]
	}
	_, rest, err := parseAccounts(query, after, "%")
	if err != nil || len(rest) == 0 {
		return false, nil // go-mysql-server reports it
	}
	if isLockOption(rest[0]) {
		return true, e.alterUserLocking(ctx, query, toks[2:])
	}
	for _, t := range rest {
		if isLockOption(t) {
			return true, errNotSupported("ALTER USER with IDENTIFIED and ACCOUNT LOCK/UNLOCK, FAILED_LOGIN_ATTEMPTS or PASSWORD_LOCK_TIME in one statement (give them in two)")
		}
	}
	return false, nil
}

// alterUserLocking runs ALTER USER [IF EXISTS] accounts options; toks
// follow ALTER USER.
func (e *Engine) alterUserLocking(ctx *sql.Context, query string, toks []token) error {
	ifExists := false
	if len(toks) >= 2 && toks[0].is("if") && toks[1].is("exists") {
		ifExists, toks = true, toks[2:]
	}
	accounts, rest, err := parseAccounts(query, toks, "%")
	if err != nil {
		return syntaxErrorNear(query, rest)
	}
	var o lockOptions
	number := func(t token) (int, bool) {
		n, err := strconv.Atoi(t.text(query))
		return n, err == nil && n >= 0 && n <= 32767
	}
	for len(rest) > 0 {
		switch {
		case len(rest) >= 2 && rest[0].is("account") && (rest[1].is("lock") || rest[1].is("unlock")):
			v := rest[1].is("lock")
			o.locked, rest = &v, rest[2:]
		case len(rest) >= 2 && rest[0].is("failed_login_attempts"):
			n, ok := number(rest[1])
			if !ok {
				return syntaxErrorNear(query, rest[1:])
			}
			o.attempts, rest = &n, rest[2:]
		case len(rest) >= 2 && rest[0].is("password_lock_time"):
			n, ok := -1, rest[1].is("unbounded")
			if !ok {
				n, ok = number(rest[1])
			}
			if !ok {
				return syntaxErrorNear(query, rest[1:])
			}
			o.days, rest = &n, rest[2:]
		default:
			return syntaxErrorNear(query, rest)
		}
	}
	if err := e.requireCreateUser(ctx); err != nil {
		return err
	}
	var users []*mysql_db.User
	err = e.changeAccounts(ctx, nil, query, func(ed *mysql_db.Editor) error {
		var failed []string
		for _, a := range accounts {
			u, ok := ed.GetUser(mysql_db.UserPrimaryKey{Host: a.host, User: a.user})
			if !ok {
				failed = append(failed, accountSQL(a.user, a.host))
				continue
			}
			users = append(users, u)
		}
		if len(failed) > 0 && !ifExists {
			return mysql.NewSQLError(erCannotUser, "HY000", "Operation ALTER USER failed for %s", strings.Join(failed, ","))
		}
		for _, u := range users {
			nu := *u
			if o.locked != nil {
				nu.Locked = *o.locked
			}
			attempts, days := PasswordLocking(u)
			if o.attempts != nil {
				attempts = *o.attempts
			}
			if o.days != nil {
				days = *o.days
			}
			setPasswordLocking(&nu, attempts, days)
			// The users' set finds an entry by all its fields: remove the
			// old one by key before putting the changed copy.
			ed.RemoveUser(mysql_db.UserPrimaryKey{Host: u.Host, User: u.User})
			ed.PutUser(&nu)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if reset := e.LoginFailuresReset; reset != nil && (o.attempts != nil || o.days != nil || (o.locked != nil && !*o.locked)) {
		for _, u := range users {
			reset(u.User, u.Host)
		}
	}
	return nil
}
