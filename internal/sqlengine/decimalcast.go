package sqlengine

// Casts to DECIMAL, as MySQL makes them.
//
// CAST(x AS DECIMAL) is DECIMAL(10,0) in MySQL, DECIMAL(M) is
// DECIMAL(M,0), and DECIMAL(M,D) rounds x half away from zero to D
// places: CAST(1.5 AS DECIMAL) is 2. A value past what M digits hold
// becomes the largest that fits, with warning 1264 (CAST(123.236 AS
// DECIMAL(4,2)) is 99.99); a string that is no number is 0 with warning
// 1292. M past 65 is error 1426, D past 30 is 1425, D past M is 1427.
// go-mysql-server makes a cast whose scale is 0 or missing a
// DECIMAL(65,30) that keeps the fraction, turns a value too large for
// DECIMAL(M,D) into 0 without a warning, and takes any M and D. The
// parser rewrites every cast to DECIMAL (CAST and CONVERT) into a call
// of lockstep_cast_decimal(x, M, D), which provider.Function gives
// decimalCast for; the result column keeps the statement's own text as
// its name.

import (
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/lockstepdb/lockstep/internal/mysqlerr"
	"github.com/shopspring/decimal"
)

const (
	decimalCastName = "lockstep_cast_decimal"
	// defaultDecimalDigits is DECIMAL's precision when none is given.
	defaultDecimalDigits = 10
)

var decimalCastCol = ast.NewColIdent(decimalCastName)

// rewriteDecimalCasts turns every cast of st to a DECIMAL into a call of
// lockstep_cast_decimal. query is st's text: a statement that cannot
// hold such a cast is not walked.
func rewriteDecimalCasts(st ast.SQLNode, query string) {
	if st == nil || !containsFold(query, "dec") && !containsFold(query, "numeric") && !containsFold(query, "fixed") {
		return
	}
	rewriteExprs(st, func(e ast.Expr) ast.Expr {
		c, ok := e.(*ast.ConvertExpr)
		if !ok || c.Type == nil {
			return nil
		}
		switch strings.ToLower(c.Type.Type) {
		case "decimal", "dec", "numeric", "fixed":
		default:
			return nil
		}
		digits, scale := fmt.Sprint(defaultDecimalDigits), "0"
		if c.Type.Length != nil {
			digits = c.Type.Length.String()
		}
		if c.Type.Scale != nil {
			scale = c.Type.Scale.String()
		}
		return funcCall(decimalCastCol, c.Expr, ast.NewIntVal([]byte(digits)), ast.NewIntVal([]byte(scale)))
	})
}

// decimalCastFunction is the sql.Function for lockstep_cast_decimal.
func decimalCastFunction(name string) (sql.Function, bool) {
	if name != decimalCastName {
		return nil, false
	}
	return sql.FunctionN{Name: decimalCastName, Fn: newDecimalCast}, true
}

// newDecimalCast makes lockstep_cast_decimal(x, M, D), M and D literals,
// refusing what MySQL's parser refuses.
func newDecimalCast(ctx *sql.Context, args ...sql.Expression) (sql.Expression, error) {
	if len(args) != 3 {
		return nil, sql.ErrInvalidArgumentNumber.New(decimalCastName, 3, len(args))
	}
	md, err := literalInts(ctx, args[1:])
	if err != nil {
		return nil, err
	}
	m, d := md[0], md[1]
	switch {
	case m < 0 || m > maxDecimalPrecision:
		return nil, mysql.NewSQLError(mysqlerr.TooBigPrecision, "42000", "Too-big precision %d specified for '%s'. Maximum is %d.", m, args[0], maxDecimalPrecision)
	case d < 0 || d > maxDecimalScale:
		return nil, mysql.NewSQLError(mysqlerr.TooBigScale, "42000", "Too big scale %d specified for '%s'. Maximum is %d.", d, args[0], maxDecimalScale)
	case m == 0 && d == 0: // DECIMAL(0) is DECIMAL's default, as in MySQL
		m = defaultDecimalDigits
	case m < d:
		return nil, mysql.NewSQLError(mysqlerr.MBiggerThanD, "42000", "For float(M,D), double(M,D) or decimal(M,D), M must be >= D (column '%s').", args[0])
	}
	return &decimalCast{x: fullPrecision(args[0]), m: m, d: d}, nil
}

