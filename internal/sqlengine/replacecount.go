package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
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
// actions change in others), and puts an okResultRewrite (okresult.go)
// above it, which replaces the result's count (and ROW_COUNT()) with the
// counter's. A REPLACE into a table with triggers is refused (triggers.go),
// so no trigger's iterator sits above it.

// rowCounter counts the rows a statement writes in one table.
type rowCounter struct {
	table uint64
	n     uint64
}

// countRows notes n rows written in table t by the session's statement.
func (s *Session) countRows(t *Table, n uint64) {
	if c := s.rowCount; c != nil && c.table == t.st.Def.ID {
		c.n += n
	}
}

// countedReplace builds REPLACE n with its count corrected, or returns
// nil where it is not into a Lockstep table.
func (b boundedTopN) countedReplace(ctx *sql.Context, n *plan.InsertInto, r sql.Row) (sql.RowIter, error) {
	if beingBuilt(ctx, n) || len(n.Returning) > 0 {
		return nil, nil
	}
	s := sessionOf(ctx)
	if s == nil {
		return nil, nil
	}
	t := lockstepTable(n.Destination)
	if t == nil {
		return nil, nil
	}
	c := &rowCounter{table: t.st.Def.ID}
	it, err := b.buildThrough(ctx, n, r)
	if err != nil {
		return nil, err
	}
	s.rowCount = c
	return &okResultRewrite{RowIter: it,
		fix: func(ctx *sql.Context, res types.OkResult) types.OkResult {
			res.RowsAffected = c.n
			ctx.GetLastQueryInfo().RowCount.Store(int64(c.n))
			return res
		},
		close: func() {
			if s.rowCount == c {
				s.rowCount = nil
			}
		}}, nil
}
