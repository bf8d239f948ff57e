package sqlengine

// GROUP_CONCAT as MySQL computes it.
//
// For each row of a group, GROUP_CONCAT([DISTINCT] e1, e2, ... [ORDER BY
// k1 [ASC|DESC], ...] [SEPARATOR s]) joins the values of its expressions
// (a row where one of them is NULL is left out), then joins the rows,
// ordered by the keys (NULL first ascending, last descending; rows with
// equal keys keep their order), with the separator (',' by default).
// DISTINCT leaves out a row whose tuple of values equals an earlier one's,
// comparing strings by their collation. The result is cut to
// group_concat_max_len bytes (never inside a character), with warning
// 1260 for the group cut; it is NULL when no row is left.
//
// go-mysql-server left out every row whose value was the empty string
// (GROUP_CONCAT over '', 'a', '' gave 'a' where MySQL gives ',a,'), kept
// the first of several expressions only, compared DISTINCT values byte
// by byte and as joined text (('a', 'bc') equal to ('ab', 'c')), cut the
// result without a warning, and read group_concat_max_len when the
// statement was planned. Its settings (DISTINCT, the directions, the
// separator) are private to it, so the parser writes them into each
// GROUP_CONCAT as a first value, a string literal that starts with
// groupConcatMark (rewriteGroupConcat); go-mysql-server plans the
// GROUP_CONCAT as before (the ORDER BY keys, correlated subqueries
// among them, resolved in its scope), and before execution correctArgs
// puts a groupConcat, which reads the settings from that literal and
// computes as MySQL does, in place of each one that has it.

