package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function/aggregation"
	"github.com/dolthub/go-mysql-server/sql/hash"
	"github.com/dolthub/go-mysql-server/sql/transform"
)

// SELECT DISTINCT compares strings by their collation, as MySQL does:
// under utf8mb4_0900_ai_ci 'a', 'A' and 'á' are one value. go-mysql-server
// hashed the rows' bytes, so SELECT DISTINCT gave all three (GROUP BY,
// WHERE and unique indexes already compared by collation). distinctRows
// runs DISTINCT (plain and ordered) hashing each string by its column's
// collation (the executor hook builds it: topn.go); like go-mysql-server's
// it keeps the first row of each value, and like go-mysql-server's it
// tells rows apart by a 64-bit hash.

type distinctRows struct {
	child sql.RowIter
	sch   sql.Schema
	seen  map[uint64]struct{}
}

func newDistinctRows(child sql.RowIter, sch sql.Schema) *distinctRows {
	return &distinctRows{child: child, sch: sch, seen: map[uint64]struct{}{}}
}

func (d *distinctRows) Next(ctx *sql.Context) (sql.Row, error) {
	for {
		row, err := d.child.Next(ctx)
		if err != nil {
			return nil, err
		}
		h, err := hash.HashOf(ctx, d.sch, row)
		if err != nil {
			return nil, err
		}
		if _, dup := d.seen[h]; dup {
			continue
		}
		d.seen[h] = struct{}{}
		return row, nil
	}
}

func (d *distinctRows) Close(ctx *sql.Context) error {
	d.seen = nil
	return d.child.Close(ctx)
}

// collatedCountDistinct is COUNT(DISTINCT ...) comparing strings by their
// collation, as DISTINCT does (go-mysql-server counted 'a' and 'A' as two
// values, and joined the values of COUNT(DISTINCT a, b) with commas, so
// ('a,b', 'c') and ('a', 'b,c') counted once). The executor hook puts it
// in place of go-mysql-server's (execexprs.go).
type collatedCountDistinct struct{ *aggregation.CountDistinct }

var _ sql.Aggregation = collatedCountDistinct{}

func (a collatedCountDistinct) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	e, err := a.CountDistinct.WithChildren(ctx, children...)
	if err != nil {
		return nil, err
	}
	return collatedCountDistinct{e.(*aggregation.CountDistinct)}, nil
}

func (a collatedCountDistinct) WithId(id sql.ColumnId) sql.IdExpression {
	return collatedCountDistinct{a.CountDistinct.WithId(id).(*aggregation.CountDistinct)}
}

func (a collatedCountDistinct) WithWindow(ctx *sql.Context, w *sql.WindowDefinition) sql.WindowAdaptableExpression {
	return collatedCountDistinct{a.CountDistinct.WithWindow(ctx, w).(*aggregation.CountDistinct)}
}

func (a collatedCountDistinct) NewBuffer(ctx *sql.Context) (sql.AggregationBuffer, error) {
	children := a.Children()
	if len(children) == 0 {
		return a.CountDistinct.NewBuffer(ctx)
	}
	if _, star := children[0].(*expression.Star); star {
		return a.CountDistinct.NewBuffer(ctx)
	}
	b := &countDistinctRows{seen: map[uint64]struct{}{}, vals: make(sql.Row, len(children))}
	for _, c := range children {
		e, err := transform.Clone(ctx, c)
		if err != nil {
			return nil, err
		}
		b.exprs = append(b.exprs, e)
		b.sch = append(b.sch, &sql.Column{Type: c.Type(ctx)})
	}
	return b, nil
}

// countDistinctRows counts the distinct non-NULL value tuples it is
// given, hashing strings by their collation.
type countDistinctRows struct {
	exprs []sql.Expression
	sch   sql.Schema
	vals  sql.Row
	seen  map[uint64]struct{}
}

func (b *countDistinctRows) Update(ctx *sql.Context, row sql.Row) error {
	for i, e := range b.exprs {
		v, err := e.Eval(ctx, row)
		if err != nil {
			return err
		}
		if v == nil {
			return nil // a tuple with a NULL is not counted
		}
		b.vals[i] = v
	}
	h, err := hash.HashOf(ctx, b.sch, b.vals)
	if err != nil {
		return err
	}
	b.seen[h] = struct{}{}
	return nil
}

func (b *countDistinctRows) Eval(*sql.Context) (any, error) { return int64(len(b.seen)), nil }

func (b *countDistinctRows) Dispose(ctx *sql.Context) {
	for _, e := range b.exprs {
		expression.Dispose(ctx, e)
	}
}
