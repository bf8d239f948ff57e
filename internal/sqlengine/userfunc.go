package sqlengine

import (
	"net"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// USER(), SESSION_USER() and SYSTEM_USER() are, as in MySQL, the name
// the client logged in with and the host it connected from (localhost
// for a loopback connection). go-mysql-server's USER() was
// CURRENT_USER(): the account's host pattern ('%') where MySQL gives the
// client's host, and, inside a SQL SECURITY DEFINER procedure (which
// runs as its definer: RunAs), the definer where MySQL gives the caller.
// It had no SESSION_USER() nor SYSTEM_USER().

// userFunction is the sql.Function for USER, SESSION_USER and
// SYSTEM_USER.
func userFunction(name string) (sql.Function, bool) {
	if name != "user" && name != "session_user" && name != "system_user" {
		return nil, false
	}
	return sql.Function0{Name: name, Fn: func(*sql.Context) sql.Expression { return loginUser{name: name} }}, true
}

// clientHost is the host part of USER() for a connection from addr
// (host:port).
func clientHost(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return "localhost"
	}
	return host
}

type loginUser struct{ name string }

var _ sql.FunctionExpression = loginUser{}

func (u loginUser) FunctionName() string { return u.name }
func (u loginUser) Description() string {
	return "returns the user name and host the client logged in with"
}
func (u loginUser) Resolved() bool               { return true }
func (u loginUser) IsNullable(*sql.Context) bool { return false }
func (u loginUser) Type(*sql.Context) sql.Type   { return types.LongText }
func (u loginUser) Children() []sql.Expression   { return nil }
func (u loginUser) String() string               { return u.name + "()" }
func (u loginUser) IsNonDeterministic() bool     { return true }
func (u loginUser) CollationCoercibility(*sql.Context) (sql.CollationID, byte) {
	return sql.Collation_utf8mb3_general_ci, 3
}

func (u loginUser) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(u, len(children), 0)
	}
	return u, nil
}

func (u loginUser) Eval(ctx *sql.Context, _ sql.Row) (any, error) {
	if s := sessionOf(ctx); s != nil && s.login != "" {
		return s.login, nil
	}
	c := ctx.Client()
	if c.User == "" && c.Address == "" {
		return "", nil
	}
	return c.User + "@" + c.Address, nil
}
