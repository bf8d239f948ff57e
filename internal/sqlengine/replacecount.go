package sqlengine

import (
	"context"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// A REPLACE counts the rows it deleted and inserted, as MySQL does: a row
// that replaced two (one by its primary key, one by a unique key) is
// three. go-mysql-server deletes every row in the way but counts one
// deletion per row written.
//
// The executor hook (topn.go) builds a REPLACE into a Lockstep table with
// a rowCounter on the session, which the table's editor counts the rows
// it inserts and deletes in that table on (not the rows referential
// actions change in others), and puts a countedResult above it. That one
// is a sql.MutableRowIter, so go-mysql-server puts the iterator that
// makes the statement's OK result below it, and it replaces the result's
// count (and ROW_COUNT()) with the counter's. A REPLACE into a table with
// triggers is refused (triggers.go), so none sits above it.

// rowCounter counts the rows a statement writes in one table.
type rowCounter struct {
	table uint64
	n     uint64
}

// count notes n rows written in table t by the session's statement.
func (s *Session) countRows(t *Table, n uint64) {
	if c := s.rowCount; c != nil && c.table == t.st.Def.ID {
		c.n += n
	}
}

// replaceKey marks, in the context it is built with, the REPLACE the hook
// builds through go-mysql-server (which asks the hook first again).
type replaceKey struct{}

// countedReplace builds REPLACE n with its count corrected, or returns
// nil where it is not into a Lockstep table.
func (b boundedTopN) countedReplace(ctx *sql.Context, n *plan.InsertInto, r sql.Row) (sql.RowIter, error) {
	if ctx.Value(replaceKey{}) == n || len(n.Returning) > 0 {
		return nil, nil
	}
	s := sessionOf(ctx)
	if s == nil {
		return nil, nil
	}
	var t *Table
	transform.Inspect(n.Destination, func(c sql.Node) bool {
		if tt, ok := readTable(c).(*Table); ok {
			t = tt
		}
		return t == nil
	})
	if t == nil {
		return nil, nil
	}
	c := &rowCounter{table: t.st.Def.ID}
	it, err := b.base.Build(ctx.WithContext(context.WithValue(ctx, replaceKey{}, n)), n, r)
	if err != nil {
		return nil, err
	}
	s.rowCount = c
	return &countedResult{RowIter: it, s: s, c: c}, nil
}

// countedResult is a write's rows with the count of its OK result the
// counter's.
type countedResult struct {
	sql.RowIter
	s *Session
	c *rowCounter
}

var _ sql.MutableRowIter = (*countedResult)(nil)

func (w *countedResult) GetChildIter() sql.RowIter { return w.RowIter }

func (w *countedResult) WithChildIter(child sql.RowIter) sql.RowIter {
	c := *w
	c.RowIter = child
	return &c
}

func (w *countedResult) Next(ctx *sql.Context) (sql.Row, error) {
	row, err := w.RowIter.Next(ctx)
	if err != nil || len(row) != 1 {
		return row, err
	}
	if res, ok := row[0].(types.OkResult); ok {
		res.RowsAffected = w.c.n
		ctx.GetLastQueryInfo().RowCount.Store(int64(w.c.n))
		row = sql.Row{res}
	}
	return row, nil
}

func (w *countedResult) Close(ctx *sql.Context) error {
	if w.s.rowCount == w.c {
		w.s.rowCount = nil
	}
	return w.RowIter.Close(ctx)
}
