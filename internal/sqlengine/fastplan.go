package sqlengine

import (
	"strings"

	ast "github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/lockstepdb/lockstep/internal/lock"
)

// FastPlan is a statement the fast path recognised by its shape alone
// (see fastpath.go). It names tables and columns as written and holds
// operands as literals or bind variables; nothing in it depends on the
// catalog, so a prepared statement's plan is built once and reused.
type FastPlan struct {
	kind      fastKind
	db, table string // db empty: the session's current database
	alias     string // the table's alias in a SELECT, if any

	// SELECT
	distinct bool
	aggs     bool // every item is SUM or COUNT (no GROUP BY: one row)
	star     bool
	items    []fastItem
	where    []fastCond
	order    *fastOrder
	limit    *fastOperand
	lock     lock.Mode

	// UPDATE
	sets []fastSet

	// SET autocommit: the value (0, 1, 'ON' or 'OFF')
	autocommit fastOperand

	// INSERT and REPLACE
	cols    []string // nil: every column in table order
	values  []fastOperand
	replace bool // REPLACE: delete the rows whose keys the new row repeats
}

type fastKind uint8

const (
	fastSelect fastKind = iota
	fastUpdate
	fastDelete
	fastInsert
	fastBegin
	fastCommit
	fastRollback
	fastSetAutocommit
)

// fastItem is one selected column, or SUM(col), COUNT(col) or COUNT(*).
type fastItem struct {
	col  string // column name as written ("" for COUNT(*))
	name string // the result column's name: the alias, else the column or aggregate as written
	agg  byte   // 0, 's' (SUM) or 'c' (COUNT)
	// aliased: the column has an AS alias (GMS then describes it as an
	// expression: no table, no key flags).
	aliased bool
}

// fastCond is one conjunct of a WHERE clause: col op operand(s).
type fastCond struct {
	col string
	op  condOp
	ops []fastOperand // one, two for BETWEEN, the list for IN
}

type condOp uint8

const (
	condEq condOp = iota
	condIn
	condBetween
	condGE
	condGT
	condLE
	condLT
)

type fastOrder struct {
	col  string
	desc bool
}

// fastSet is col = operand, or col = col + operand / col - operand.
type fastSet struct {
	col   string
	arith byte // 0, '+' or '-'
	val   fastOperand
}

// fastOperand is a literal (*ast.SQLVal of type IntVal or StrVal, or
// *ast.NullVal; a negative integer keeps its sign in the SQLVal) or a bind
// variable's name.
type fastOperand struct {
	lit   ast.Expr
	param string
	neg   bool // -param: the bound value negated (integers only)
}

// PlanFast recognises the statement shapes the fast path executes. It
// returns nil for anything else; the caller then runs the statement
// through GMS.
func PlanFast(st ast.Statement) *FastPlan {
	switch n := st.(type) {
	case *ast.Select:
		return planSelect(n)
	case *ast.Update:
		return planUpdate(n)
	case *ast.Delete:
		return planDelete(n)
	case *ast.Insert:
		return planInsert(n)
	case *ast.Begin:
		if n.TransactionCharacteristic != "" {
			return nil // READ ONLY, WITH CONSISTENT SNAPSHOT: GMS
		}
		return &FastPlan{kind: fastBegin}
	case *ast.Commit:
		return &FastPlan{kind: fastCommit}
	case *ast.Rollback:
		return &FastPlan{kind: fastRollback}
	case *ast.Set:
		return planSet(n)
	}
	return nil
}

// planSet accepts SET [SESSION] autocommit = value, the statement
// connectors send around every transaction they manage.
func planSet(n *ast.Set) *FastPlan {
	if len(n.Exprs) != 1 {
		return nil
	}
	e := n.Exprs[0]
	if e.Name == nil || !e.Name.Qualifier.IsEmpty() || !strings.EqualFold(e.Name.Name.String(), "autocommit") ||
		(e.Scope != ast.SetScope_None && e.Scope != ast.SetScope_Session) {
		return nil
	}
	v := e.Expr
	if b, ok := v.(ast.BoolVal); ok {
		v = ast.NewIntVal([]byte("0"))
		if b {
			v = ast.NewIntVal([]byte("1"))
		}
	}
	o, ok := operand(v)
	if !ok || o.neg {
		return nil
	}
	return &FastPlan{kind: fastSetAutocommit, autocommit: o}
}

