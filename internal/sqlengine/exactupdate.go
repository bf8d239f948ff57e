package sqlengine

import (
	"bytes"
	"context"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
)

// An UPDATE that changes only a string's case or accents changes the row,
// as in MySQL, which compares the old and new records byte for byte:
// UPDATE t SET name = 'Ann' WHERE name = 'ann' stores 'Ann' ("Rows
// matched: 1  Changed: 1"). go-mysql-server compared the rows by their
// columns' collations, found them equal under a case-insensitive one, and
// skipped the row: the statement succeeded and nothing changed.
//
// The fast path compares with an exactSchema. For go-mysql-server's UPDATE
// the executor hook (topn.go) puts an exactUpdateSource above the rows to
// update: go-mysql-server takes the table to update, and the schema its
// comparison uses, from the first node below the UPDATE that is an
// updatable table, and this one gives the table's schema with byteExactType
// columns. A multi-table UPDATE ... JOIN compares the joined rows, whose
// schema it takes from the node below its UpdateSource: there the hook
// puts a Project of byteExactType columns (exactUpdateJoin).

// byteExactType is a column type whose comparison tells apart strings that
// differ in any byte; everything else is the column's type.
type byteExactType struct{ columnType }

// columnType is sql.Type under a name that does not hide its Type method
// when embedded.
type columnType = sql.Type

func (t byteExactType) Compare(ctx context.Context, a, b any) (int, error) {
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y), nil
		}
	case []byte:
		if y, ok := b.([]byte); ok {
			return bytes.Compare(x, y), nil
		}
	}
	return t.columnType.Compare(ctx, a, b)
}

// exactSchema is sch with byteExactType columns.
func exactSchema(sch sql.Schema) sql.Schema {
	out := make(sql.Schema, len(sch))
	for i, c := range sch {
		cc := *c
		cc.Type = byteExactType{c.Type}
		out[i] = &cc
	}
	return out
}

// exactUpdateSource is the rows an UPDATE changes, presented to
// go-mysql-server's UPDATE as the table to update: its rows are its
// child's, its updater the table's, its schema exact.
type exactUpdateSource struct {
	sql.Node
	table sql.UpdatableTable
	sch   sql.Schema
}

var (
	_ sql.Node           = (*exactUpdateSource)(nil)
	_ sql.UpdatableTable = (*exactUpdateSource)(nil)
)

func (e *exactUpdateSource) Schema(*sql.Context) sql.Schema { return e.sch }
func (e *exactUpdateSource) Name() string                   { return e.table.Name() }
func (e *exactUpdateSource) Collation() sql.CollationID     { return e.table.Collation() }
func (e *exactUpdateSource) Updater(ctx *sql.Context) sql.RowUpdater {
	if fk, ok := e.table.(*plan.ForeignKeyHandler); ok {
		// A table with foreign keys: go-mysql-server counts the rows
		// changed by the schema the handler carries (the rows' own,
		// which its Schema is not), which compared a change of letter
		// case alone as none.
		cp := *fk
		cp.Sch = exactSchema(fk.Sch)
		return &cp
	}
	return e.table.Updater(ctx)
}

func (e *exactUpdateSource) Partitions(ctx *sql.Context) (sql.PartitionIter, error) {
	return e.table.Partitions(ctx)
}

func (e *exactUpdateSource) PartitionRows(ctx *sql.Context, p sql.Partition) (sql.RowIter, error) {
	return e.table.PartitionRows(ctx, p)
}

// exactUpdate returns n with an exactUpdateSource above its rows, or false
// when go-mysql-server's UPDATE finds no single table to update.
func exactUpdate(ctx *sql.Context, n *plan.Update) (*plan.Update, bool) {
	if _, done := n.Child.(*exactUpdateSource); done {
		return nil, false
	}
	child := n.Child
	if uj, ok := child.(*plan.UpdateJoin); ok {
		// Before the updater is taken: it splits the joined rows by the
		// schema of the same node.
		if nj, ok := exactUpdateJoin(ctx, uj); ok {
			child = nj
		}
	}
	table, err := plan.GetUpdatable(child)
	if err != nil {
		return nil, false
	}
	nn := *n
	nn.Child = &exactUpdateSource{Node: child, table: table, sch: exactSchema(table.Schema(ctx))}
	return &nn, true
}

// exactUpdateJoin returns n, a multi-table UPDATE's rows, with the joined
// rows it compares before and after the SET presented through a Project
// whose columns compare byte for byte, or false when it has one.
// go-mysql-server takes the schema of that comparison from the node below
// the UpdateSource; a Project (not a node of Lockstep's) keeps its search
// for the join below, which tells it whether the join is a LEFT or RIGHT
// one.
func exactUpdateJoin(ctx *sql.Context, n *plan.UpdateJoin) (sql.Node, bool) {
	src, ok := n.Child.(*plan.UpdateSource)
	if !ok || isExactProject(src.Child) {
		return nil, false
	}
	sch := src.Child.Schema(ctx)
	fields := make([]sql.Expression, len(sch))
	for i, c := range sch {
		fields[i] = expression.NewGetFieldWithTable(i, 0, byteExactType{c.Type}, c.DatabaseSource, c.Source, c.Name, c.Nullable)
	}
	nsrc, err := src.WithChildren(ctx, plan.NewProject(fields, src.Child))
	if err != nil {
		return nil, false
	}
	nn, err := n.WithChildren(ctx, nsrc)
	if err != nil {
		return nil, false
	}
	return nn, true
}

// isExactProject says whether n is exactUpdateJoin's Project.
func isExactProject(n sql.Node) bool {
	p, ok := n.(*plan.Project)
	if !ok || len(p.Projections) == 0 {
		return false
	}
	for _, e := range p.Projections {
		gf, ok := e.(*expression.GetField)
		if !ok {
			return false
		}
		if _, exact := gf.Type(nil).(byteExactType); !exact {
			return false
		}
	}
	return true
}
