package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// okResultRewrite is a write's rows with its OK result rewritten by fix,
// for the counts go-mysql-server's result iterator gets wrong (a REPLACE's
// rows deleted, a multi-table UPDATE's rows matched). It is a
// sql.MutableRowIter, so go-mysql-server puts the iterator that makes the
// statement's OK result below it. Only a write with no iterator of
// go-mysql-server's above it may have one (a trigger's would find no
// result maker under it): its builders leave writes with triggers alone.
type okResultRewrite struct {
	sql.RowIter
	fix   func(*sql.Context, types.OkResult) types.OkResult
	close func() // or nil
}

var _ sql.MutableRowIter = (*okResultRewrite)(nil)

func (w *okResultRewrite) GetChildIter() sql.RowIter { return w.RowIter }

func (w *okResultRewrite) WithChildIter(child sql.RowIter) sql.RowIter {
	c := *w
	c.RowIter = child
	return &c
}

func (w *okResultRewrite) Next(ctx *sql.Context) (sql.Row, error) {
	row, err := w.RowIter.Next(ctx)
	if err != nil || len(row) != 1 {
		return row, err
	}
	if res, ok := row[0].(types.OkResult); ok {
		row = sql.Row{w.fix(ctx, res)}
	}
	return row, nil
}

func (w *okResultRewrite) Close(ctx *sql.Context) error {
	if w.close != nil {
		w.close()
	}
	return w.RowIter.Close(ctx)
}
