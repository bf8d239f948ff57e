package sqlengine

// <=> compared by collation. go-mysql-server's NULL-safe equality
// compares two strings of different types (a column and a literal) by the
// comparison type alone, without the collation = takes from the operands'
// coercibility: in a column of a case-insensitive collation, name <=>
// 'alice' was false for 'Alice' where name = 'alice' is true. Silently
// wrong. nullSafeEqual is <=> with = deciding for two values that are not
// NULL.

import (
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
)

type nullSafeEqual struct {
	eq *expression.Equals // over the same operands
}

var _ sql.Expression = (*nullSafeEqual)(nil)

// asNullSafeEqual replaces go-mysql-server's <=> over two strings.
func asNullSafeEqual(ctx *sql.Context, e sql.Expression) (sql.Expression, bool) {
	n, ok := e.(*expression.NullSafeEquals)
	if !ok || !types.IsTextOnly(n.Left().Type(ctx)) || !types.IsTextOnly(n.Right().Type(ctx)) {
		return nil, false
	}
	return &nullSafeEqual{eq: expression.NewEquals(n.Left(), n.Right())}, true
}

func (n *nullSafeEqual) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	l, err := n.eq.Left().Eval(ctx, row)
	if err != nil {
		return nil, err
	}
	r, err := n.eq.Right().Eval(ctx, row)
	if err != nil {
		return nil, err
	}
	if l == nil || r == nil {
		return l == nil && r == nil, nil
	}
	cmp, err := n.eq.Compare(ctx, row)
	if err != nil {
		return nil, err
	}
	return cmp == 0, nil
}

func (n *nullSafeEqual) Resolved() bool                      { return n.eq.Resolved() }
func (n *nullSafeEqual) IsNullable(*sql.Context) bool        { return false }
func (n *nullSafeEqual) Type(*sql.Context) sql.Type          { return types.Boolean }
func (n *nullSafeEqual) Children() []sql.Expression          { return n.eq.Children() }
func (n *nullSafeEqual) String() string                      { return fmt.Sprintf("(%s <=> %s)", n.eq.Left(), n.eq.Right()) }
func (n *nullSafeEqual) DebugString(ctx *sql.Context) string { return n.String() }

func (n *nullSafeEqual) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 2 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 2)
	}
	return &nullSafeEqual{eq: expression.NewEquals(children[0], children[1])}, nil
}
