package sqlengine

import (
	"context"
	"math"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/information_schema"
	"github.com/dolthub/go-mysql-server/sql/iters"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/rowexec"
)

// GMS runs ORDER BY ... LIMIT n with a top-n heap whose slice it
// allocates up front with room for n+1 rows, before reading any. A client
// asking for LIMIT 2147483648 made the server allocate 48 GB and die of
// it; LIMIT 18446744073709551615 (MySQL's documented "all the rest" after
// an offset) overflowed the capacity and failed with a recovered panic.
// boundedTopN sits in front of GMS's executor (its PriorityBuilder hook)
// and builds such plans as a sort followed by a limit instead: the same
// rows in the same order (the heap breaks ties by arrival, like the
// stable sort), in memory bounded by the rows actually read.

// builtKey marks, in the context it is built with, the node the hook is
// building through GMS (buildThrough). GMS asks the hook first again for
// that same node, and the hook then leaves it to GMS (beingBuilt).
type builtKey struct{}

// buildThrough builds n through GMS, the hook passing over n itself (its
// descendants it still sees).
func (b boundedTopN) buildThrough(ctx *sql.Context, n sql.Node, r sql.Row) (sql.RowIter, error) {
	return b.base.Build(ctx.WithContext(context.WithValue(ctx, builtKey{}, n)), n, r)
}

// beingBuilt says whether the hook is building n through GMS.
func beingBuilt(ctx *sql.Context, n sql.Node) bool { return ctx.Value(builtKey{}) == n }

// maxTopNHeap is the largest LIMIT run with GMS's top-n heap.
const maxTopNHeap = 1 << 16

type boundedTopN struct{ base *rowexec.BaseBuilder }

var _ sql.NodeExecBuilder = boundedTopN{}

// Build implements sql.NodeExecBuilder: nil for every node it leaves to
// GMS. It also builds the first pass of hash joins (hashlookup.go), and
// corrects every node's expressions where MySQL evaluates them otherwise
// (execexprs.go).
func (b boundedTopN) Build(ctx *sql.Context, n sql.Node, r sql.Row) (sql.RowIter, error) {
	endTriggerPlanning(ctx) // triggers.go
	if te, ok := n.(*plan.TriggerExecutor); ok {
		if err := triggerExecutor(ctx, te); err != nil {
			return nil, err // the definer may not (triggers.go)
		}
	}
	if err := checkTriggerPlan(ctx, n); err != nil {
		return nil, err
	}
	if nn, ok := execExpressions(ctx, n); ok {
		return b.base.Build(ctx, nn, r)
	}
	switch n := n.(type) {
	case *plan.Call:
		// The server runs a client's CALL (routines.go); go-mysql-server
		// would run it with its own interpreter.
		return nil, errNotSupported("CALL of a stored procedure in a prepared statement")
	case *plan.DropTable:
		if len(n.TriggerNames) > 0 {
			// Storage drops a table's triggers with it, in the same
			// change; go-mysql-server would drop them again after.
			nn := *n
			nn.TriggerNames = nil
			return b.base.Build(ctx, &nn, r)
		}
	case *plan.ShowColumns:
		return b.showColumnsDeclared(ctx, n, r) // coldecl.go
	case *plan.ShowCreateTable:
		if !beingBuilt(ctx, n) {
			return b.showCreateDeclared(ctx, n, r) // coldecl.go
		}
	case *plan.ShowCreateTrigger:
		return showCreateTrigger(ctx, n)
	case *plan.ShowCreateProcedure:
		return showCreateProcedure(ctx, n) // routines.go
	case *plan.ResolvedTable:
		if ct, ok := sql.GetUnderlyingTable(n.Table).(*information_schema.ColumnsTable); ok && !beingBuilt(ctx, n) {
			return b.declaredColumns(ctx, n, ct, r) // coldecl.go
		}
	case *plan.ShowTriggers:
		return showTriggers(ctx, n)
	case plan.ShowWarnings:
		return showWarnings(n), nil
	case *plan.ShowIndexes:
		if !beingBuilt(ctx, n) {
			return b.showIndexes(ctx, n, r) // showindex.go
		}
	case *plan.Update:
		if nn, ok := exactUpdate(ctx, n); ok {
			return b.base.Build(ctx, nn, r) // exactupdate.go
		}
		return b.countedUpdate(ctx, n, r) // multitable.go
	case *exactUpdateSource:
		return b.base.Build(ctx, n.Node, r)
	case *plan.DeleteFrom:
		if nn, ok := deleteJoin(ctx, n); ok {
			return b.base.Build(ctx, nn, r) // multitable.go
		}
	case *plan.UpdateSource:
		return b.outerJoinUpdate(ctx, n, r) // multitable.go
	case *deleteJoinSource:
		it, err := b.base.Build(ctx, n.Node, r)
		if err != nil {
			return nil, err
		}
		return newDeleteJoinRows(it, n, len(n.Node.Schema(ctx))), nil
	case *plan.InsertInto:
		if nn, ok := dupKeyFirst(n); ok {
			return b.base.Build(ctx, nn, r) // fkorder.go
		}
		if nn, ok := rangedInsert(ctx, n); ok {
			return b.base.Build(ctx, nn, r) // outofrange.go
		}
		if n.IsReplace {
			return b.countedReplace(ctx, n, r) // replacecount.go
		}
	case *rangedInsertSource:
		it, err := b.base.Build(ctx, n.Node, r)
		if err != nil {
			return nil, err
		}
		return &rangedRows{RowIter: it, src: n}, nil
	case *plan.Distinct, *plan.OrderedDistinct:
		child := n.Children()[0]
		it, err := b.base.Build(ctx, child, r)
		if err != nil {
			return nil, err
		}
		return newDistinctRows(it, child.Schema(ctx)), nil
	case *collatedSetOp:
		return b.buildSetOpRows(ctx, n, r)
	case *typedSetOp:
		// Its rows are the set operation's; its schema writes them
		// (setops_types.go).
		if it, err := b.Build(ctx, n.SetOp, r); it != nil || err != nil {
			return it, err
		}
		return b.base.Build(ctx, n.SetOp, r)
	case *plan.HashLookup:
		return buildHashLookup(ctx, b.base, n, r)
	case *plan.TopN:
		if primaryKeyOrdered(n) {
			// The scan already returns the rows in this order: the first
			// ones that pass are the answer, and the scan stops there.
			// InnoDB reads so too, and its locking reads then lock only
			// the rows they return, which FOR UPDATE SKIP LOCKED job
			// queues (ORDER BY id LIMIT n) rely on; sorting the whole
			// table first locked every row.
			limit, ok := evalLimit(ctx, n.Limit)
			if ok {
				it, err := b.base.Build(ctx, n.Child, r)
				if err != nil {
					return nil, err
				}
				return &iters.LimitIter{Limit: limit, CalcFoundRows: n.CalcFoundRows, ChildIter: it}, nil
			}
		}
		limit, huge := hugeLimit(ctx, n.Limit)
		if !huge {
			return nil, nil
		}
		it, err := b.base.Build(ctx, plan.NewSort(n.Fields, n.Child), r)
		if err != nil {
			return nil, err
		}
		return &iters.LimitIter{Limit: limit, CalcFoundRows: n.CalcFoundRows, ChildIter: it}, nil
	case *plan.SetOp:
		if n.Distinct || n.SetOpType != plan.UnionType {
			return b.buildCollatedSetOp(ctx, n, r) // setops_collated.go
		}
		if n.Limit == nil || len(n.SortFields) == 0 {
			return nil, nil
		}
		limit, huge := hugeLimit(ctx, n.Limit)
		if !huge {
			return nil, nil
		}
		// Without a limit GMS sorts the whole result; the limit goes on
		// top. The copy owns the iterators it registers for disposal.
		cp := *n
		cp.Limit = nil
		it, err := b.base.Build(ctx, &cp, r)
		if err != nil {
			return nil, err
		}
		return &disposingIter{RowIter: &iters.LimitIter{Limit: limit, ChildIter: it}, node: &cp}, nil
	}
	return nil, nil
}

