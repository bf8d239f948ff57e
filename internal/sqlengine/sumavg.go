package sqlengine

// SUM and AVG as MySQL computes them.
//
// go-mysql-server adds every value as a float64 and types both results
// DOUBLE: the sum of two BIGINTs past 2^53 comes back rounded, and the
// sum of a DECIMAL money column as a binary fraction. MySQL (and
// MariaDB) compute SUM and AVG of exact values exactly and return
// DECIMAL:
//
//   - SUM of an integer or DECIMAL(p,s) column: DECIMAL(p+22, s), where
//     p is the integer type's digits (TINYINT 3, SMALLINT 5, MEDIUMINT 8,
//     INT 10, BIGINT 19, BIGINT UNSIGNED 20, YEAR 4);
//   - AVG: DECIMAL(p+4, s+4) (div_precision_increment), rounded half away
//     from zero;
//   - precision at most 65, scale at most 30;
//   - anything else (FLOAT, DOUBLE, strings, BIT, dates and times): DOUBLE,
//     as go-mysql-server computes it.
//
// exactSum and exactAvg replace go-mysql-server's functions by name
// (provider.Function) and keep its behaviour for what is not exact. The
// planner types an aggregate's output column DOUBLE whatever the
// function says, so the analyzer rule exactAggregateTypes gives the
// columns that read an exact aggregate its DECIMAL type. Windowed SUM and
// AVG (OVER ...) are exact too (exactWindow).

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function/aggregation"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/shopspring/decimal"
)

const (
	// sumExtraDigits is what SUM adds to its argument's precision
	// (MySQL's DECIMAL_LONGLONG_DIGITS).
	sumExtraDigits = 22
	// avgExtraScale is div_precision_increment's default.
	avgExtraScale       = 4
	maxDecimalPrecision = 65
	maxDecimalScale     = 30

	// exactAggregateTypesRule names the analyzer rule, past
	// go-mysql-server's own ids.
	exactAggregateTypesRule analyzer.RuleId = 1 << 20
)

// exactDigits is the precision and scale of an exact numeric type, and
// whether t is one.
func exactDigits(ctx *sql.Context, t sql.Type) (precision, scale int, ok bool) {
	if dt, isDec := t.(sql.DecimalType); isDec {
		return int(dt.Precision()), int(dt.Scale()), true
	}
	switch t.Type() {
	case sqltypes.Int8, sqltypes.Uint8:
		return 3, 0, true
	case sqltypes.Int16, sqltypes.Uint16:
		return 5, 0, true
	case sqltypes.Int24, sqltypes.Uint24:
		return 8, 0, true
	case sqltypes.Int32, sqltypes.Uint32:
		return 10, 0, true
	case sqltypes.Int64:
		return 19, 0, true
	case sqltypes.Uint64:
		return 20, 0, true
	case sqltypes.Year:
		return 4, 0, true
	}
	return 0, 0, false
}

// exactResultType is SUM's (avg false) or AVG's result type for an
// argument of type t, and whether the result is exact.
func exactResultType(ctx *sql.Context, t sql.Type, avg bool) (sql.Type, bool) {
	p, s, ok := exactDigits(ctx, t)
	if !ok {
		return types.Float64, false
	}
	if avg {
		p, s = p+avgExtraScale, s+avgExtraScale
	} else {
		p += sumExtraDigits
	}
	dt, err := types.CreateDecimalType(uint8(min(p, maxDecimalPrecision)), uint8(min(s, maxDecimalScale)))
	if err != nil {
		return types.Float64, false
	}
	return dt, true
}

// exactSum is SUM.
type exactSum struct{ *aggregation.Sum }

// exactAvg is AVG.
type exactAvg struct{ *aggregation.Avg }

var (
	_ sql.Aggregation  = exactSum{}
	_ sql.IdExpression = exactSum{}
	_ sql.Aggregation  = exactAvg{}
	_ sql.IdExpression = exactAvg{}
)

// exactAggregateFunction is the sql.Function for "sum" and "avg".
func exactAggregateFunction(name string) (sql.Function, bool) {
	switch name {
	case "sum":
		return sql.Function1{Name: "sum", Fn: func(_ *sql.Context, e sql.Expression) sql.Expression {
			return exactSum{aggregation.NewSum(e)}
		}}, true
	case "avg":
		return sql.Function1{Name: "avg", Fn: func(_ *sql.Context, e sql.Expression) sql.Expression {
			return exactAvg{aggregation.NewAvg(e)}
		}}, true
	}
	return nil, false
}

