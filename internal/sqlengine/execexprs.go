package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function/aggregation"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// execExpressions is n with its expressions corrected where
// go-mysql-server evaluates them otherwise than MySQL, and ok false if
// nothing needed to change:
//
//   - temporal values read as text or numbers (temporaltext.go), ENUM
//     and SET values read as text (members.go), and doubles read as text
//     (doubletext.go);
//   - divisions by zero that strict mode makes the statement's error
//     (strictmode.go);
//   - COUNT(DISTINCT ...) comparing strings by collation (distinct.go),
//     and IN over a list of strings, <=> and COALESCE too
//     (collatedin.go, nullsafe.go);
//   - numbers an UPDATE assigns out of a column's range (outofrange.go);
//   - the ESCAPE clause of LIKE (clienttext.go).
//
// It runs as each node is built for execution (boundedTopN.Build), not as
// an analyzer rule: go-mysql-server plans simple statements with a fixed
// set of rules that skips any rule added to it. It must find nothing to
// change in a node it made, which is built again.
func execExpressions(ctx *sql.Context, n sql.Node) (sql.Node, bool) {
	en, ok := n.(sql.Expressioner)
	if !ok {
		return nil, false
	}
	exprs := en.Expressions()
	var changed []sql.Expression
	for i, e := range exprs {
		ne, same, err := transform.Expr(ctx, e, correctArgs)
		if err != nil {
			return nil, false
		}
		if d, isDiv := asStrictArithmetic(ne); isDiv {
			ne, same = d, transform.NewTree // the node's own expression
		}
		if _, isFilter := n.(*plan.Filter); isFilter && types.IsTimespan(ne.Type(ctx)) {
			// WHERE t, t a TIME: true unless 00:00:00 (temporaltext.go).
			ne, same = &temporalAs{valueWrapper: wrap(ne), typ: ne.Type(ctx), number: true}, transform.NewTree
		}
		if same {
			continue
		}
		if changed == nil {
			changed = append([]sql.Expression(nil), exprs...)
		}
		changed[i] = ne
	}
	if changed == nil {
		return nil, false
	}
	nn, err := en.WithExpressions(ctx, changed...)
	if err != nil {
		return nil, false
	}
	return nn, true
}

// correctArgs corrects e's arguments (transform.Expr applies it to every
// expression of a tree, bottom-up).
func correctArgs(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
	if cd, ok := e.(*aggregation.CountDistinct); ok {
		return collatedCountDistinct{cd}, transform.NewTree, nil // distinct.go
	}
	if sf, ok := checkSetRange(ctx, e); ok {
		return sf, transform.NewTree, nil // outofrange.go
	}
	if l, ok := asEscapedLike(e); ok {
		return l, transform.NewTree, nil // clienttext.go
	}
	if in, ok, err := asCollatedIn(ctx, e); err != nil || ok {
		return in, transform.NewTree, err // collatedin.go
	}
	if eq, ok := asNullSafeEqual(ctx, e); ok {
		return eq, transform.NewTree, nil // nullsafe.go
	}
	if c, ok := asCollatedCoalesce(ctx, e); ok {
		return c, transform.NewTree, nil // nullsafe.go
	}
	if gc, ok := e.(*aggregation.GroupConcat); ok {
		if mine, ok := asGroupConcat(gc); ok {
			return mine.valuesAsText(ctx) // groupconcat.go
		}
	}
	e, sameText, err := wrapTemporalArgs(ctx, e)
	if err != nil {
		return nil, transform.SameTree, err
	}
	e, sameMembers, err := wrapMemberArgs(ctx, e) // members.go
	if err != nil {
		return nil, transform.SameTree, err
	}
	e, sameDouble, err := wrapDoubleArgs(ctx, e)
	if err != nil {
		return nil, transform.SameTree, err
	}
	e, sameDiv, err := wrapArithmeticArgs(ctx, e)
	return e, sameText && sameMembers && sameDouble && sameDiv, err
}

// valueWrapper is embedded by the expressions put in front of one value
// to correct it (temporalAs, doubleAsText, strictArithmetic, rangeChecked,
// exactJSONText): each is resolved, nullable, typed and printed as its
// child, unless it says otherwise; its Eval and WithChildren are its own.
type valueWrapper struct{ expression.UnaryExpressionStub }

// wrap is the valueWrapper of child.
func wrap(child sql.Expression) valueWrapper {
	return valueWrapper{expression.UnaryExpressionStub{Child: child}}
}

func (w *valueWrapper) Type(ctx *sql.Context) sql.Type      { return w.Child.Type(ctx) }
func (w *valueWrapper) String() string                      { return w.Child.String() }
func (w *valueWrapper) DebugString(ctx *sql.Context) string { return sql.DebugString(ctx, w.Child) }

// replaceChildren is e with each child (the i-th) for which replace
// returns an expression replaced by it (nil keeps the child), and whether
// any was.
func replaceChildren(ctx *sql.Context, e sql.Expression, replace func(i int, c sql.Expression) sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
	children := e.Children()
	var replaced []sql.Expression
	for i, c := range children {
		r := replace(i, c)
		if r == nil {
			continue
		}
		if replaced == nil {
			replaced = append([]sql.Expression(nil), children...)
		}
		replaced[i] = r
	}
	if replaced == nil {
		return e, transform.SameTree, nil
	}
	ne, err := e.WithChildren(ctx, replaced...)
	if err != nil {
		return nil, transform.SameTree, err
	}
	return ne, transform.NewTree, nil
}