import (
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function/aggregation"
	"github.com/dolthub/go-mysql-server/sql/hash"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// groupConcatMark starts the settings literal rewriteGroupConcat writes
// (a NUL, which SQL text does not put at the start of a literal by
// accident).
const groupConcatMark = "\x00lockstep group_concat|"

// erCutValueGroupConcat is warning 1260 (ER_CUT_VALUE_GROUP_CONCAT).
const erCutValueGroupConcat = 1260

// groupConcatSpec is what a GROUP_CONCAT says besides its expressions.
type groupConcatSpec struct {
	distinct  bool
	orders    []sql.SortOrder
	separator string
}

// encode is the settings literal: groupConcatMark, "1" or "0" for
// DISTINCT, "|", an "A" or "D" per ORDER BY key, "|", the separator.
func (s groupConcatSpec) encode() string {
	var b strings.Builder
	b.WriteString(groupConcatMark)
	if s.distinct {
		b.WriteByte('1')
	} else {
		b.WriteByte('0')
	}
	b.WriteByte('|')
	for _, o := range s.orders {
		if o == sql.Descending {
			b.WriteByte('D')
		} else {
			b.WriteByte('A')
		}
	}
	b.WriteByte('|')
	b.WriteString(s.separator)
	return b.String()
}

// decodeGroupConcatSpec reads a settings literal; ok is false for any
// other text.
func decodeGroupConcatSpec(text string) (groupConcatSpec, bool) {
	rest, ok := strings.CutPrefix(text, groupConcatMark)
	if !ok {
		return groupConcatSpec{}, false
	}
	flag, rest, ok := strings.Cut(rest, "|")
	if !ok || (flag != "0" && flag != "1") {
		return groupConcatSpec{}, false
	}
	dirs, sep, ok := strings.Cut(rest, "|")
	if !ok {
		return groupConcatSpec{}, false
	}
	s := groupConcatSpec{distinct: flag == "1", separator: sep}
	for _, d := range dirs {
		switch d {
		case 'A':
			s.orders = append(s.orders, sql.Ascending)
		case 'D':
			s.orders = append(s.orders, sql.Descending)
		default:
			return groupConcatSpec{}, false
		}
	}
	return s, true
}

// rewriteGroupConcat writes its settings literal into every GROUP_CONCAT
// of st, as its first value, and replaces an ORDER BY key that is a
// position (ORDER BY 1) by the expression it names. query is st's text:
// a statement that cannot contain GROUP_CONCAT is not walked.
func rewriteGroupConcat(st ast.SQLNode, query string) {
	if st == nil || !containsFold(query, "group_concat") {
		return
	}
	rewriteExprs(st, func(e ast.Expr) ast.Expr {
		if g, ok := e.(*ast.GroupConcatExpr); ok {
			markGroupConcat(g)
		}
		return nil
	})
}

func markGroupConcat(g *ast.GroupConcatExpr) {
	if len(g.Exprs) > 0 {
		if ae, ok := g.Exprs[0].(*ast.AliasedExpr); ok {
			if v, ok := ae.Expr.(*ast.SQLVal); ok && strings.HasPrefix(string(v.Val), groupConcatMark) {
				return // marked already (a statement parsed twice)
			}
		}
	}
	spec := groupConcatSpec{distinct: g.Distinct != "", separator: ","}
	if !g.Separator.DefaultSeparator {
		spec.separator = g.Separator.SeparatorString
	}
	for _, o := range g.OrderBy {
		if v, ok := o.Expr.(*ast.SQLVal); ok && v.Type == ast.IntVal {
			if n, err := strconv.Atoi(string(v.Val)); err == nil && n >= 1 && n <= len(g.Exprs) {
				if ae, ok := g.Exprs[n-1].(*ast.AliasedExpr); ok {
					o.Expr = ae.Expr
				}
			}
		}
		if strings.EqualFold(o.Direction, ast.DescScr) {
			spec.orders = append(spec.orders, sql.Descending)
		} else {
			spec.orders = append(spec.orders, sql.Ascending)
		}
	}
	mark := &ast.AliasedExpr{Expr: ast.NewStrVal([]byte(spec.encode()))}
	g.Exprs = append(ast.SelectExprs{mark}, g.Exprs...)
}

// asGroupConcat is gc as a groupConcat, if the parser marked it.
func asGroupConcat(gc *aggregation.GroupConcat) (groupConcat, bool) {
	out := gc.OutputExpressions()
	if len(out) < 2 {
		return groupConcat{}, false
	}
	lit, ok := out[0].(*expression.Literal)
	if !ok {
		return groupConcat{}, false
	}
	text, ok := lit.Value().(string)
	if !ok {
		return groupConcat{}, false
	}
	spec, ok := decodeGroupConcatSpec(text)
	if !ok || len(gc.Children())-len(out) != len(spec.orders) {
		return groupConcat{}, false
	}
	return groupConcat{GroupConcat: gc, spec: spec, cut: new(atomic.Int64)}, true
}

// groupConcat is GROUP_CONCAT: go-mysql-server's, planned with the
// settings literal as its first value, for what the planner and the
// analyzer ask of an aggregate (children, type, printing, ids); the
// values are its own (NewBuffer).
type groupConcat struct {
	*aggregation.GroupConcat
	spec groupConcatSpec
	// cut numbers the groups a statement cut (warning 1260's row).
	cut *atomic.Int64
}

var (
	_ sql.Aggregation  = groupConcat{}
	_ sql.IdExpression = groupConcat{}
)

func (a groupConcat) keys() []sql.Expression { return a.Children()[:len(a.spec.orders)] }

// values are the expressions after the settings literal.
func (a groupConcat) values() []sql.Expression { return a.Children()[len(a.spec.orders)+1:] }

// IsNullable: a group whose every row has a NULL gives NULL.
func (a groupConcat) IsNullable(*sql.Context) bool { return true }

// groupConcatMaxLen is the session's group_concat_max_len.
func groupConcatMaxLen(ctx *sql.Context) int {
	v, err := ctx.GetSessionVariable(ctx, "group_concat_max_len")
	if err != nil {
		return 1024
	}
	switch n := v.(type) {
	case uint64:
		return int(min(n, 1<<31))
	case int64:
		return int(max(min(n, 1<<31), 4))
	}
	return 1024
}

func (a groupConcat) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	e, err := a.GroupConcat.WithChildren(ctx, children...)
	if err != nil {
		return nil, err
	}
	n := a
	n.GroupConcat = e.(*aggregation.GroupConcat)
	if w := a.Window(); w != nil {
		n.GroupConcat = n.GroupConcat.WithWindow(ctx, w).(*aggregation.GroupConcat)
	}
	n.GroupConcat = n.GroupConcat.WithId(a.Id()).(*aggregation.GroupConcat)
	return n, nil
}

func (a groupConcat) WithWindow(ctx *sql.Context, w *sql.WindowDefinition) sql.WindowAdaptableExpression {
	n := a
	n.GroupConcat = a.GroupConcat.WithWindow(ctx, w).(*aggregation.GroupConcat)
	return n
}

func (a groupConcat) WithId(id sql.ColumnId) sql.IdExpression {
	n := a
	n.GroupConcat = a.GroupConcat.WithId(id).(*aggregation.GroupConcat)
	return n
}

func (a groupConcat) NewBuffer(ctx *sql.Context) (sql.AggregationBuffer, error) {
	b := &groupConcatRows{a: a, keys: a.keys(), values: a.values(), maxLen: groupConcatMaxLen(ctx)}
	for _, k := range b.keys {
		b.keyTypes = append(b.keyTypes, k.Type(ctx))
	}
	for _, v := range b.values {
		b.sch = append(b.sch, &sql.Column{Type: v.Type(ctx)})
	}
	if a.spec.distinct {
		b.seen = map[uint64]struct{}{}
	}
	b.vals = make(sql.Row, len(b.sch))
	return b, nil
}

