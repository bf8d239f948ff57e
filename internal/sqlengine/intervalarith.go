package sqlengine

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// Date arithmetic with INTERVAL typed as MySQL types it.
//
// MySQL defines `x + INTERVAL n unit` (and `INTERVAL n unit + x`) as
// DATE_ADD(x, INTERVAL n unit) and `x - INTERVAL n unit` as DATE_SUB, and
// types the result by its operands: a DATE moved by days, months or years
// is a DATE; a DATE moved by a time unit, or a DATETIME or TIMESTAMP
// moved by anything, is a DATETIME with the operand's fractional digits
// (six if the interval has microseconds or a fractional number of
// seconds).
//
// go-mysql-server built the operators as arithmetic whose result is
// always a DATETIME ('2020-01-02' + INTERVAL 1 DAY was '2020-01-03
// 00:00:00'), and typed DATE_ADD and DATE_SUB of a DATETIME, or of a DATE
// by a time unit, as DATETIME(6) ('2020-01-03 03:04:05.000000'). The
// parser therefore turns the operators into the functions
// (rewriteIntervalArithmetic: bottom-up, so chained intervals nest), and
// the functions are go-mysql-server's with the result type corrected
// (dateOffset). Values are go-mysql-server's.

var (
	dateAddName = ast.NewColIdent("date_add")
	dateSubName = ast.NewColIdent("date_sub")
)

// rewriteIntervalArithmetic turns st's additions and subtractions of an
// INTERVAL into DATE_ADD and DATE_SUB.
func rewriteIntervalArithmetic(st ast.SQLNode, query string) {
	if st == nil || !containsFold(query, "interval") {
		return
	}
	rewriteExprs(st, func(e ast.Expr) ast.Expr {
		b, ok := e.(*ast.BinaryExpr)
		if !ok {
			return nil
		}
		li, leftInterval := b.Left.(*ast.IntervalExpr)
		ri, rightInterval := b.Right.(*ast.IntervalExpr)
		switch {
		case leftInterval == rightInterval:
			return nil
		case b.Operator == ast.PlusStr && rightInterval:
			return funcCall(dateAddName, b.Left, ri)
		case b.Operator == ast.PlusStr && leftInterval:
			return funcCall(dateAddName, b.Right, li)
		case b.Operator == ast.MinusStr && rightInterval:
			return funcCall(dateSubName, b.Left, ri)
		}
		return nil // INTERVAL ... - x: MySQL refuses it too, left to GMS
	})
}

// dateOffsetFunction is the sql.Function for DATE_ADD or DATE_SUB.
func dateOffsetFunction(name string) (sql.Function, bool) {
	var build func(*sql.Context, ...sql.Expression) (sql.Expression, error)
	switch name {
	case "date_add":
		build = function.NewDateAdd
	case "date_sub":
		build = function.NewDateSub
	default:
		return nil, false
	}
	return sql.FunctionN{Name: name, Fn: func(ctx *sql.Context, args ...sql.Expression) (sql.Expression, error) {
		e, err := build(ctx, args...)
		if err != nil {
			return nil, err
		}
		return &dateOffset{inner: e, name: name}, nil
	}}, true
}

// dateOffset is go-mysql-server's DATE_ADD or DATE_SUB with MySQL's
// result type. The function is its one child, not embedded: the
// analyzer's check that an INTERVAL appears only under DATE_ADD, DATE_SUB,
// + or - must meet the function itself.
type dateOffset struct {
	inner sql.Expression // *function.DateAdd or *function.DateSub
	name  string
}

var _ sql.FunctionExpression = (*dateOffset)(nil)

func (d *dateOffset) FunctionName() string                          { return d.name }
func (d *dateOffset) Description() string                           { return "adds or subtracts an interval" }
func (d *dateOffset) Resolved() bool                                { return d.inner.Resolved() }
func (d *dateOffset) IsNullable(ctx *sql.Context) bool              { return d.inner.IsNullable(ctx) }
func (d *dateOffset) Children() []sql.Expression                    { return []sql.Expression{d.inner} }
func (d *dateOffset) String() string                                { return d.inner.String() }
func (d *dateOffset) Eval(ctx *sql.Context, r sql.Row) (any, error) { return d.inner.Eval(ctx, r) }

func (d *dateOffset) CollationCoercibility(ctx *sql.Context) (sql.CollationID, byte) {
	return ctx.GetCollation(), 4
}

func (d *dateOffset) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(d, len(children), 1)
	}
	return &dateOffset{inner: children[0], name: d.name}, nil
}

// Type is go-mysql-server's, but a DATETIME has the fractional digits of
// the operand or the interval (go-mysql-server always gives six).
func (d *dateOffset) Type(ctx *sql.Context) sql.Type {
	t := d.inner.Type(ctx)
	if !types.IsDatetimeType(t) {
		return t
	}
	children := d.inner.Children()
	if len(children) != 2 {
		return t // folded into a constant by the analyzer: its value's type
	}
	iv, ok := children[1].(*expression.Interval)
	if !ok {
		return t
	}
	p := intervalPrecision(ctx, iv)
	if in, isTemporal := children[0].Type(ctx).(sql.DatetimeType); isTemporal && types.IsTime(in) && in.Precision() > p {
		p = in.Precision()
	} else if !isTemporal {
		return t // a string or number: its digits are not known here
	}
	return types.MustCreateDatetimeType(sqltypes.Datetime, p)
}

// intervalPrecision is the fractional digits an interval adds: six for
// microseconds or a fractional number of seconds, else none.
func intervalPrecision(ctx *sql.Context, iv *expression.Interval) int {
	unit := strings.ToUpper(iv.Unit)
	if strings.Contains(unit, "MICROSECOND") {
		return 6
	}
	if unit == "SECOND" && !types.IsInteger(iv.Child.Type(ctx)) {
		return 6
	}
	return 0
}
