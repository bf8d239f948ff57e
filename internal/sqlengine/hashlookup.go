package sqlengine

import (
	"io"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
)

// go-mysql-server's hash join builds its lookup table by reading the
// join's right side once, through an iterator whose Close does not close
// the iterator it reads. When that side stops before its end (a LIMIT in
// it: WHERE EXISTS over a derived table is planned as a hash join whose
// right side is LIMIT 1 over cached results), the cached results below
// are never disposed, and every execution left one rows cache in the
// engine's memory manager: memory that grew with each such query.
//
// buildHashLookup builds that first pass itself, with the same contract
// (every row passes through and is filed under its hash key; the table is
// published on the node once the side is read to its end) and a Close
// that closes what it reads. Later probes of a built table are left to
// go-mysql-server.
func buildHashLookup(ctx *sql.Context, base sql.NodeExecBuilder, n *plan.HashLookup, r sql.Row) (sql.RowIter, error) {
	n.Mutex.Lock()
	defer n.Mutex.Unlock()
	if n.Lookup != nil {
		return nil, nil
	}
	child, err := base.Build(ctx, n.Child, r)
	if err != nil {
		return nil, err
	}
	return &hashLookupFill{n: n, child: child, table: map[any][]sql.Row{}}, nil
}

type hashLookupFill struct {
	n     *plan.HashLookup
	child sql.RowIter
	table map[any][]sql.Row
}

func (h *hashLookupFill) Next(ctx *sql.Context) (sql.Row, error) {
	row, err := h.child.Next(ctx)
	if err == io.EOF {
		h.n.Lookup = &h.table
		return nil, io.EOF
	}
	if err != nil {
		return nil, err
	}
	key, _, err := h.n.GetHashKey(ctx, h.n.RightEntryKey, row)
	if err != nil {
		return nil, err
	}
	h.table[key] = append(h.table[key], row)
	return row, nil
}

func (h *hashLookupFill) Close(ctx *sql.Context) error { return h.child.Close(ctx) }
