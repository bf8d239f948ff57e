package sqlengine

// Casts to DECIMAL with no scale, as MySQL makes them.
//
// CAST(x AS DECIMAL) is DECIMAL(10,0) in MySQL, DECIMAL(M) is
// DECIMAL(M,0), and the value is rounded half away from zero to an
// integer: CAST(1.5 AS DECIMAL) is 2. go-mysql-server makes any cast
// whose scale is 0 or missing a DECIMAL(65,30) and keeps the fraction
// (1.5), a silently different result. The parser rewrites such casts
// (CAST and CONVERT) into calls of lockstep_cast_decimal(x, M), which
// provider.Function gives decimalCast for; the result column keeps the
// statement's own text as its name. A value past M digits becomes the
// largest of M digits with warning 1264, and a string that is no number
// 0 with warning 1292, as in MySQL.

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

// rewriteDecimalCasts turns every cast of st to a DECIMAL without a
// scale above 0 into a call of lockstep_cast_decimal. query is st's text:
// a statement that cannot hold such a cast is not walked.
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
		if c.Type.Scale != nil && c.Type.Scale.String() != "0" {
			return nil
		}
		digits := fmt.Sprint(defaultDecimalDigits)
		if c.Type.Length != nil {
			digits = c.Type.Length.String()
		}
		return &ast.FuncExpr{Name: decimalCastCol, Exprs: ast.SelectExprs{
			&ast.AliasedExpr{Expr: c.Expr},
			&ast.AliasedExpr{Expr: ast.NewIntVal([]byte(digits))},
		}}
	})
}

// decimalCastFunction is the sql.Function for lockstep_cast_decimal.
func decimalCastFunction(name string) (sql.Function, bool) {
	if name != decimalCastName {
		return nil, false
	}
	return sql.Function2{Name: decimalCastName, Fn: func(_ *sql.Context, x, digits sql.Expression) sql.Expression {
		return &decimalCast{BinaryExpressionStub: expression.BinaryExpressionStub{LeftChild: x, RightChild: digits}}
	}}, true
}

// decimalCast is x cast to DECIMAL(M,0); M is a literal.
type decimalCast struct {
	expression.BinaryExpressionStub
}

var _ sql.FunctionExpression = (*decimalCast)(nil)

func (c *decimalCast) FunctionName() string { return decimalCastName }
func (c *decimalCast) Description() string  { return "casts to DECIMAL(M,0)" }

// digits is M, within MySQL's bounds (1 to 65).
func (c *decimalCast) digits(ctx *sql.Context) (int, error) {
	v, err := c.RightChild.Eval(ctx, nil)
	if err != nil {
		return 0, err
	}
	m, _, err := types.Int64.Convert(ctx, v)
	if err != nil {
		return 0, err
	}
	switch n := int(m.(int64)); {
	case n == 0: // DECIMAL(0) is DECIMAL's default, as in MySQL
		return defaultDecimalDigits, nil
	case n < 0 || n > maxDecimalPrecision:
		return 0, mysql.NewSQLError(mysqlerr.TooBigPrecision, "42000", "Too-big precision %d specified for '%s'. Maximum is %d.", n, c.LeftChild, maxDecimalPrecision)
	default:
		return n, nil
	}
}

func (c *decimalCast) Type(ctx *sql.Context) sql.Type {
	m, err := c.digits(ctx)
	if err != nil {
		m = defaultDecimalDigits
	}
	t, err := types.CreateDecimalType(uint8(m), 0)
	if err != nil {
		return types.InternalDecimalType
	}
	return t
}

func (c *decimalCast) IsNullable(ctx *sql.Context) bool { return c.LeftChild.IsNullable(ctx) }

func (c *decimalCast) String() string {
	return fmt.Sprintf("cast(%s as decimal(%s))", c.LeftChild, c.RightChild)
}

func (c *decimalCast) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 2 {
		return nil, sql.ErrInvalidChildrenNumber.New(c, len(children), 2)
	}
	return &decimalCast{BinaryExpressionStub: expression.BinaryExpressionStub{LeftChild: children[0], RightChild: children[1]}}, nil
}

func (c *decimalCast) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	m, err := c.digits(ctx)
	if err != nil {
		return nil, err
	}
	v, err := c.LeftChild.Eval(ctx, row)
	if err != nil || v == nil {
		return nil, err
	}
	v, err = types.ConvertHexBlobToDecimalForNumericContext(v, c.LeftChild.Type(ctx))
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
	d = d.Round(0)
	limit := decimal.New(1, int32(m))
	if d.Abs().Cmp(limit) >= 0 {
		ctx.Warn(mysql.ERWarnDataOutOfRange, "Out of range value for column '%s' at row 1", c.String())
		largest := limit.Sub(decimal.NewFromInt(1))
		if d.Sign() < 0 {
			largest = largest.Neg()
		}
		d = largest
	}
	return d, nil
}
