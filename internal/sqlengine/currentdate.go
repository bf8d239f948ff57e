package sqlengine

import (
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// CURDATE() and CURRENT_DATE as a DATE, as MySQL types them.
// go-mysql-server typed them as text and gave the date as a string:
// CURDATE() + 0 was 2026 (the string read as a number) where MySQL gives
// 20261127, and a prepared statement sent a string column a driver could
// not scan into a date. The date is the statement's start in the
// session's time zone, as go-mysql-server's was.

// currentDateFunction is the sql.Function for CURDATE and CURRENT_DATE.
func currentDateFunction(name string) (sql.Function, bool) {
	if name != "curdate" && name != "current_date" {
		return nil, false
	}
	return sql.Function0{Name: name, Fn: func(*sql.Context) sql.Expression { return currentDate{name: name} }}, true
}

// currentDate is CURDATE() or CURRENT_DATE.
type currentDate struct{ name string }

var _ sql.FunctionExpression = currentDate{}

func (c currentDate) FunctionName() string         { return c.name }
func (c currentDate) Description() string          { return "returns the current date" }
func (c currentDate) Resolved() bool               { return true }
func (c currentDate) IsNullable(*sql.Context) bool { return false }
func (c currentDate) Type(*sql.Context) sql.Type   { return types.Date }
func (c currentDate) Children() []sql.Expression   { return nil }
func (c currentDate) String() string               { return c.name + "()" }
func (c currentDate) IsNonDeterministic() bool     { return true }
func (c currentDate) CollationCoercibility(*sql.Context) (sql.CollationID, byte) {
	return sql.Collation_binary, 5
}

func (c currentDate) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(c, len(children), 0)
	}
	return c, nil
}

func (c currentDate) Eval(ctx *sql.Context, _ sql.Row) (any, error) {
	t := ctx.QueryTime()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC), nil
}
