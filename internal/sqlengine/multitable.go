package sqlengine

import (
	"context"
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
)

// Multi-table writes, as MySQL makes and counts them. Three parts:
// DELETE over joined rows (below), UPDATE over an outer join
// (outerJoinUpdateRows) and the counts of a multi-table UPDATE's reply
// (countedUpdate).
//
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
	pk         []int  // relative to start
	source     string // the table's name or alias, lower case
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
			return nil, fmt.Errorf("a joined row of %d values, fewer than the DELETE's %d columns", len(r), d.width)
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

// outerJoinUpdate builds n's rows with the missing sides put right, or
// returns nil where there is nothing to put right.
func (b boundedTopN) outerJoinUpdate(ctx *sql.Context, n *plan.UpdateSource, r sql.Row) (sql.RowIter, error) {
	if beingBuilt(ctx, n) {
		return nil, nil
	}
	sch := n.Child.Schema(ctx)
	parts := keyedParts(ctx, n.Child, sch)
	counts, _ := ctx.Value(joinCountsKey{}).(*joinUpdateCounts)
	if counts != nil {
		counts.start(parts)
	}
	if len(parts) < 2 && (counts == nil || !counts.exact) {
		return nil, nil // one table: no outer join side, nothing to count
	}
	it, err := b.buildThrough(ctx, n, r)
	if err != nil {
		return nil, err
	}
	return &outerJoinUpdateRows{RowIter: it, parts: parts, width: len(sch), counts: counts}, nil
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
			parts = append(parts, deletePart{start: start, end: end, pk: pk, source: strings.ToLower(source)})
		}
		return false
	})
	return parts
}

// lockstepTable is the first of Lockstep's stored tables n reads, or nil.
func lockstepTable(n sql.Node) *Table {
	var t *Table
	transform.Inspect(n, func(c sql.Node) bool {
		if tt, ok := readTable(c).(*Table); ok {
			t = tt
		}
		return t == nil
	})
	return t
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
	parts  []deletePart
	width  int
	counts *joinUpdateCounts // or nil
}

func (o *outerJoinUpdateRows) Next(ctx *sql.Context) (sql.Row, error) {
	r, err := o.RowIter.Next(ctx)
	if err != nil || len(r) != 2*o.width {
		return r, err
	}
	for i, p := range o.parts {
		if nullInKey(p.pk, r[p.start:p.end]) {
			copy(r[o.width+p.start:o.width+p.end], r[p.start:p.end])
			continue
		}
		if o.counts != nil {
			o.counts.match(i, p, r[p.start:p.end])
		}
	}
	return r, nil
}

// A multi-table UPDATE's reply says how many rows matched (each row of a
// table it updates once, however many joined rows it is in) and how many
// it changed, and a client with CLIENT_FOUND_ROWS (Connector/J's default)
// is told the rows matched. go-mysql-server told such a client the rows
// changed, and counted a missing side of an outer join as one more row
// matched (or not, by the join's plan). countedUpdate puts an
// okResultRewrite (okresult.go) above such an UPDATE, which writes the
// rows matched that outerJoinUpdateRows counted, where
// every table it updates is a Lockstep table with a primary key, and
// gives a CLIENT_FOUND_ROWS client the rows matched. An UPDATE of a
// table with triggers is left to go-mysql-server (a trigger's iterator
// would sit above it).

// joinCountsKey passes a multi-table UPDATE's counts to its source.
type joinCountsKey struct{}

// joinUpdateCounts counts the rows of the updated tables a multi-table
// UPDATE matched.
type joinUpdateCounts struct {
	targets map[string]bool // the updated tables, by name or alias
	exact   bool            // every updated table has a keyed part
	seen    map[int]map[string]bool
	matched int
	key     strings.Builder
}

// start sets up counting over the joined rows' parts.
func (c *joinUpdateCounts) start(parts []deletePart) {
	covered := 0
	for _, p := range parts {
		if c.targets[p.source] {
			covered++
		}
	}
	c.exact = covered == len(c.targets)
	c.seen = map[int]map[string]bool{}
}

// match counts part p (the i-th) of a joined row, a row of its table, if
// the table is updated and the row was not met before.
func (c *joinUpdateCounts) match(i int, p deletePart, part sql.Row) {
	if !c.exact || !c.targets[p.source] {
		return
	}
	c.key.Reset()
	for _, k := range p.pk {
		fmt.Fprintf(&c.key, "%v\x00", part[k])
	}
	k := c.key.String()
	if c.seen[i] == nil {
		c.seen[i] = map[string]bool{}
	}
	if !c.seen[i][k] {
		c.seen[i][k] = true
		c.matched++
	}
}

// countedUpdate builds multi-table UPDATE n with its reply's counts as
// MySQL's, or returns nil where it leaves n to go-mysql-server.
func (b boundedTopN) countedUpdate(ctx *sql.Context, n *plan.Update, r sql.Row) (sql.RowIter, error) {
	if !n.IsJoin || beingBuilt(ctx, n) {
		return nil, nil
	}
	child := n.Child
	if es, ok := child.(*exactUpdateSource); ok {
		child = es.Node // exactupdate.go
	}
	uj, ok := child.(*plan.UpdateJoin)
	if !ok {
		return nil, nil
	}
	counts := &joinUpdateCounts{targets: map[string]bool{}}
	for name, target := range uj.UpdateTargets {
		if hasTriggers(target) {
			return nil, nil
		}
		counts.targets[strings.ToLower(name)] = true
	}
	it, err := b.buildThrough(ctx.WithContext(context.WithValue(ctx, joinCountsKey{}, counts)), n, r)
	if err != nil {
		return nil, err
	}
	foundRows := ctx.Client().Capabilities&mysql.CapabilityClientFoundRows != 0
	return &okResultRewrite{RowIter: it, fix: func(ctx *sql.Context, res types.OkResult) types.OkResult {
		info, ok := res.Info.(plan.UpdateInfo)
		if !ok {
			return res
		}
		if counts.exact && counts.seen != nil {
			info.Matched = counts.matched
		}
		res.Info = info
		if foundRows {
			res.RowsAffected = uint64(info.Matched)
			ctx.GetLastQueryInfo().RowCount.Store(int64(info.Matched))
		}
		return res
	}}, nil
}