// singleTable returns the one plain table of a FROM clause.
func singleTable(te ast.TableExprs) (db, table, alias string, ok bool) {
	if len(te) != 1 {
		return "", "", "", false
	}
	a, isAliased := te[0].(*ast.AliasedTableExpr)
	if !isAliased || a.Hints != nil || a.AsOf != nil || len(a.Partitions) > 0 || a.Lateral {
		return "", "", "", false
	}
	tn, isName := a.Expr.(ast.TableName)
	if !isName || !tn.SchemaQualifier.IsEmpty() {
		return "", "", "", false
	}
	return tn.DbQualifier.String(), tn.Name.String(), a.As.String(), true
}

func planSelect(n *ast.Select) *FastPlan {
	if n.Into != nil || n.With != nil || n.Having != nil || len(n.GroupBy) > 0 || len(n.Window) > 0 ||
		len(n.QueryOpts.DistinctOn) > 0 || n.QueryOpts.SQLCalcFoundRows ||
		n.QueryOpts.StraightJoinHint || n.Where == nil {
		return nil
	}
	p := &FastPlan{kind: fastSelect, distinct: n.QueryOpts.Distinct}
	var ok bool
	if p.db, p.table, p.alias, ok = singleTable(n.From); !ok {
		return nil
	}
	if n.Lock != nil {
		switch strings.ToLower(strings.TrimSpace(n.Lock.Type)) {
		case "":
		case "for update":
			p.lock = lock.Exclusive
		case "lock in share mode", "for share":
			p.lock = lock.Shared
		default:
			return nil // OF, NOWAIT, SKIP LOCKED
		}
		if len(n.Lock.Tables) > 0 {
			return nil
		}
	}
	for _, se := range n.SelectExprs {
		switch x := se.(type) {
		case *ast.StarExpr:
			if !x.TableName.IsEmpty() || len(n.SelectExprs) != 1 {
				return nil
			}
			p.star = true
		case *ast.AliasedExpr:
			if f, isFunc := x.Expr.(*ast.FuncExpr); isFunc {
				it, ok := p.aggregate(f)
				if !ok {
					return nil
				}
				it.name = x.As.String()
				if it.name == "" {
					it.name = x.InputExpression
				}
				if it.name == "" {
					return nil
				}
				p.items = append(p.items, it)
				p.aggs = true
				continue
			}
			c, isCol := x.Expr.(*ast.ColName)
			if !isCol || !p.ownColumn(c) {
				return nil
			}
			it := fastItem{col: c.Name.String(), name: x.As.String(), aliased: !x.As.IsEmpty()}
			if !it.aliased {
				it.name = it.col // as written, as GMS names it
			}
			p.items = append(p.items, it)
		default:
			return nil
		}
	}
	if p.aggs {
		// Every item an aggregate; no DISTINCT, ORDER BY or LIMIT on the
		// one row.
		for _, it := range p.items {
			if it.agg == 0 {
				return nil
			}
		}
		if p.distinct || len(n.OrderBy) > 0 || n.Limit != nil {
			return nil
		}
	}
	if p.where = p.conds(n.Where.Expr, nil); p.where == nil {
		return nil
	}
	if len(n.OrderBy) > 1 {
		return nil
	}
	if len(n.OrderBy) == 1 {
		o := n.OrderBy[0]
		c, isCol := o.Expr.(*ast.ColName)
		if !isCol || !p.ownColumn(c) {
			return nil
		}
		p.order = &fastOrder{col: c.Name.String(), desc: strings.EqualFold(o.Direction, ast.DescScr)}
	}
	if n.Limit != nil {
		if n.Limit.Offset != nil {
			return nil
		}
		op, ok := operand(n.Limit.Rowcount)
		if !ok {
			return nil
		}
		p.limit = &op
	}
	return p
}

