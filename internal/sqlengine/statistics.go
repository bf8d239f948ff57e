package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression/function/aggregation"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// STD, STDDEV, STDDEV_POP, STDDEV_SAMP, VARIANCE, VAR_POP and VAR_SAMP
// as DOUBLE, as MySQL types them. go-mysql-server computes them in
// float64 but types them as their argument: over an INT column
// VARIANCE of 1, 2 and 4 came out 2 instead of 1.5556, STD 1 instead of
// 1.2472. doubleAggregate is go-mysql-server's aggregate with the type
// corrected; its values are go-mysql-server's.

// statisticsFunction is the sql.Function for the statistical aggregates.
func statisticsFunction(name string) (sql.Function, bool) {
	var build func(sql.Expression) statAggregate
	switch name {
	case "std", "stddev", "stddev_pop":
		build = func(e sql.Expression) statAggregate { return aggregation.NewStdDevPop(e) }
	case "stddev_samp":
		build = func(e sql.Expression) statAggregate { return aggregation.NewStdDevSamp(e) }
	case "variance", "var_pop":
		build = func(e sql.Expression) statAggregate { return aggregation.NewVarPop(e) }
	case "var_samp":
		build = func(e sql.Expression) statAggregate { return aggregation.NewVarSamp(e) }
	default:
		return nil, false
	}
	return sql.Function1{Name: name, Fn: func(_ *sql.Context, e sql.Expression) sql.Expression {
		return doubleAggregate{build(e)}
	}}, true
}

// statAggregate is what go-mysql-server's statistical aggregates are.
type statAggregate interface {
	sql.Aggregation
	sql.FunctionExpression
}

// doubleAggregate is a statistical aggregate typed DOUBLE.
type doubleAggregate struct{ statAggregate }

var _ sql.Aggregation = doubleAggregate{}

func (a doubleAggregate) Type(*sql.Context) sql.Type { return types.Float64 }

func (a doubleAggregate) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	e, err := a.statAggregate.WithChildren(ctx, children...)
	if err != nil {
		return nil, err
	}
	return doubleAggregate{e.(statAggregate)}, nil
}

func (a doubleAggregate) WithWindow(ctx *sql.Context, w *sql.WindowDefinition) sql.WindowAdaptableExpression {
	return doubleAggregate{a.statAggregate.WithWindow(ctx, w).(statAggregate)}
}

func (a doubleAggregate) WithId(id sql.ColumnId) sql.IdExpression {
	return doubleAggregate{a.statAggregate.WithId(id).(statAggregate)}
}

func (a doubleAggregate) DebugString(ctx *sql.Context) string {
	return sql.DebugString(ctx, a.statAggregate)
}
