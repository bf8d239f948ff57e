package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
)

// SHOW INDEX as MySQL answers it. go-mysql-server puts an index's COMMENT
// in the Comment column, which MySQL keeps for notes such as "disabled",
// and leaves Index_comment empty; and it leaves Collation NULL, where
// MySQL (and information_schema.STATISTICS here) says A, ascending: every
// index here is.

// The columns of SHOW INDEX's rows.
const (
	showIndexCollation    = 5
	showIndexComment      = 11
	showIndexIndexComment = 12
)

func (b boundedTopN) showIndexes(ctx *sql.Context, n *plan.ShowIndexes, r sql.Row) (sql.RowIter, error) {
	it, err := b.buildThrough(ctx, n, r)
	if err != nil {
		return nil, err
	}
	return showIndexRows{it}, nil
}

type showIndexRows struct{ sql.RowIter }

func (s showIndexRows) Next(ctx *sql.Context) (sql.Row, error) {
	r, err := s.RowIter.Next(ctx)
	if err != nil || len(r) <= showIndexIndexComment {
		return r, err
	}
	r = append(sql.Row(nil), r...)
	r[showIndexIndexComment], r[showIndexComment] = r[showIndexComment], ""
	r[showIndexCollation] = "A"

	return r, nil
}
