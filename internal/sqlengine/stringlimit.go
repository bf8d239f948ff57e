package sqlengine

import (
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// The string functions whose result can be far larger than their
// arguments (REPEAT, LPAD, RPAD, SPACE) return NULL with MySQL's warning
// 1301 when the result would be longer than max_allowed_packet, as MySQL
// does, instead of building it: go-mysql-server built whatever was asked,
// so one statement (SELECT REPEAT('x', 1 << 30)) could take a gigabyte.
// The length is known from the arguments before anything is built.

const erWarnAllowedPacketOverflowed = 1301 // ER_WARN_ALLOWED_PACKET_OVERFLOWED

// boundedFunctions are go-mysql-server's functions wrapped so, with how
// long their result is from their arguments' values.
var boundedFunctions = map[string]func(ctx *sql.Context, vals []any) int64{
	"repeat": func(ctx *sql.Context, v []any) int64 { return int64(len(fmt.Sprint(v[0]))) * intArg(ctx, v[1]) },
	"lpad":   func(ctx *sql.Context, v []any) int64 { return intArg(ctx, v[1]) },
	"rpad":   func(ctx *sql.Context, v []any) int64 { return intArg(ctx, v[1]) },
	"space":  func(ctx *sql.Context, v []any) int64 { return intArg(ctx, v[0]) },
}

// intArg is a count argument's value (0 when negative or not a number).
func intArg(ctx *sql.Context, v any) int64 {
	n, _, err := types.Int64.Convert(ctx, v)
	if err != nil {
		return 0
	}
	if x, ok := n.(int64); ok && x > 0 {
		return x
	}
	return 0
}

// boundedFunction returns the wrapped form of go-mysql-server's function
// name, if it is one of boundedFunctions.
func boundedFunction(name string) (sql.Function, bool) {
	size, ok := boundedFunctions[name]
	if !ok {
		return nil, false
	}
	var base sql.Function
	for _, f := range function.BuiltIns {
		if f.FunctionName() == name {
			base = f
		}
	}
	if base == nil {
		return nil, false
	}
	return sql.FunctionN{Name: name, Fn: func(ctx *sql.Context, args ...sql.Expression) (sql.Expression, error) {
		inner, err := base.NewInstance(ctx, args)
		if err != nil {
			return nil, err
		}
		return &boundedString{Expression: inner, name: name, size: size}, nil
	}}, true
}

// boundedString is one call of a bounded function.
type boundedString struct {
	sql.Expression
	name string
	size func(*sql.Context, []any) int64
}

var _ sql.FunctionExpression = (*boundedString)(nil)

func (b *boundedString) FunctionName() string { return b.name }

func (b *boundedString) Description() string {
	if d, ok := b.Expression.(sql.FunctionExpression); ok {
		return d.Description()
	}
	return b.name
}

func (b *boundedString) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	inner, err := b.Expression.WithChildren(ctx, children...)
	if err != nil {
		return nil, err
	}
	return &boundedString{Expression: inner, name: b.name, size: b.size}, nil
}

func (b *boundedString) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	children := b.Expression.Children()
	vals := make([]any, len(children))
	lits := make([]sql.Expression, len(children))
	for i, c := range children {
		v, err := c.Eval(ctx, row)
		if err != nil {
			return nil, err
		}
		if v == nil {
			return nil, nil // NULL in, NULL out, as for every one of them
		}
		vals[i] = v
		lits[i] = expression.NewLiteral(v, c.Type(ctx))
	}
	if b.name == "repeat" && intArg(ctx, vals[1]) == 0 {
		return "", nil // MySQL: a count below 1 gives '' (go-mysql-server: an error)
	}
	_, maxv, _ := sql.SystemVariables.GetGlobal("max_allowed_packet")
	if max, ok := asInt64(maxv); ok && b.size(ctx, vals) > max {
		ctx.Warn(erWarnAllowedPacketOverflowed, "Result of %s() was larger than max_allowed_packet (%d) - truncated", b.name, max)
		return nil, nil
	}
	// Evaluated on the values already computed (an argument is not
	// evaluated twice).
	inner, err := b.Expression.WithChildren(ctx, lits...)
	if err != nil {
		return nil, err
	}
	return inner.Eval(ctx, row)
}
