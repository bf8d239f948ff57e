package sqlengine

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
)

// A DELETE that names its tables (DELETE a, b FROM a JOIN b ...) deletes
// each row of a target table once, however many joined rows it is part
// of, and says how many rows it deleted, as MySQL does. go-mysql-server
// hands every joined row to the editor of every target and counts joined
// rows: a row met twice was deleted twice (the second time failing with
// "row was not found"), and a joined row that deleted a row of a and one
// of b counted once.
//
// The executor hook (topn.go) puts a deleteJoinSource between such a
// DELETE and its rows. It splits each joined row into one row per target
// part not deleted before, the other targets' parts set to NULL, which
// their editors pass over (a stored row has no NULL in its primary key:
// Table.noRow). go-mysql-server's DELETE then deletes exactly one row per
// row it gets, and its count is the number of rows deleted.
//
// It applies only where every target is a table of Lockstep's (stored or
// temporary) with a primary key, by which rows are told apart, and no
// trigger is planned into the rows; elsewhere go-mysql-server's DELETE
// runs unchanged.

// deleteJoinSource is the joined rows of a multi-table DELETE, split by
// target.
type deleteJoinSource struct {
	sql.Node
	parts []deletePart
}

// deletePart is where a target's columns are in the joined row, and which
// of them are its primary key.
type deletePart struct {
	start, end int
	pk         []int // relative to start
}

// deleteJoin returns n with a deleteJoinSource above its rows, or false
// where it does not apply.
func deleteJoin(ctx *sql.Context, n *plan.DeleteFrom) (*plan.DeleteFrom, bool) {
	if !n.HasExplicitTargets() {
		return nil, false
	}
	if _, done := n.Child.(*deleteJoinSource); done {
		return nil, false
	}
	triggers := false
	transform.Inspect(n.Child, func(c sql.Node) bool {
		if _, ok := c.(*plan.TriggerExecutor); ok {
			triggers = true
		}
		return !triggers
	})
	if triggers {
		return nil, false
	}
	sch := n.Child.Schema(ctx)
	var parts []deletePart
	for _, target := range n.GetDeleteTargets() {
		d, err := plan.GetDeletable(target)
		if err != nil {
			return nil, false
		}
		var pk []int
		var table sql.Table = d
		if fk, ok := d.(*plan.ForeignKeyHandler); ok {
			// A parent table's rows go through go-mysql-server's
			// referential actions first, which pass over a row with a
			// NULL key as its editor does.
			table = fk.Table
		}
		switch t := table.(type) {
		case *Table:
			pk = t.st.Def.PK
		case *tempTable:
			pk = t.sch.PkOrdinals
		default:
			return nil, false
		}
		if len(pk) == 0 {
			return nil, false
		}
		// The target's columns are named by its alias where it has one.
		source := d.Name()
		transform.InspectWithOpaque(ctx, target, func(ctx *sql.Context, c sql.Node) bool {
			if a, ok := c.(*plan.TableAlias); ok {
				source = a.Name()
				return false
			}
			return true
		})
		start, end, ok := sourceColumns(sch, source)
		if !ok || end-start != len(d.Schema(ctx)) {
			return nil, false
		}
		parts = append(parts, deletePart{start: start, end: end, pk: pk})
	}
	nn := *n
	nn.Child = &deleteJoinSource{Node: n.Child, parts: parts}
	return &nn, true
}

// sourceColumns is the first run of sch's columns from source.
func sourceColumns(sch sql.Schema, source string) (start, end int, ok bool) {
	start = -1
	for i, c := range sch {
		from := strings.EqualFold(c.Source, source)
		switch {
		case from && start < 0:
			start = i
		case !from && start >= 0:
			return start, i, true
		}
	}
	if start < 0 {
		return 0, 0, false
	}
	return start, len(sch), true
}

// Children and WithChildren keep the node a source above its rows: the
// analyzer has run by the time it is made.
func (s *deleteJoinSource) Children() []sql.Node { return []sql.Node{s.Node} }
func (s *deleteJoinSource) WithChildren(_ *sql.Context, children ...sql.Node) (sql.Node, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(s, len(children), 1)
	}
	ns := *s
	ns.Node = children[0]
	return &ns, nil
}

// deleteJoinRows splits the joined rows (see the top of the file).
type deleteJoinRows struct {
	sql.RowIter
	parts   []deletePart
	width   int               // the joined row's width without outer-scope columns
	seen    []map[string]bool // by part: primary keys handed on
	pending []sql.Row         // split rows not yet returned
	key     strings.Builder
}

func newDeleteJoinRows(it sql.RowIter, s *deleteJoinSource, width int) *deleteJoinRows {
	seen := make([]map[string]bool, len(s.parts))
	for i := range seen {
		seen[i] = map[string]bool{}
	}
	return &deleteJoinRows{RowIter: it, parts: s.parts, width: width, seen: seen}
}

