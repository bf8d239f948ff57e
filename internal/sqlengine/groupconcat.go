package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/expression/function/aggregation"
	"github.com/dolthub/go-mysql-server/sql/transform"
)

// GROUP_CONCAT of several expressions, as MySQL computes it.
//
// MySQL's GROUP_CONCAT(e1, e2, ...) joins, for each row, the values of
// all its expressions (a row where one of them is NULL is left out), then
// joins the rows with the separator. go-mysql-server evaluates every
// expression and keeps the first's value only: GROUP_CONCAT(id, ' ', name)
// gave the ids alone. Before execution (correctArgs) such a GROUP_CONCAT
// becomes the GROUP_CONCAT of one CONCAT(e1, e2, ...), which is exactly
// MySQL's per-row value (CONCAT is NULL when an argument is). Its
// expressions were corrected already (the children come first), temporal
// values to their text among them (temporaltext.go).

// concatGroupArgs rewrites a GROUP_CONCAT of several expressions.
func concatGroupArgs(ctx *sql.Context, gc *aggregation.GroupConcat) (sql.Expression, transform.TreeIdentity, error) {
	args := gc.OutputExpressions()
	if len(args) < 2 {
		return gc, transform.SameTree, nil
	}
	concat, err := function.NewConcat(ctx, args...)
	if err != nil {
		return nil, transform.SameTree, err
	}
	children := gc.Children()
	children = append(children[:len(children)-len(args):len(children)-len(args)], concat)
	ne, err := gc.WithChildren(ctx, children...)
	if err != nil {
		return nil, transform.SameTree, err
	}
	out := ne.(*aggregation.GroupConcat)
	if w := gc.Window(); w != nil {
		out = out.WithWindow(ctx, w).(*aggregation.GroupConcat)
	}
	return out.WithId(gc.Id()).(*aggregation.GroupConcat), transform.NewTree, nil
}