// hugeLimit evaluates a LIMIT and reports whether it is too large for the
// heap. GMS computes LIMIT offset, n as n + offset in an int64, which
// wraps for MySQL's 18446744073709551615 idiom: a negative sum means "no
// limit".
func hugeLimit(ctx *sql.Context, e sql.Expression) (int64, bool) {
	v, err := e.Eval(ctx, nil)
	if err != nil {
		return 0, false
	}
	n, ok := asInt64(v)
	if _, big := v.(uint64); big && !ok {
		n, ok = math.MaxInt64, true
	}
	if !ok {
		return 0, false // GMS reports it
	}
	if n < 0 {
		n = math.MaxInt64
	}
	return n, n > maxTopNHeap
}

// disposingIter disposes of a node built for one execution when its rows
// are done.
type disposingIter struct {
	sql.RowIter
	node sql.Disposable
}

func (d *disposingIter) Close(ctx *sql.Context) error {
	err := d.RowIter.Close(ctx)
	d.node.Dispose(ctx)
	return err
}

// primaryKeyOrdered reports whether n sorts by the primary key, ascending,
// rows read by a whole scan of one Lockstep table (maybe filtered), which
// returns them in primary key order.
func primaryKeyOrdered(n *plan.TopN) bool {
	child := n.Child
	if f, ok := child.(*plan.Filter); ok {
		child = f.Child
	}
	alias := ""
	if a, ok := child.(*plan.TableAlias); ok {
		alias, child = a.Name(), a.Child
	}
	rt, ok := child.(*plan.ResolvedTable)
	if !ok {
		return false
	}
	t, ok := sql.GetUnderlyingTable(rt.UnderlyingTable()).(*Table)
	if !ok || t.lookup != nil || t.st.Keyless() || len(n.Fields) == 0 || len(n.Fields) > len(t.st.Def.PK) {
		return false
	}
	for i, f := range n.Fields {
		gf, ok := f.Column.(*expression.GetField)
		if !ok || f.Order != sql.Ascending || !strings.EqualFold(gf.Name(), t.st.Def.Columns[t.st.Def.PK[i]].Name) {
			return false
		}
		if tn := gf.Table(); tn != "" && !strings.EqualFold(tn, t.Name()) && !strings.EqualFold(tn, alias) {
			return false
		}
	}
	return true
}

// evalLimit evaluates a LIMIT that is a non-negative count.
func evalLimit(ctx *sql.Context, e sql.Expression) (int64, bool) {
	v, err := e.Eval(ctx, nil)
	if err != nil {
		return 0, false
	}
	n, ok := asInt64(v)
	return n, ok && n >= 0
}