// aggregate accepts SUM(col), COUNT(col) and COUNT(*).
func (p *FastPlan) aggregate(f *ast.FuncExpr) (fastItem, bool) {
	if f.Distinct || f.Over != nil || !f.Qualifier.IsEmpty() || len(f.Exprs) != 1 {
		return fastItem{}, false
	}
	var it fastItem
	switch f.Name.Lowered() {
	case "sum":
		it.agg = 's'
	case "count":
		it.agg = 'c'
	default:
		return fastItem{}, false
	}
	switch a := f.Exprs[0].(type) {
	case *ast.StarExpr:
		if it.agg != 'c' || !a.TableName.IsEmpty() {
			return fastItem{}, false
		}
	case *ast.AliasedExpr:
		c, isCol := a.Expr.(*ast.ColName)
		if !isCol || !a.As.IsEmpty() || !p.ownColumn(c) {
			return fastItem{}, false
		}
		it.col = c.Name.String()
	default:
		return fastItem{}, false
	}
	return it, true
}

// ownColumn accepts a column of the statement's one table, qualified by
// its name or alias or not at all.
func (p *FastPlan) ownColumn(c *ast.ColName) bool {
	if c.StoredProcVal != nil {
		return false
	}
	q := c.Qualifier
	if q.IsEmpty() {
		return true
	}
	if !q.DbQualifier.IsEmpty() && !strings.EqualFold(q.DbQualifier.String(), p.db) {
		return false
	}
	if p.alias != "" {
		return q.DbQualifier.IsEmpty() && q.Name.String() == p.alias
	}
	return strings.EqualFold(q.Name.String(), p.table)
}

// conds flattens a conjunction of simple column conditions.
func (p *FastPlan) conds(e ast.Expr, out []fastCond) []fastCond {
	switch x := e.(type) {
	case *ast.AndExpr:
		if out = p.conds(x.Left, out); out == nil {
			return nil
		}
		return p.conds(x.Right, out)
	case *ast.ParenExpr:
		return p.conds(x.Expr, out)
	case *ast.ComparisonExpr:
		if x.Escape != nil {
			return nil
		}
		c, isCol := x.Left.(*ast.ColName)
		if !isCol || !p.ownColumn(c) {
			return nil
		}
		var op condOp
		switch x.Operator {
		case ast.EqualStr:
			op = condEq
		case ast.GreaterEqualStr:
			op = condGE
		case ast.GreaterThanStr:
			op = condGT
		case ast.LessEqualStr:
			op = condLE
		case ast.LessThanStr:
			op = condLT
		case ast.InStr:
			tuple, isTuple := x.Right.(ast.ValTuple)
			if !isTuple || len(tuple) == 0 {
				return nil
			}
			cond := fastCond{col: c.Name.String(), op: condIn}
			for _, v := range tuple {
				o, ok := operand(v)
				if !ok {
					return nil
				}
				cond.ops = append(cond.ops, o)
			}
			return append(out, cond)
		default:
			return nil
		}
		o, ok := operand(x.Right)
		if !ok {
			return nil
		}
		return append(out, fastCond{col: c.Name.String(), op: op, ops: []fastOperand{o}})
	case *ast.RangeCond:
		c, isCol := x.Left.(*ast.ColName)
		if !isCol || !p.ownColumn(c) || x.Operator != ast.BetweenStr {
			return nil
		}
		lo, ok1 := operand(x.From)
		hi, ok2 := operand(x.To)
		if !ok1 || !ok2 {
			return nil
		}
		return append(out, fastCond{col: c.Name.String(), op: condBetween, ops: []fastOperand{lo, hi}})
	}
	return nil
}

// operand accepts integer and string literals, NULL, -integer and bind
// variables.
func operand(e ast.Expr) (fastOperand, bool) {
	switch x := e.(type) {
	case *ast.SQLVal:
		switch x.Type {
		case ast.IntVal, ast.StrVal:
			return fastOperand{lit: x}, true
		case ast.ValArg:
			name := string(x.Val)
			if !strings.HasPrefix(name, ":") {
				return fastOperand{}, false
			}
			return fastOperand{param: name[1:]}, true
		}
	case *ast.NullVal:
		return fastOperand{lit: x}, true
	case *ast.UnaryExpr:
		v, ok := x.Expr.(*ast.SQLVal)
		if !ok || x.Operator != ast.UMinusStr {
			break
		}
		if v.Type == ast.IntVal && !strings.HasPrefix(string(v.Val), "-") {
			return fastOperand{lit: ast.NewIntVal(append([]byte{'-'}, v.Val...))}, true
		}
		if v.Type == ast.ValArg && strings.HasPrefix(string(v.Val), ":") {
			return fastOperand{param: string(v.Val[1:]), neg: true}, true
		}
	}
	return fastOperand{}, false
}