// exactType is the type of an exact SUM or AVG, and whether a is one.
func exactType(ctx *sql.Context, e sql.Expression) (sql.Type, bool) {
	switch a := e.(type) {
	case exactSum:
		return exactResultType(ctx, a.Child.Type(ctx), false)
	case exactAvg:
		return exactResultType(ctx, a.Child.Type(ctx), true)
	}
	return nil, false
}

func (a exactSum) Type(ctx *sql.Context) sql.Type {
	if t, ok := exactType(ctx, a); ok {
		return t
	}
	return types.Float64
}

// IsNullable: SUM over no values is NULL.
func (a exactSum) IsNullable(*sql.Context) bool { return true }

func (a exactSum) NewBuffer(ctx *sql.Context) (sql.AggregationBuffer, error) {
	if t, ok := exactType(ctx, a); ok {
		return newExactBuffer(ctx, a.Child, t.(sql.DecimalType), false)
	}
	return a.Sum.NewBuffer(ctx)
}

func (a exactSum) NewWindowFunction(ctx *sql.Context) (sql.WindowFunction, error) {
	if t, ok := exactType(ctx, a); ok {
		return newExactWindow(ctx, a.Child, t.(sql.DecimalType), false, a.Window())
	}
	return a.Sum.NewWindowFunction(ctx)
}

func (a exactSum) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	e, err := a.Sum.WithChildren(ctx, children...)
	if err != nil {
		return nil, err
	}
	return exactSum{e.(*aggregation.Sum)}, nil
}

func (a exactSum) WithWindow(ctx *sql.Context, w *sql.WindowDefinition) sql.WindowAdaptableExpression {
	return exactSum{a.Sum.WithWindow(ctx, w).(*aggregation.Sum)}
}

func (a exactSum) WithId(id sql.ColumnId) sql.IdExpression {
	return exactSum{a.Sum.WithId(id).(*aggregation.Sum)}
}

func (a exactAvg) Type(ctx *sql.Context) sql.Type {
	if t, ok := exactType(ctx, a); ok {
		return t
	}
	return types.Float64
}

func (a exactAvg) NewBuffer(ctx *sql.Context) (sql.AggregationBuffer, error) {
	if t, ok := exactType(ctx, a); ok {
		return newExactBuffer(ctx, a.Child, t.(sql.DecimalType), true)
	}
	return a.Avg.NewBuffer(ctx)
}

func (a exactAvg) NewWindowFunction(ctx *sql.Context) (sql.WindowFunction, error) {
	if t, ok := exactType(ctx, a); ok {
		return newExactWindow(ctx, a.Child, t.(sql.DecimalType), true, a.Window())
	}
	return a.Avg.NewWindowFunction(ctx)
}

func (a exactAvg) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	e, err := a.Avg.WithChildren(ctx, children...)
	if err != nil {
		return nil, err
	}
	return exactAvg{e.(*aggregation.Avg)}, nil
}

func (a exactAvg) WithWindow(ctx *sql.Context, w *sql.WindowDefinition) sql.WindowAdaptableExpression {
	return exactAvg{a.Avg.WithWindow(ctx, w).(*aggregation.Avg)}
}

func (a exactAvg) WithId(id sql.ColumnId) sql.IdExpression {
	return exactAvg{a.Avg.WithId(id).(*aggregation.Avg)}
}

// exactBuffer adds exact values as decimals.
type exactBuffer struct {
	expr  sql.Expression
	typ   sql.DecimalType
	avg   bool
	sum   exactSumOf
	count int64
}

func newExactBuffer(ctx *sql.Context, child sql.Expression, t sql.DecimalType, avg bool) (*exactBuffer, error) {
	// Each group gets its own copy: a DISTINCT argument keeps the values
	// it has seen.
	e, err := transform.Clone(ctx, child)
	if err != nil {
		return nil, err
	}
	return &exactBuffer{expr: e, typ: t, avg: avg}, nil
}

// Update adds the row's value (NULL is skipped).
func (b *exactBuffer) Update(ctx *sql.Context, row sql.Row) error {
	v, err := b.expr.Eval(ctx, row)
	if err != nil || v == nil {
		return err
	}
	if err := b.sum.add(ctx, v); err != nil {
		return err
	}
	b.count++
	return nil
}

// exactValue is an exact numeric value that is not a signed or small
// integer (those exactSumOf.add takes itself) as a decimal.
func exactValue(ctx *sql.Context, v any) (decimal.Decimal, error) {
	switch n := v.(type) {
	case uint64:
		return decimal.NewFromUint64(n), nil
	case decimal.Decimal:
		return n, nil
	}
	d, _, err := types.InternalDecimalType.Convert(ctx, v)
	if err != nil {
		return decimal.Decimal{}, err
	}
	return d.(decimal.Decimal), nil
}

