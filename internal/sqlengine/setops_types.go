package sqlengine

import (
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// The type of a set operation's column whose sides are exact numbers of
// different types.
//
// MySQL gives each column of a UNION, INTERSECT or EXCEPT one type,
// aggregated over the sides, and converts every row's value to it:
// `SELECT 1 UNION SELECT 2.5` is a DECIMAL(2,1) column whose rows read
// 1.0 and 2.5. go-mysql-server typed such a column with its internal
// DECIMAL(65,30) and passed each side's values on as they were, so
// clients read 1 and 2.5: equal as numbers, not as text, and the text is
// what most drivers hand applications.
//
// typedSetOp gives a column whose sides are all integers or DECIMALs, at
// least one of them a DECIMAL and not all of one type, MySQL's type:
// DECIMAL with the largest number of integer digits and the largest
// scale of its sides (at most 65 digits, 30 of them decimals), as a
// column's type, so that every value is written with that scale. An
// integer side counts its type's digits (a literal 1 is a TINYINT, 3
// digits, where MySQL counts 1), so the precision described can be larger
// than MySQL's; the values are MySQL's. A derived table over such an
// operation has its columns' references retyped (they were planned with
// go-mysql-server's type). Other mixes, and set operations in subqueries
// of expressions, which go-mysql-server evaluates itself, keep
// go-mysql-server's type (README, "Known to differ").
type typedSetOp struct {
	*plan.SetOp
	sch sql.Schema
}

var _ sql.Node = (*typedSetOp)(nil)

func (n *typedSetOp) Schema(*sql.Context) sql.Schema { return n.sch }

func (n *typedSetOp) String() string { return "typed " + n.SetOp.String() }

// WithChildren and WithExpressions keep the types over a rebuilt set
// operation (rules after this one rebuild nodes).
func (n *typedSetOp) WithChildren(ctx *sql.Context, children ...sql.Node) (sql.Node, error) {
	return n.rewrap(n.SetOp.WithChildren(ctx, children...))
}

func (n *typedSetOp) WithExpressions(ctx *sql.Context, exprs ...sql.Expression) (sql.Node, error) {
	return n.rewrap(n.SetOp.WithExpressions(ctx, exprs...))
}

func (n *typedSetOp) rewrap(c sql.Node, err error) (sql.Node, error) {
	if err != nil {
		return nil, err
	}
	so, ok := c.(*plan.SetOp)
	if !ok {
		return nil, fmt.Errorf("set operation rebuilt as %T", c)
	}
	return &typedSetOp{SetOp: so, sch: n.sch}, nil
}

// typeSetOps wraps each set operation whose column types MySQL would
// give otherwise in a typedSetOp (after analysis: the planner has done
// with the tree), and gives the columns of a derived table over one,
// where the query reads them, the same types.
func typeSetOps(ctx *sql.Context, n sql.Node) (sql.Node, transform.TreeIdentity, error) {
	// A derived table's columns are read by column id: the references
	// were planned with go-mysql-server's types. (Its set operation may
	// have been typed when the derived table was analyzed on its own.)
	retyped := map[sql.ColumnId]sql.Type{}
	n, same, err := transform.NodeWithOpaque(ctx, n, func(ctx *sql.Context, n sql.Node) (sql.Node, transform.TreeIdentity, error) {
		switch n := n.(type) {
		case *plan.SetOp:
			if sch, changed := setOpSchema(ctx, n); changed {
				return &typedSetOp{SetOp: n, sch: sch}, transform.NewTree, nil
			}
		case *plan.SubqueryAlias:
			// Its child is done (the walk goes bottom up).
			if ts, ok := n.Child.(*typedSetOp); ok && n.Columns().Len() == len(ts.sch) {
				i := 0
				n.Columns().ForEach(func(id sql.ColumnId) {
					retyped[id] = ts.sch[i].Type
					i++
				})
			}
		}
		return n, transform.SameTree, nil
	})
	if err != nil || len(retyped) == 0 {
		return n, same, err
	}
	n, refs, err := retypeColumns(ctx, n, retyped)
	return n, same && refs, err
}

// setOpSchema is n's schema with MySQL's types where they differ from
// go-mysql-server's (changed says whether any does).
func setOpSchema(ctx *sql.Context, n *plan.SetOp) (sch sql.Schema, changed bool) {
	sch = n.Schema(ctx)
	left, right := sideTypes(ctx, n.Left()), sideTypes(ctx, n.Right())
	if len(left) != len(sch) || len(right) != len(sch) {
		return sch, false
	}
	var out sql.Schema
	for i, col := range sch {
		t, ok := exactUnionType(ctx, left[i], right[i])
		if !ok {
			continue
		}
		if out == nil {
			out = make(sql.Schema, len(sch))
			copy(out, sch)
		}
		c := *col
		c.Type = t
		out[i] = &c
	}
	if out == nil {
		return sch, false
	}
	return out, true
}

// sideTypes are the types of the columns of a side of a set operation as
// the side computes them: go-mysql-server's planner converts each side's
// columns to the operation's type in a projection over it, so the type
// is the one under that conversion; a side that is a set operation
// itself has the types MySQL gives it.
func sideTypes(ctx *sql.Context, n sql.Node) []sql.Type {
	if so, ok := n.(*plan.SetOp); ok {
		sch, _ := setOpSchema(ctx, so)
		return schemaTypes(sch)
	}
	if ts, ok := n.(*typedSetOp); ok {
		return schemaTypes(ts.sch)
	}
	pr, ok := n.(*plan.Project)
	if !ok {
		return schemaTypes(n.Schema(ctx))
	}
	out := make([]sql.Type, len(pr.Projections))
	for i, e := range pr.Projections {
		if a, ok := e.(*expression.Alias); ok {
			e = a.Child
		}
		if c, ok := e.(*expression.Convert); ok {
			e = c.Child
		}
		out[i] = e.Type(ctx)
	}
	return out
}

func schemaTypes(sch sql.Schema) []sql.Type {
	out := make([]sql.Type, len(sch))
	for i, c := range sch {
		out[i] = c.Type
	}
	return out
}

// exactUnionType is the DECIMAL column type MySQL gives a column whose
// sides are of exact types a and b, one of them a DECIMAL and the two
// different; ok is false for any other pair.
func exactUnionType(ctx *sql.Context, a, b sql.Type) (sql.Type, bool) {
	_, aDec := a.(sql.DecimalType)
	_, bDec := b.(sql.DecimalType)
	if (!aDec && !bDec) || a.Equals(b) || a.Equals(types.InternalDecimalType) || b.Equals(types.InternalDecimalType) {
		return nil, false
	}
	ap, as, aok := exactDigits(ctx, a)
	bp, bs, bok := exactDigits(ctx, b)
	if !aok || !bok {
		return nil, false
	}
	scale := min(max(as, bs), maxDecimalScale)
	precision := min(max(ap-as, bp-bs)+scale, maxDecimalPrecision)
	t, err := types.CreateColumnDecimalType(uint8(precision), uint8(scale))
	if err != nil {
		return nil, false
	}
	return t, true
}