func planUpdate(n *ast.Update) *FastPlan {
	if n.Ignore != "" || n.With != nil || len(n.OrderBy) > 0 || n.Limit != nil || len(n.Returning) > 0 || n.Where == nil {
		return nil
	}
	p := &FastPlan{kind: fastUpdate}
	var ok bool
	if p.db, p.table, p.alias, ok = singleTable(n.TableExprs); !ok || p.alias != "" {
		return nil
	}
	seen := map[string]bool{}
	for _, a := range n.Exprs {
		if !p.ownColumn(a.Name) {
			return nil
		}
		col := a.Name.Name.String()
		if seen[strings.ToLower(col)] {
			return nil // later assignments see earlier ones: GMS
		}
		seen[strings.ToLower(col)] = true
		s := fastSet{col: col}
		if b, isBin := a.Expr.(*ast.BinaryExpr); isBin {
			c, isCol := b.Left.(*ast.ColName)
			if !isCol || !p.ownColumn(c) || !strings.EqualFold(c.Name.String(), col) ||
				(b.Operator != ast.PlusStr && b.Operator != ast.MinusStr) {
				return nil
			}
			s.arith = b.Operator[0]
			if s.val, ok = operand(b.Right); !ok {
				return nil
			}
		} else if s.val, ok = operand(a.Expr); !ok {
			return nil
		}
		p.sets = append(p.sets, s)
	}
	if p.where = p.conds(n.Where.Expr, nil); p.where == nil {
		return nil
	}
	return p
}

func planDelete(n *ast.Delete) *FastPlan {
	if len(n.Targets) > 0 || n.With != nil || len(n.Partitions) > 0 || len(n.OrderBy) > 0 || n.Limit != nil ||
		len(n.Returning) > 0 || n.Where == nil {
		return nil
	}
	p := &FastPlan{kind: fastDelete}
	var ok bool
	if p.db, p.table, p.alias, ok = singleTable(n.TableExprs); !ok || p.alias != "" {
		return nil
	}
	if p.where = p.conds(n.Where.Expr, nil); p.where == nil {
		return nil
	}
	return p
}

func planInsert(n *ast.Insert) *FastPlan {
	if n.Ignore != "" || n.With != nil || len(n.Partitions) > 0 || len(n.Returning) > 0 || len(n.OnDup) > 0 ||
		!n.Table.SchemaQualifier.IsEmpty() {
		return nil
	}
	p := &FastPlan{kind: fastInsert, db: n.Table.DbQualifier.String(), table: n.Table.Name.String()}
	switch n.Action {
	case ast.InsertStr:
	case ast.ReplaceStr:
		p.replace = true
	default:
		return nil
	}
	var rows ast.Values
	switch r := n.Rows.(type) {
	case *ast.AliasedValues:
		if !r.As.IsEmpty() || len(r.Columns) > 0 {
			return nil
		}
		rows = r.Values
	case ast.AliasedValues:
		if !r.As.IsEmpty() || len(r.Columns) > 0 {
			return nil
		}
		rows = r.Values
	case ast.Values:
		rows = r
	default:
		return nil
	}
	if len(rows) != 1 || len(rows[0]) == 0 {
		return nil
	}
	for _, c := range n.Columns {
		p.cols = append(p.cols, c.String())
	}
	if p.cols != nil && len(p.cols) != len(rows[0]) {
		return nil // GMS reports the column count mismatch
	}
	for _, v := range rows[0] {
		o, ok := operand(v)
		if !ok {
			return nil
		}
		p.values = append(p.values, o)
	}
	return p
}