// literalInts evaluates the integer literals a cast's rewrite passes
// (its precision and scale).
func literalInts(ctx *sql.Context, args []sql.Expression) ([]int, error) {
	out := make([]int, len(args))
	for i, a := range args {
		v, err := a.Eval(ctx, nil)
		if err != nil {
			return nil, err
		}
		n, _, err := types.Int64.Convert(ctx, v)
		if err != nil {
			return nil, err
		}
		out[i] = int(n.(int64))
	}
	return out, nil
}

// fullPrecision makes go-mysql-server's arithmetic in e keep its
// intermediate precision instead of rounding its result to the
// division's scale: MySQL casts the unrounded value (CAST(1/3 AS
// DECIMAL(65,30)) has nine 3s, not four). go-mysql-server does this for
// the expressions below its own CAST, when it builds one; building one
// is the only exported way, so one is built and dropped.
func fullPrecision(e sql.Expression) sql.Expression {
	_ = expression.NewConvert(e, expression.ConvertToDecimal)
	return e
}

// decimalCast is x cast to DECIMAL(m,d).
type decimalCast struct {
	x    sql.Expression
	m, d int
}

var _ sql.FunctionExpression = (*decimalCast)(nil)

func (c *decimalCast) FunctionName() string             { return decimalCastName }
func (c *decimalCast) Description() string              { return "casts to DECIMAL(M,D)" }
func (c *decimalCast) Resolved() bool                   { return c.x.Resolved() }
func (c *decimalCast) Children() []sql.Expression       { return []sql.Expression{c.x} }
func (c *decimalCast) IsNullable(ctx *sql.Context) bool { return c.x.IsNullable(ctx) }

func (c *decimalCast) Type(ctx *sql.Context) sql.Type {
	t, err := types.CreateDecimalType(uint8(c.m), uint8(c.d))
	if err != nil {
		return types.InternalDecimalType
	}
	return t
}

func (c *decimalCast) String() string {
	return fmt.Sprintf("cast(%s as decimal(%d,%d))", c.x, c.m, c.d)
}

func (c *decimalCast) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(c, len(children), 1)
	}
	return &decimalCast{x: fullPrecision(children[0]), m: c.m, d: c.d}, nil
}

func (c *decimalCast) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	v, err := c.x.Eval(ctx, row)
	if err != nil || v == nil {
		return nil, err
	}
	v, err = types.ConvertHexBlobToDecimalForNumericContext(v, c.x.Type(ctx))
	if err != nil {
		return nil, err
	}
	dv, _, err := types.InternalDecimalType.Convert(ctx, v)
	if err != nil {
		if !sql.ErrTruncatedIncorrect.Is(err) {
			ctx.Warn(mysql.ERTruncatedWrongValue, "Truncated incorrect DECIMAL value: '%v'", v)
			return decimal.Zero, nil
		}
		ctx.Warn(mysql.ERTruncatedWrongValue, "%s", err.Error())
	}
	d, ok := dv.(decimal.Decimal)
	if !ok {
		return decimal.Zero, nil
	}
	scale := int32(c.d)
	d = d.Round(scale)
	// The largest value of m digits, d of them after the point.
	largest := decimal.New(1, int32(c.m)-scale).Sub(decimal.New(1, -scale))
	if d.Abs().Cmp(largest) > 0 {
		ctx.Warn(mysql.ERWarnDataOutOfRange, "Out of range value for column '%s' at row 1", c.String())
		if d.Sign() < 0 {
			largest = largest.Neg()
		}
		d = largest
	}
	return d, nil
}