func (d *deleteJoinRows) Next(ctx *sql.Context) (sql.Row, error) {
	for len(d.pending) == 0 {
		r, err := d.RowIter.Next(ctx)
		if err != nil {
			return nil, err
		}
		// Columns of outer scopes come first (go-mysql-server's DELETE
		// reads the parts from the end).
		off := len(r) - d.width
		if off < 0 {
			return nil, io.ErrUnexpectedEOF
		}
		for i, p := range d.parts {
			part := r[off+p.start : off+p.end]
			if nullInKey(p.pk, part) {
				continue // the missing side of an outer join
			}
			// A row's key columns come back with the same values (of
			// the same Go types) each time it is read.
			d.key.Reset()
			for _, c := range p.pk {
				fmt.Fprintf(&d.key, "%v\x00", part[c])
			}
			k := d.key.String()
			if d.seen[i][k] {
				continue
			}
			d.seen[i][k] = true
			split := r.Copy()
			for j, o := range d.parts {
				if j != i {
					for c := o.start; c < o.end; c++ {
						split[off+c] = nil
					}
				}
			}
			d.pending = append(d.pending, split)
		}
	}
	r := d.pending[0]
	d.pending = d.pending[1:]
	return r, nil
}

// A multi-table UPDATE over an outer join: the missing side of a joined
// row is no row, and go-mysql-server's UPDATE compared its NULLs with the
// values the SET gave them and counted a changed row (its editor, like
// DELETE's, passes over it). outerJoinUpdateRows, put above the UPDATE's
// source (old and new joined rows side by side) by the executor hook,
// gives every missing side back its NULLs in the new row, so that nothing
// is counted for it. A missing side is a table part with a NULL in its
// primary key, for the tables of Lockstep's that have one.

// updateSourceKey marks, in the context it is built with, the UPDATE
// source the hook is building through go-mysql-server (which asks the
// hook first again).
type updateSourceKey struct{}

// outerJoinUpdate builds n's rows with the missing sides put right, or
// returns nil where there is nothing to put right.
func (b boundedTopN) outerJoinUpdate(ctx *sql.Context, n *plan.UpdateSource, r sql.Row) (sql.RowIter, error) {
	if ctx.Value(updateSourceKey{}) == n {
		return nil, nil
	}
	sch := n.Child.Schema(ctx)
	parts := keyedParts(ctx, n.Child, sch)
	if len(parts) < 2 {
		return nil, nil // one table: no outer join side
	}
	it, err := b.base.Build(ctx.WithContext(context.WithValue(ctx, updateSourceKey{}, n)), n, r)
	if err != nil {
		return nil, err
	}
	return &outerJoinUpdateRows{RowIter: it, parts: parts, width: len(sch)}, nil
}

// keyedParts are the parts of the joined rows sch of node that are rows
// of Lockstep's tables with a primary key.
func keyedParts(ctx *sql.Context, node sql.Node, sch sql.Schema) []deletePart {
	var parts []deletePart
	transform.InspectWithOpaque(ctx, node, func(ctx *sql.Context, c sql.Node) bool {
		source := ""
		if a, ok := c.(*plan.TableAlias); ok {
			source = a.Name()
			c = a.Child
		}
		var pk []int
		var width int
		switch t := readTable(c).(type) {
		case *Table:
			pk, width = t.st.Def.PK, len(t.st.Def.Columns)
			if source == "" {
				source = t.Name()
			}
		case *tempTable:
			pk, width = t.sch.PkOrdinals, len(t.sch.Schema)
			if source == "" {
				source = t.Name()
			}
		default:
			return true
		}
		if len(pk) == 0 {
			return false
		}
		if start, end, ok := sourceColumns(sch, source); ok && end-start == width {
			parts = append(parts, deletePart{start: start, end: end, pk: pk})
		}
		return false
	})
	return parts
}

// readTable is the table a table node reads, or nil.
func readTable(n sql.Node) sql.Table {
	switch n := n.(type) {
	case *plan.ResolvedTable:
		t := n.Table
		for {
			w, ok := t.(sql.TableWrapper)
			if !ok {
				return t
			}
			t = w.Underlying()
		}
	case *plan.IndexedTableAccess:
		return readTable(n.TableNode)
	}
	return nil
}

type outerJoinUpdateRows struct {
	sql.RowIter
	parts []deletePart
	width int
}

func (o *outerJoinUpdateRows) Next(ctx *sql.Context) (sql.Row, error) {
	r, err := o.RowIter.Next(ctx)
	if err != nil || len(r) != 2*o.width {
		return r, err
	}
	for _, p := range o.parts {
		if nullInKey(p.pk, r[p.start:p.end]) {
			copy(r[o.width+p.start:o.width+p.end], r[p.start:p.end])
		}
	}
	return r, nil
}
