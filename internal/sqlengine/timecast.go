package sqlengine

// Casts to TIME, as MySQL makes them.
//
// go-mysql-server's TIME has no fractional precision of its own: every
// value keeps its microseconds, and CAST(x AS TIME) and CAST(x AS
// TIME(3)) return them all ('10:11:12.500000'), where MySQL rounds to
// the cast's precision (CAST('10:11:12.5' AS TIME) is '10:11:13'). The
// parser rewrites a cast to TIME or TIME(0) into lockstep_cast_time(x),
// which rounds half away from zero to whole seconds; TIME(6) is left to
// go-mysql-server, whose values have six digits; TIME(1) to TIME(5),
// which Lockstep cannot yet give their own number of digits, are
// refused with 1235, as TIME(n) columns are, and a precision past 6 is
// MySQL's 1426.

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/lockstepdb/lockstep/internal/mysqlerr"
	"github.com/shopspring/decimal"
)

const (
	timeCastName = "lockstep_cast_time"
	// maxTimeMicros is 838:59:59, TIME's largest value, in microseconds.
	maxTimeMicros    = (838*3600 + 59*60 + 59) * 1_000_000
	maxTimePrecision = 6
)

var timeCastCol = ast.NewColIdent(timeCastName)

// rewriteTimeCasts turns every cast of st to TIME with a precision other
// than 6 into a call of lockstep_cast_time(x, precision).
func rewriteTimeCasts(st ast.SQLNode, query string) {
	if st == nil || !containsFold(query, "time") {
		return
	}
	rewriteExprs(st, func(e ast.Expr) ast.Expr {
		c, ok := e.(*ast.ConvertExpr)
		if !ok || c.Type == nil || !strings.EqualFold(c.Type.Type, "time") {
			return nil
		}
		precision := "0"
		if c.Type.Length != nil {
			precision = c.Type.Length.String()
		}
		if precision == fmt.Sprint(maxTimePrecision) {
			return nil
		}
		return funcCall(timeCastCol, c.Expr, ast.NewIntVal([]byte(precision)))
	})
}

// timeCastFunction is the sql.Function for lockstep_cast_time.
func timeCastFunction(name string) (sql.Function, bool) {
	if name != timeCastName {
		return nil, false
	}
	return sql.FunctionN{Name: timeCastName, Fn: newTimeCast}, true
}

// newTimeCast makes lockstep_cast_time(x, precision), precision a
// literal, refusing a precision Lockstep cannot give (1 to 5) or MySQL
// refuses (past 6).
func newTimeCast(ctx *sql.Context, args ...sql.Expression) (sql.Expression, error) {
	if len(args) != 2 {
		return nil, sql.ErrInvalidArgumentNumber.New(timeCastName, 2, len(args))
	}
	n, err := literalInts(ctx, args[1:])
	if err != nil {
		return nil, err
	}
	switch p := n[0]; {
	case p == 0:
		return newTimeCastOf(args[0]), nil
	case p < 0 || p > maxTimePrecision:
		return nil, mysql.NewSQLError(mysqlerr.TooBigPrecision, "42000", "Too-big precision %d specified for '%s'. Maximum is %d.", p, args[0], maxTimePrecision)
	default:
		return nil, mysql.NewSQLError(mysql.ERNotSupportedYet, "42000", "This version of Lockstep doesn't yet support 'CAST AS TIME(%d)' (TIME and TIME(6) are supported)", p)
	}
}

func newTimeCastOf(x sql.Expression) *timeCast {
	return &timeCast{x: fullPrecision(x)}
}

// timeCast is x cast to TIME, rounded to whole seconds.
type timeCast struct {
	x sql.Expression
}

var _ sql.FunctionExpression = (*timeCast)(nil)

func (c *timeCast) FunctionName() string             { return timeCastName }
func (c *timeCast) Description() string              { return "casts to TIME" }
func (c *timeCast) Resolved() bool                   { return c.x.Resolved() }
func (c *timeCast) Children() []sql.Expression       { return []sql.Expression{c.x} }
func (c *timeCast) IsNullable(ctx *sql.Context) bool { return true }
func (c *timeCast) Type(ctx *sql.Context) sql.Type   { return types.Time }
func (c *timeCast) String() string                   { return fmt.Sprintf("cast(%s as time)", c.x) }

func (c *timeCast) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(c, len(children), 1)
	}
	return newTimeCastOf(children[0]), nil
}

// Eval converts as go-mysql-server's CAST does, except that a string
// holding a date and time gives its time of day (go-mysql-server gave
// NULL), and what is no time at all gives NULL with warning 1292, as in
// MySQL (go-mysql-server gave NULL without one); then it rounds.
func (c *timeCast) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	v, err := c.x.Eval(ctx, row)
	if err != nil || v == nil {
		return nil, err
	}
	// go-mysql-server drops the fraction of a number (101112.5 is
	// 10:11:12): it is added back before rounding.
	v, frac := splitFraction(v)
	t, _, err := types.Time.Convert(ctx, v)
	if ts, ok := t.(types.Timespan); ok && err == nil {
		t = ts + types.Timespan(frac)
	}
	if err != nil {
		dt, _, derr := types.DatetimeMaxPrecision.Convert(ctx, v)
		tt, ok := dt.(time.Time)
		if _, isString := v.(string); derr != nil || !ok || !isString {
			ctx.Warn(mysql.ERTruncatedWrongValue, "Truncated incorrect time value: '%v'", v)
			return nil, nil
		}
		h, m, sec := tt.Clock()
		t = types.Timespan(int64((h*60+m)*60+sec)*1_000_000 + int64(tt.Nanosecond()/1000))
	}
	ts, ok := t.(types.Timespan)
	if !ok {
		return t, nil
	}
	us := int64(ts)
	neg := us < 0
	if neg {
		us = -us
	}
	us = min((us+500_000)/1_000_000*1_000_000, maxTimeMicros)
	if neg {
		us = -us
	}
	return types.Timespan(us), nil
}

// splitFraction splits a number into its whole part and its fraction in
// microseconds (of the same sign); other values come back whole.
func splitFraction(v any) (any, int64) {
	switch n := v.(type) {
	case float64:
		whole := math.Trunc(n)
		return whole, int64(math.Round((n - whole) * 1e6))
	case float32:
		return splitFraction(float64(n))
	case decimal.Decimal:
		whole := n.Truncate(0)
		return whole, n.Sub(whole).Shift(6).Round(0).IntPart()
	}
	return v, 0
}
