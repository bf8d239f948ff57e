package sqlengine

// Comparisons by collation that go-mysql-server made by bytes.
//
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
	"github.com/dolthub/go-mysql-server/sql/expression/function"
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

// collatedCoalesce is COALESCE with MySQL's collation: the one the
// arguments' coercibility decides (a column's over a literal's).
// go-mysql-server gave a COALESCE of a column and a string literal the
// collation of its LONGTEXT result type, binary: COALESCE(name, ”) =
// 'ALICE' was false for 'Alice' in a case-insensitive column, though
// IFNULL(name, ”) = 'ALICE' was true.
type collatedCoalesce struct{ *function.Coalesce }

func asCollatedCoalesce(ctx *sql.Context, e sql.Expression) (sql.Expression, bool) {
	c, ok := e.(*function.Coalesce)
	if !ok || !types.IsText(c.Type(ctx)) {
		return nil, false
	}
	return collatedCoalesce{c}, true
}

func (c collatedCoalesce) CollationCoercibility(ctx *sql.Context) (sql.CollationID, byte) {
	coll, coer := sql.Collation_binary, byte(6)
	first := true
	for _, a := range c.Children() {
		if a == nil || types.IsNull(ctx, a) {
			continue
		}
		ac, acoer := sql.GetCoercibility(ctx, a)
		if first {
			coll, coer, first = ac, acoer, false
			continue
		}
		coll, coer = sql.ResolveCoercibility(coll, coer, ac, acoer)
	}
	return coll, coer
}

// Type is the text type of that collation: go-mysql-server compares two
// values of one type by the type's collation alone.
func (c collatedCoalesce) Type(ctx *sql.Context) sql.Type {
	coll, _ := c.CollationCoercibility(ctx)
	return types.CreateLongText(coll)
}

func (c collatedCoalesce) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	e, err := function.NewCoalesce(ctx, children...)
	if err != nil {
		return nil, err
	}
	if cc, ok := asCollatedCoalesce(ctx, e); ok {
		return cc, nil
	}
	return e, nil
}
