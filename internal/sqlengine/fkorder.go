package sqlengine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
)

// A row that both repeats a primary key and lacks its parent.
//
// InnoDB inserts a row into the clustered index first, so a row whose
// primary key exists already is a duplicate (1062, or the UPDATE of
// INSERT ... ON DUPLICATE KEY UPDATE) before its foreign keys are looked
// at. go-mysql-server's foreign key handler checks the references first:
// such a row got 1452, and an INSERT ... ON DUPLICATE KEY UPDATE whose
// new row named a missing parent failed instead of updating the row it
// meets. An INSERT into a table with foreign keys is therefore given a
// handler that first looks for the row's primary key (the latest
// committed version and the transaction's own): if it is there, the row
// goes straight to the table's editor, whose insert finds the duplicate
// as it always does (taking its locks); otherwise the references are
// checked first, as before. REPLACE keeps go-mysql-server's order.

// dupKeyFirst is n with its foreign key handler checking for a duplicate
// primary key first, and whether n is one that needs it.
func dupKeyFirst(n *plan.InsertInto) (sql.Node, bool) {
	fk, ok := n.Destination.(*plan.ForeignKeyHandler)
	if !ok || n.IsReplace {
		return nil, false
	}
	t, ok := fk.Table.(*Table)
	if !ok || t.st.Keyless() {
		return nil, false
	}
	nn := *n
	nn.Destination = &dupFirstHandler{ForeignKeyHandler: fk, t: t}
	return &nn, true
}

// dupFirstHandler is go-mysql-server's foreign key handler whose inserts
// look for a duplicate primary key before the references.
type dupFirstHandler struct {
	*plan.ForeignKeyHandler
	t *Table
}

func (h *dupFirstHandler) Inserter(*sql.Context) sql.RowInserter { return h }

func (h *dupFirstHandler) Insert(ctx *sql.Context, r sql.Row) error {
	if h.pkExists(ctx, r) {
		return h.Editor.Editor.Insert(ctx, r)
	}
	return h.ForeignKeyHandler.Insert(ctx, r)
}

// pkExists reports whether a row with r's primary key exists, as far as
// it can tell without locking (the insert itself decides).
func (h *dupFirstHandler) pkExists(ctx *sql.Context, r sql.Row) bool {
	if nullInKey(h.t.st.Def.PK, r) {
		return false
	}
	_, tx, err := h.t.begin(ctx)
	if err != nil {
		return false
	}
	vals, err := h.t.toStorageRow(ctx, r)
	if err != nil {
		return false
	}
	key, err := h.t.st.RowKey(nil, vals)
	if err != nil {
		return false
	}
	_, found, err := tx.GetLatest(key)
	return err == nil && found
}
