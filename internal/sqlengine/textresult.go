package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// String functions that give a string whatever their argument is.
//
// go-mysql-server types LOWER, UPPER, REVERSE, SUBSTRING (and its names
// SUBSTR and MID) and LTRIM/RTRIM as their argument: SUBSTRING(dt, 1, 7)
// of a DATETIME was a DATETIME, and the '2021-03' it computed failed as
// one (1292 "Incorrect datetime value"), so the common GROUP BY
// SUBSTRING(created_at, 1, 7) did not run; of an INT it was an INT. In
// MySQL they are strings: a string argument's type is kept, anything else
// gives a string in the connection's collation. The functions are
// go-mysql-server's with that type (textResult); their temporal arguments
// are read as MySQL reads them as text (temporaltext.go).

// textResultNames are the functions typed as their argument.
var textResultNames = map[string]bool{
	"lower": true, "lcase": true, "upper": true, "ucase": true, "reverse": true,
	"substring": true, "substr": true, "mid": true, "ltrim": true, "rtrim": true,
}

// builtIn is go-mysql-server's function of each of textResultNames.
var builtIn = func() map[string]sql.Function {
	m := map[string]sql.Function{}
	for _, f := range function.BuiltIns {
		if textResultNames[f.FunctionName()] {
			m[f.FunctionName()] = f
		}
	}
	return m
}()

// textResultFunction is the sql.Function for one of textResultNames.
func textResultFunction(name string) (sql.Function, bool) {
	f, ok := builtIn[name]
	if !ok {
		return nil, false
	}
	return sql.FunctionN{Name: name, Fn: func(ctx *sql.Context, args ...sql.Expression) (sql.Expression, error) {
		e, err := f.NewInstance(ctx, args)
		if err != nil {
			return nil, err
		}
		return asTextResult(e), nil
	}}, true
}

func asTextResult(e sql.Expression) sql.Expression {
	if fe, ok := e.(sql.FunctionExpression); ok {
		return textResult{fe}
	}
	return e
}

// textResult is a string function whose result is a string.
type textResult struct{ sql.FunctionExpression }

func (t textResult) Type(ctx *sql.Context) sql.Type {
	typ := t.FunctionExpression.Type(ctx)
	if types.IsText(typ) {
		return typ
	}
	return types.CreateLongText(ctx.GetCollation())
}

func (t textResult) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	e, err := t.FunctionExpression.WithChildren(ctx, children...)
	if err != nil {
		return nil, err
	}
	return asTextResult(e), nil
}

func (t textResult) CollationCoercibility(ctx *sql.Context) (sql.CollationID, byte) {
	if !types.IsText(t.FunctionExpression.Type(ctx)) {
		return ctx.GetCollation(), 4 // a string made from a non-string
	}
	return sql.GetCoercibility(ctx, t.FunctionExpression)
}