// valuesAsText puts a temporalAs in front of each temporal value, which
// then joins as its text (temporaltext.go); the ORDER BY keys keep their
// values, which sort by their type.
func (a groupConcat) valuesAsText(ctx *sql.Context) (sql.Expression, transform.TreeIdentity, error) {
	children := a.Children()
	same := transform.SameTree
	for i := len(a.spec.orders) + 1; i < len(children); i++ {
		c := children[i]
		if _, done := c.(*temporalAs); done {
			continue
		}
		if t := c.Type(ctx); types.IsTime(t) || types.IsTimespan(t) {
			children[i] = &temporalAs{valueWrapper: wrap(c), typ: t}
			same = transform.NewTree
		}
	}
	if same == transform.SameTree {
		return a, transform.NewTree, nil // a itself is new
	}
	e, err := a.WithChildren(ctx, children...)
	return e, transform.NewTree, err
}

// groupConcatRows is one group's rows: their keys and joined values.
type groupConcatRows struct {
	a        groupConcat
	keys     []sql.Expression
	values   []sql.Expression
	maxLen   int
	keyTypes []sql.Type
	sch      sql.Schema          // the values' types (DISTINCT hashes by them)
	seen     map[uint64]struct{} // DISTINCT: the tuples kept
	vals     sql.Row
	rows     []groupConcatRow
}

type groupConcatRow struct {
	keys sql.Row
	text string
}

func (b *groupConcatRows) Update(ctx *sql.Context, row sql.Row) error {
	for i, e := range b.values {
		v, err := e.Eval(ctx, row)
		if err != nil {
			return err
		}
		if v == nil {
			return nil // a row with a NULL is left out
		}
		b.vals[i] = v
	}
	if b.seen != nil {
		h, err := hash.HashOf(ctx, b.sch, b.vals)
		if err != nil {
			return err
		}
		if _, dup := b.seen[h]; dup {
			return nil
		}
		b.seen[h] = struct{}{}
	}
	var text strings.Builder
	for i, v := range b.vals {
		s, err := groupConcatText(ctx, v, b.sch[i].Type)
		if err != nil {
			return err
		}
		text.WriteString(s)
	}
	r := groupConcatRow{text: text.String()}
	// go-mysql-server evaluates the keys on the row with the value
	// appended, and plans them so (a correlated subquery among them
	// reads its own columns after that).
	keyRow := append(row[:len(row):len(row)], r.text)
	for _, k := range b.keys {
		v, err := k.Eval(ctx, keyRow)
		if err != nil {
			return err
		}
		r.keys = append(r.keys, v)
	}
	b.rows = append(b.rows, r)
	return nil
}

// groupConcatText is v's text as GROUP_CONCAT joins it.
func groupConcatText(ctx *sql.Context, v any, t sql.Type) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case []byte:
		return string(x), nil
	}
	s, _, err := types.ConvertToCollatedString(ctx, v, t)
	return s, err
}

func (b *groupConcatRows) Eval(ctx *sql.Context) (any, error) {
	if len(b.rows) == 0 {
		return nil, nil
	}
	var sortErr error
	if len(b.keyTypes) > 0 {
		sort.SliceStable(b.rows, func(i, j int) bool {
			for k, t := range b.keyTypes {
				x, y := b.rows[i].keys[k], b.rows[j].keys[k]
				var c int
				switch {
				case x == nil && y == nil:
					c = 0
				case x == nil:
					c = -1
				case y == nil:
					c = 1
				default:
					var err error
					if c, err = t.Compare(ctx, x, y); err != nil && sortErr == nil {
						sortErr = err
					}
				}
				if b.a.spec.orders[k] == sql.Descending {
					c = -c
				}
				if c != 0 {
					return c < 0
				}
			}
			return false
		})
	}
	if sortErr != nil {
		return nil, sortErr
	}
	var out strings.Builder
	for i, r := range b.rows {
		if i > 0 {
			out.WriteString(b.a.spec.separator)
		}
		out.WriteString(r.text)
		if out.Len() > b.maxLen {
			break
		}
	}
	s := out.String()
	if len(s) > b.maxLen {
		s = s[:b.maxLen]
		// Never half a character: drop the bytes of one the cut split.
		for range utf8.UTFMax - 1 {
			if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size != 1 {
				break
			}
			s = s[:len(s)-1]
		}
		n := b.a.cut.Add(1)
		ctx.Warn(erCutValueGroupConcat, "Row %d was cut by GROUP_CONCAT()", n)
	}
	return s, nil
}

func (b *groupConcatRows) Dispose(ctx *sql.Context) {
	for _, e := range b.a.Children() {
		expression.Dispose(ctx, e)
	}
}
