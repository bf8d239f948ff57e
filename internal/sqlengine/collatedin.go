package sqlengine

// IN over a list of strings, compared by the left side's collation.
//
// go-mysql-server turns `x IN ('a', 'b', ...)` into a hash lookup whose
// hashes use the comparison type of x and the list's first value, a
// string type of a binary collation, and compares a list it does not
// hash (in a select list, with expressions in it) as two literals, again
// by bytes: in a column of a case-insensitive collation
// (utf8mb4_0900_ai_ci, Lockstep's default), `name IN ('alice')` missed
// the row 'Alice' that `name = 'alice'` found, and NOT IN kept it.
// Silently wrong. In MySQL a column's collation (implicit) decides how it
// compares with literals (coercible). collatedIn hashes a constant list,
// and compares any other list element by element, under the left side's
// collation; IN over other types is left as it is.

import (
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/hash"
	"github.com/dolthub/go-mysql-server/sql/types"
)

type collatedIn struct {
	left, right sql.Expression // right: a Tuple
	typ         sql.Type       // the left's string type, which compares
	// set holds the hashes of a constant list (hashed is set), hasNull
	// whether it holds NULL; a list that is not constant is evaluated
	// for each row.
	hashed  bool
	set     map[uint64]struct{}
	hasNull bool
}

var _ sql.Expression = (*collatedIn)(nil)

// asCollatedIn replaces go-mysql-server's hashed IN when its left is a
// string and its list holds strings (or NULL) only.
func asCollatedIn(ctx *sql.Context, e sql.Expression) (sql.Expression, bool, error) {
	var left, right sql.Expression
	hashed := false
	switch x := e.(type) {
	case *expression.HashInTuple:
		left, right, hashed = x.Left(), x.Right(), true
	case *expression.InTuple:
		left, right = x.Left(), x.Right()
	default:
		return nil, false, nil
	}
	lt := left.Type(ctx)
	if !types.IsTextOnly(lt) {
		return nil, false, nil
	}
	tup, ok := right.(expression.Tuple)
	if !ok {
		return nil, false, nil
	}
	for _, el := range tup {
		if t := el.Type(ctx); t != types.Null && !types.IsTextOnly(t) {
			return nil, false, nil
		}
	}
	c := &collatedIn{left: left, right: right, typ: lt, hashed: hashed}
	if !hashed {
		return c, true, nil
	}
	c.set = map[uint64]struct{}{}
	for _, el := range tup {
		if el.Type(ctx) == types.Null {
			c.hasNull = true
			continue
		}
		v, err := el.Eval(ctx, nil)
		if err != nil {
			return nil, false, err
		}
		if v == nil {
			c.hasNull = true
			continue
		}
		h, inRange, err := hash.HashOfSimple(ctx, v, lt)
		if err != nil {
			return nil, false, err
		}
		if inRange == sql.InRange {
			c.set[h] = struct{}{}
		}
	}
	return c, true, nil
}

func (c *collatedIn) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	v, err := c.left.Eval(ctx, row)
	if err != nil || v == nil {
		return nil, err
	}
	if !c.hashed {
		return c.evalList(ctx, row, v)
	}
	h, inRange, err := hash.HashOfSimple(ctx, v, c.typ)
	if err != nil {
		return nil, err
	}
	if inRange == sql.InRange {
		if _, ok := c.set[h]; ok {
			return true, nil
		}
	}
	if c.hasNull {
		return nil, nil
	}
	return false, nil
}

// evalList compares v with each element of the list in turn.
func (c *collatedIn) evalList(ctx *sql.Context, row sql.Row, v any) (any, error) {
	null := false
	for _, el := range c.right.(expression.Tuple) {
		r, err := el.Eval(ctx, row)
		if err != nil {
			return nil, err
		}
		if r == nil {
			null = true
			continue
		}
		cmp, err := c.typ.Compare(ctx, v, r)
		if err != nil {
			return nil, err
		}
		if cmp == 0 {
			return true, nil
		}
	}
	if null {
		return nil, nil
	}
	return false, nil
}

func (c *collatedIn) Resolved() bool                      { return c.left.Resolved() && c.right.Resolved() }
func (c *collatedIn) IsNullable(*sql.Context) bool        { return true }
func (c *collatedIn) Type(*sql.Context) sql.Type          { return types.Boolean }
func (c *collatedIn) Children() []sql.Expression          { return []sql.Expression{c.left, c.right} }
func (c *collatedIn) String() string                      { return fmt.Sprintf("(%s IN %s)", c.left, c.right) }
func (c *collatedIn) DebugString(ctx *sql.Context) string { return c.String() }

func (c *collatedIn) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 2 {
		return nil, sql.ErrInvalidChildrenNumber.New(c, len(children), 2)
	}
	var in sql.Expression = expression.NewInTuple(children[0], children[1])
	if c.hashed {
		hit, err := expression.NewHashInTuple(ctx, children[0], children[1])
		if err != nil {
			return nil, err
		}
		in = hit
	}
	ne, ok, err := asCollatedIn(ctx, in)
	if err != nil || !ok {
		return in, err
	}
	return ne, nil
}