// Eval is the sum or the average, NULL over no values.
func (b *exactBuffer) Eval(*sql.Context) (any, error) {
	if b.count == 0 {
		return nil, nil
	}
	scale := int32(b.typ.Scale())
	if b.avg {
		return b.sum.value().DivRound(decimal.NewFromInt(b.count), scale), nil
	}
	return b.sum.value().Round(scale), nil
}

// Dispose releases the argument's state.
func (b *exactBuffer) Dispose(ctx *sql.Context) { expression.Dispose(ctx, b.expr) }

// exactWindow is SUM or AVG OVER a window, of exact values: prefix sums
// and counts of non-NULL values over the partition, from which any
// frame's sum is a difference (as go-mysql-server's float version does).
type exactWindow struct {
	expr   sql.Expression
	framer sql.WindowFramer
	typ    sql.DecimalType
	avg    bool
	// sums[i] and counts[i] cover the partition's rows up to i.
	sums   []decimal.Decimal
	counts []int64
	start  int // the partition's first row in the buffer
}

func newExactWindow(ctx *sql.Context, child sql.Expression, t sql.DecimalType, avg bool, w *sql.WindowDefinition) (*exactWindow, error) {
	e, err := transform.Clone(ctx, child)
	if err != nil {
		return nil, err
	}
	x := &exactWindow{expr: e, typ: t, avg: avg}
	if w != nil && w.Frame != nil {
		if x.framer, err = w.Frame.NewFramer(w); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// DefaultFramer is go-mysql-server's for SUM and AVG: the partition's
// rows up to the current one, unless the window names a frame.
func (x *exactWindow) DefaultFramer() sql.WindowFramer {
	if x.framer != nil {
		return x.framer
	}
	return aggregation.NewUnboundedPrecedingToCurrentRowFramer()
}

func (x *exactWindow) Dispose(ctx *sql.Context) { expression.Dispose(ctx, x.expr) }

func (x *exactWindow) StartPartition(ctx *sql.Context, interval sql.WindowInterval, buf sql.WindowBuffer) error {
	x.Dispose(ctx)
	x.start = interval.Start
	n := interval.End - interval.Start
	x.sums, x.counts = make([]decimal.Decimal, n), make([]int64, n)
	var sum exactSumOf
	var count int64
	for i := range n {
		v, err := x.expr.Eval(ctx, buf[interval.Start+i])
		if err != nil {
			return err
		}
		if v != nil {
			if err := sum.add(ctx, v); err != nil {
				return err
			}
			count++
		}
		x.sums[i], x.counts[i] = sum.value(), count
	}
	return nil
}

// Compute is the frame's sum or average, NULL when it holds no value.
func (x *exactWindow) Compute(_ *sql.Context, interval sql.WindowInterval, _ sql.WindowBuffer) (any, error) {
	if interval.End <= interval.Start {
		return nil, nil
	}
	last, first := interval.End-x.start-1, interval.Start-x.start-1
	sum, count := x.sums[last], x.counts[last]
	if first >= 0 {
		sum, count = sum.Sub(x.sums[first]), count-x.counts[first]
	}
	if count == 0 {
		return nil, nil
	}
	scale := int32(x.typ.Scale())
	if x.avg {
		return sum.DivRound(decimal.NewFromInt(count), scale), nil
	}
	return sum.Round(scale), nil
}

// exactAggregateTypes gives every column that reads an exact SUM or AVG
// the aggregate's DECIMAL type: the planner types such columns DOUBLE.
// CREATE TABLE ... SELECT gets the same types for the table's columns
// (exactCopierTypes).
func exactAggregateTypes(ctx *sql.Context, _ *analyzer.Analyzer, n sql.Node, scope *plan.Scope, _ analyzer.RuleSelector, _ *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
	n, same, err := retypeExactColumns(ctx, n)
	if err != nil {
		return nil, transform.SameTree, err
	}
	n, copied, err := transform.Node(ctx, n, func(ctx *sql.Context, n sql.Node) (sql.Node, transform.TreeIdentity, error) {
		if tc, ok := n.(*plan.TableCopier); ok {
			return exactCopierTypes(ctx, tc)
		}
		return n, transform.SameTree, nil
	})
	if err != nil {
		return nil, transform.SameTree, err
	}
	if !scope.IsEmpty() {
		// A subquery in an expression: go-mysql-server evaluates its set
		// operations itself, so they keep its types (setops_types.go).
		return n, same && copied, nil
	}
	n, typed, err := typeSetOps(ctx, n) // setops_types.go
	return n, same && copied && typed, err
}

// exactCopierTypes types the columns of the table CREATE TABLE ... SELECT
// creates as its SELECT's exact aggregates are typed. go-mysql-server
// took the table's schema from the SELECT before the aggregates were
// retyped (and its TableCopier hides the SELECT from the analyzer's
// walk), so those columns say DOUBLE where MySQL creates DECIMAL. A
// column the statement declares DOUBLE itself, under the name of such
// an aggregate, is retyped too: the declaration is no longer told apart.
func exactCopierTypes(ctx *sql.Context, tc *plan.TableCopier) (sql.Node, transform.TreeIdentity, error) {
	ct, ok := tc.Destination.(*plan.CreateTable)
	if !ok {
		return tc, transform.SameTree, nil
	}
	src, same, err := retypeExactColumns(ctx, tc.Source)
	if err != nil {
		return nil, transform.SameTree, err
	}
	// The SELECT's DECIMAL columns: go-mysql-server makes a DECIMAL
	// column DOUBLE only for an exact aggregate typed late.
	byName := map[string]sql.Type{}
	for _, col := range src.Schema(ctx) {
		if _, isDec := col.Type.(sql.DecimalType); isDec {
			byName[strings.ToLower(col.Name)] = col.Type
		}
	}
	// The columns are the statement's own (resolveCreateSelect made them
	// for this table), so they are retyped in place.
	for _, col := range ct.PkSchema().Schema {
		if t, ok := byName[strings.ToLower(col.Name)]; ok && types.IsFloat(col.Type) {
			col.Type = t
		}
	}
	if same {
		return tc, transform.SameTree, nil
	}
	copier := *tc
	copier.Source = src
	return &copier, transform.NewTree, nil
}

// retypeExactColumns is exactAggregateTypes' work on n and its children.
func retypeExactColumns(ctx *sql.Context, n sql.Node) (sql.Node, transform.TreeIdentity, error) {
	exact := map[sql.ColumnId]sql.Type{}
	transform.InspectExpressions(ctx, n, func(ctx *sql.Context, e sql.Expression) bool {
		if t, ok := exactType(ctx, e); ok {
			exact[e.(sql.IdExpression).Id()] = t
		}
		return true
	})
	if len(exact) == 0 {
		return n, transform.SameTree, nil
	}
	return retypeColumns(ctx, n, exact)
}

// retypeColumns gives each reference in n to a column in typed (by
// column id) the column's type there.
func retypeColumns(ctx *sql.Context, n sql.Node, typed map[sql.ColumnId]sql.Type) (sql.Node, transform.TreeIdentity, error) {
	return transform.NodeExprsWithOpaque(ctx, n, func(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		gf, ok := e.(*expression.GetField)
		if !ok {
			return e, transform.SameTree, nil
		}
		t, ok := typed[gf.Id()]
		if !ok || gf.Type(ctx).Equals(t) {
			return e, transform.SameTree, nil
		}
		ref := expression.NewGetFieldWithTable(gf.Index(), int(gf.TableId()), t, gf.Database(), gf.Table(), gf.Name(), gf.IsNullable(ctx))
		return ref.WithId(gf.Id()).(*expression.GetField), transform.NewTree, nil
	})
}

// exactSumOf adds integers in an int64 while they fit, and decimals (and
// integers past that) as a decimal.
type exactSumOf struct {
	small int64
	big   decimal.Decimal
	wide  bool
}

func (s *exactSumOf) add(ctx *sql.Context, v any) error {
	var d decimal.Decimal
	if n, ok := smallInt(v); ok {
		if !s.wide {
			if sum := s.small + n; (n >= 0) == (sum >= s.small) {
				s.small = sum
				return nil
			}
		}
		d = decimal.NewFromInt(n)
	} else {
		var err error
		if d, err = exactValue(ctx, v); err != nil {
			return err
		}
	}
	if !s.wide {
		s.big, s.wide = decimal.NewFromInt(s.small), true
	}
	s.big = s.big.Add(d)
	return nil
}

// smallInt is v as an int64, if it is an integer every value of whose
// type fits in one.
func smallInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case int16:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint8:
		return int64(x), true
	}
	return 0, false
}

// value is the sum.
func (s *exactSumOf) value() decimal.Decimal {
	if s.wide {
		return s.big
	}
	return decimal.NewFromInt(s.small)
}
