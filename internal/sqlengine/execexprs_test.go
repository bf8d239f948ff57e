package sqlengine

import (
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// TestExecExpressionsSettles checks execExpressions' invariant: a node it
// made is built again, so it must find nothing more to change there (a
// change at every build would recurse without end).
func TestExecExpressionsSettles(t *testing.T) {
	ctx := sql.NewEmptyContext()
	lit := func(v int64) sql.Expression { return expression.NewLiteral(v, types.Int64) }
	date := expression.NewGetField(0, types.Date, "d", true)
	concat, err := function.NewConcat(ctx, date, expression.NewLiteral("x", types.LongText))
	if err != nil {
		t.Fatal(err)
	}
	for name, exprs := range map[string][]sql.Expression{
		"a division":           {lit(1), expression.NewDiv(lit(1), lit(0))},
		"nested divisions":     {expression.NewMod(expression.NewIntDiv(lit(6), lit(0)), expression.NewDiv(lit(1), lit(2)))},
		"a division in a call": {expression.NewAlias("a", expression.NewDiv(lit(1), lit(0)))},
		"a date read as text":  {concat},
		"a date as a number":   {expression.NewPlus(date, lit(0))},
	} {
		var n sql.Node = plan.NewValues([][]sql.Expression{exprs})
		nn, changed := execExpressions(ctx, n)
		if !changed {
			t.Errorf("%s: nothing corrected", name)
			continue
		}
		if again, changedAgain := execExpressions(ctx, nn); changedAgain {
			t.Errorf("%s: corrected again: %v", name, again)
		}
	}
	// Nothing to correct: nothing changed.
	if _, changed := execExpressions(ctx, plan.NewValues([][]sql.Expression{{lit(1), expression.NewAlias("a", lit(2))}})); changed {
		t.Error("a node without arithmetic or temporal arguments was changed")
	}
}
