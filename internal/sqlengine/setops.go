package sqlengine

import (
	"strings"

	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// A chain of UNIONs (or INTERSECTs) parses as a left-deep tree: a UNION b
// UNION c is (a UNION b) UNION c, one level per branch. go-mysql-server's
// planner asks each set operation for its schema, and a set operation's
// schema is its children's, computed again each time: a chain of n
// branches cost it O(n²) schema computations and allocations, seconds at
// 800 branches and minutes at a few thousand, in planning, where neither
// KILL nor max_execution_time reaches. The operations are associative
// (UNION ALL with UNION ALL, UNION DISTINCT with UNION DISTINCT, INTERSECT
// with INTERSECT), so such a chain is rebuilt as a balanced
// tree of the same branches in the same order: the first branch stays
// first (it names the columns), a branch that is a set operation with an
// ORDER BY or LIMIT of its own stays a right child (chainUnits), and the
// chain's ORDER BY, LIMIT, INTO, locking and WITH stay on its top.
// Operations of different kinds, and EXCEPT, are left as they are. A
// chain with more than maxRightOnly such branches in a row cannot be
// regrouped and is refused (1473) rather than planned for minutes.

// balancedFrom is the number of branches from which a chain is rebuilt;
// maxRightOnly the most branches that must stay right children in a row.
const (
	balancedFrom = 8
	maxRightOnly = 256
)

// balanceSetOps rebuilds the long set-operation chains in st. query is
// st's text: a statement that cannot contain one is not walked.
func balanceSetOps(st ast.SQLNode, query string) error {
	if st == nil || !containsFold(query, "union") && !containsFold(query, "intersect") {
		return nil
	}
	var ops []*ast.SetOp
	_ = ast.Walk(func(node ast.SQLNode) (bool, error) {
		if op, ok := node.(*ast.SetOp); ok {
			ops = append(ops, op)
		}
		return true, nil
	}, st)
	done := map[*ast.SetOp]bool{}
	for _, op := range ops { // outermost first: a chain's top before its inner nodes
		if done[op] {
			continue
		}
		kind, ok := associativeKind(op.Type)
		if !ok {
			continue
		}
		var branches []ast.SelectStatement
		inner := []*ast.SetOp{}
		n := op
		for {
			branches = append(branches, n.Right)
			l, ok := n.Left.(*ast.SetOp)
			if !ok || !sameChain(l, kind) {
				branches = append(branches, n.Left)
				break
			}
			inner = append(inner, l)
			n = l
		}
		for _, i := range inner {
			done[i] = true
		}
		if len(branches) < balancedFrom {
			continue
		}
		// branches were collected right to left.
		for i, j := 0, len(branches)-1; i < j; i, j = i+1, j-1 {
			branches[i], branches[j] = branches[j], branches[i]
		}
		units, longest := chainUnits(op.Type, branches)
		if longest > maxRightOnly {
			return mysql.NewSQLError(erTooHighLevelOfNesting, "HY000", "Too high level of nesting for select: more than %d set operations with an ORDER BY or LIMIT of their own in a row", maxRightOnly)
		}
		if len(units) < 2 {
			continue
		}
		mid := len(units) / 2
		op.Left = balancedChain(op.Type, units[:mid])
		op.Right = balancedChain(op.Type, units[mid:])
	}
	return nil
}

const erTooHighLevelOfNesting = 1473 // ER_TOO_HIGH_LEVEL_OF_NESTING_FOR_SELECT

// chainUnits groups a chain's branches (in order) into the units a
// balanced tree is made of, and says how many branches the longest unit
// has. go-mysql-server's planner reads a set operation on the left of
// another as the start of the same chain (an ORDER BY or LIMIT of its own
// would apply to what follows it), so a branch that is such a set
// operation must stay a right child, as it was: it joins the unit of the
// branch before it, a left-deep chain. The first branch starts the first
// unit whatever it is: it was on the left already.
func chainUnits(typ string, branches []ast.SelectStatement) (units []ast.SelectStatement, longest int) {
	n := 0
	for i, b := range branches {
		if i == 0 || leftSafe(b) {
			units = append(units, b)
			n = 1
		} else {
			last := len(units) - 1
			units[last] = &ast.SetOp{Type: typ, Left: units[last], Right: b}
			n++
		}
		longest = max(longest, n)
	}
	return units, longest
}

// leftSafe reports whether a branch may be the left child of a set
// operation: anything but a set operation with clauses of its own.
func leftSafe(b ast.SelectStatement) bool {
	if p, ok := b.(*ast.ParenSelect); ok {
		b = p.Select
	}
	op, ok := b.(*ast.SetOp)
	return !ok || op.With == nil && op.Limit == nil && op.Into == nil && op.Lock == nil && len(op.OrderBy) == 0
}

// associativeKind is the kind of a set operation that may be regrouped.
func associativeKind(t string) (string, bool) {
	switch strings.ToLower(t) {
	case ast.UnionStr, ast.UnionDistinctStr:
		return ast.UnionStr, true
	case ast.UnionAllStr:
		return ast.UnionAllStr, true
	case ast.IntersectStr, "intersect distinct":
		return ast.IntersectStr, true
	}
	return "", false
}

// sameChain reports whether op continues a chain of kind: the same kind,
// with no clause of its own.
func sameChain(op *ast.SetOp, kind string) bool {
	k, ok := associativeKind(op.Type)
	return ok && k == kind && op.With == nil && op.Limit == nil && op.Into == nil && op.Lock == nil && len(op.OrderBy) == 0
}

func balancedChain(typ string, branches []ast.SelectStatement) ast.SelectStatement {
	if len(branches) == 1 {
		return branches[0]
	}
	mid := len(branches) / 2
	return &ast.SetOp{Type: typ, Left: balancedChain(typ, branches[:mid]), Right: balancedChain(typ, branches[mid:])}
}
