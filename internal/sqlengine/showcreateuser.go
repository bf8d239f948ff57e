package sqlengine

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/lockstepdb/lockstep/internal/mysqlerr"
)

// SHOW CREATE USER, which go-mysql-server lacks (1064): the CREATE USER
// statement that makes the account again, in MySQL 8's form, as tools
// that copy accounts read it (pt-show-grants, dump tools). The
// authentication string is written as MySQL writes it with
// print_identified_with_as_hex: as a hexadecimal literal when it holds
// bytes that are not printable (caching_sha2_password's salted hashes).
// Options Lockstep does not keep (PASSWORD EXPIRE, HISTORY, REUSE
// INTERVAL, REQUIRE CURRENT) are written as DEFAULT, which is what the
// account has. Another account than one's own needs SELECT on the mysql
// database (1227 otherwise, as MySQL).

// MaybeShowCreateUser is a cheap test of query's first word.
func MaybeShowCreateUser(query string) bool {
	return hasPrefixFold(strings.TrimLeft(query, " \t\r\n"), "show")
}

// ShowCreateUser answers query if it is SHOW CREATE USER: the result's
// column name and its one value.
func (e *Engine) ShowCreateUser(ctx *sql.Context, query string) (column, stmt string, handled bool, err error) {
	if len(query) > 4096 {
		return "", "", false, nil
	}
	toks := lexTokens(query)
	for len(toks) > 0 && toks[len(toks)-1].text(query) == ";" {
		toks = toks[:len(toks)-1]
	}
	if len(toks) < 3 || !toks[0].is("show") || !toks[1].is("create") || !toks[2].is("user") {
		return "", "", false, nil
	}
	client := ctx.Session.Client()
	db := e.GMS.Analyzer.Catalog.MySQLDb
	rd := db.Reader()
	defer rd.Close()
	mine := db.GetUser(rd, client.User, client.Address, false) // the session's account
	var u *mysql_db.User
	switch rest := toks[3:]; {
	case len(rest) == 0,
		len(rest) == 1 && rest[0].is("current_user"),
		len(rest) == 3 && rest[0].is("current_user") && rest[1].text(query) == "(" && rest[2].text(query) == ")":
		u = mine
	default:
		refs, after, err := parseAccounts(query, rest, "%")
		if err != nil || len(refs) != 1 || len(after) != 0 {
			return "", "", true, syntaxErrorNear(query, rest)
		}
		var ok bool
		if u, ok = rd.GetUser(mysql_db.UserPrimaryKey{Host: refs[0].host, User: refs[0].user}); !ok {
			u = nil
		}
		if u == nil || u != mine {
			if err := e.maySelectMySQL(ctx); err != nil {
				return "", "", true, err
			}
		}
		if u == nil {
			return "", "", true, mysql.NewSQLError(1396, "HY000", "Operation SHOW CREATE USER failed for '%s'@'%s'", refs[0].user, refs[0].host)
		}
	}
	if u == nil {
		return "", "", true, mysql.NewSQLError(1396, "HY000", "Operation SHOW CREATE USER failed for '%s'@'%s'", client.User, client.Address)
	}
	return fmt.Sprintf("CREATE USER for %s@%s", u.User, u.Host), createUserText(u), true, nil
}

// createUserText is the CREATE USER statement of u.
func createUserText(u *mysql_db.User) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE USER %s@%s IDENTIFIED WITH '%s'", quoteIdent(u.User), quoteIdent(u.Host), u.Plugin)
	if u.AuthString != "" {
		b.WriteString(" AS " + authLiteral(u.AuthString))
	}
	b.WriteString(" REQUIRE ")
	switch strings.ToUpper(u.SslType) {
	case "":
		b.WriteString("NONE")
	case "ANY":
		b.WriteString("SSL")
	case "X509":
		b.WriteString("X509")
	default:
		var parts []string
		for _, p := range []struct{ name, v string }{{"SUBJECT", u.X509Subject}, {"ISSUER", u.X509Issuer}, {"CIPHER", u.SslCipher}} {
			if p.v != "" {
				parts = append(parts, p.name+" "+quoteComment(p.v))
			}
		}
		b.WriteString(strings.Join(parts, " AND "))
	}
	b.WriteString(" PASSWORD EXPIRE DEFAULT")
	if u.Locked {
		b.WriteString(" ACCOUNT LOCK")
	} else {
		b.WriteString(" ACCOUNT UNLOCK")
	}
	b.WriteString(" PASSWORD HISTORY DEFAULT PASSWORD REUSE INTERVAL DEFAULT PASSWORD REQUIRE CURRENT DEFAULT")
	if attempts, days := PasswordLocking(u); attempts > 0 || days != 0 {
		lock := strconv.Itoa(days)
		if days < 0 {
			lock = "UNBOUNDED"
		}
		fmt.Fprintf(&b, " FAILED_LOGIN_ATTEMPTS %d PASSWORD_LOCK_TIME %s", attempts, lock)
	}
	return b.String()
}

// authLiteral is an authentication string as a quoted string, or as a
// hexadecimal literal if it holds bytes that are not printable.
func authLiteral(s string) string {
	for _, r := range s {
		if r > unicode.MaxASCII || !unicode.IsPrint(r) {
			return fmt.Sprintf("0x%X", s)
		}
	}
	return quoteComment(s)
}

// maySelectMySQL refuses, as MySQL does, a session whose account may not
// read the mysql database.
func (e *Engine) maySelectMySQL(ctx *sql.Context) error {
	if !e.GMS.Analyzer.Catalog.MySQLDb.Enabled() {
		return nil
	}
	set := e.sessionPrivileges(ctx)
	if set.Has(sql.PrivilegeType_Select) || set.Database("mysql").Has(sql.PrivilegeType_Select) {
		return nil
	}
	c := ctx.Session.Client()
	return mysql.NewSQLError(mysqlerr.DBAccessDenied, "42000", "Access denied for user '%s'@'%s' to database 'mysql'", c.User, c.Address)
}
