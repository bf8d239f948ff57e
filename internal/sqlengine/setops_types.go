package sqlengine

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/dolthub/vitess/go/vt/proto/query"
)

// The type of a set operation's column whose sides are exact numbers of
// different types, or strings of different types.
//
// MySQL gives each column of a UNION, INTERSECT or EXCEPT one type,
// aggregated over the sides, and converts every row's value to it:
// `SELECT 1 UNION SELECT 2.5` is a DECIMAL(2,1) column whose rows read
// 1.0 and 2.5. go-mysql-server typed such a column with its internal
// DECIMAL(65,30) and passed each side's values on as they were, so
// clients read 1 and 2.5: equal as numbers, not as text, and the text is
// what most drivers hand applications.
//
// typedSetOp gives a column whose sides are all integers or DECIMALs, at
// least one of them a DECIMAL and not all of one type, MySQL's type:
// DECIMAL with the largest number of integer digits and the largest
// scale of its sides (at most 65 digits, 30 of them decimals), as a
// column's type, so that every value is written with that scale. An
// integer side counts its type's digits (a literal 1 is a TINYINT, 3
// digits, where MySQL counts 1), so the precision described can be larger
// than MySQL's; the values are MySQL's. A derived table over such an
// operation has its columns' references retyped (they were planned with
// go-mysql-server's type).
//
// A column whose sides differ and are strings (not binary), string
// literals or integers go-mysql-server described as a LONGTEXT; MySQL
// gives it a VARCHAR of the longest side's length in characters (an
// integer counts its display width, a literal its own length), a CHAR if
// every side is a CHAR column, a TEXT, MEDIUMTEXT or LONGTEXT as long as
// the longest side if one is a TEXT, and the collation the sides
// aggregate to (setOpHashSchema): typedSetOp describes it so, for the set
// operations whose rows go to the client as they are
// (typeClientStrings). Its values are strings either way. Other mixes,
// and set operations in subqueries of expressions, which go-mysql-server
// evaluates itself, keep go-mysql-server's type (README, "Known to
// differ").
//
// Invariant: no untyped set operation has a typed side (the analyzer's
// validation compares an untyped operation's sides).
type typedSetOp struct {
	*plan.SetOp
	sch sql.Schema
}

var _ sql.Node = (*typedSetOp)(nil)

func (n *typedSetOp) Schema(*sql.Context) sql.Schema { return n.sch }

func (n *typedSetOp) String() string { return "typed " + n.SetOp.String() }

// WithChildren and WithExpressions keep the types over a rebuilt set
// operation (rules after this one rebuild nodes).
func (n *typedSetOp) WithChildren(ctx *sql.Context, children ...sql.Node) (sql.Node, error) {
	return n.rewrap(n.SetOp.WithChildren(ctx, children...))
}

func (n *typedSetOp) WithExpressions(ctx *sql.Context, exprs ...sql.Expression) (sql.Node, error) {
	return n.rewrap(n.SetOp.WithExpressions(ctx, exprs...))
}

func (n *typedSetOp) rewrap(c sql.Node, err error) (sql.Node, error) {
	if err != nil {
		return nil, err
	}
	so, ok := c.(*plan.SetOp)
	if !ok {
		return nil, fmt.Errorf("set operation rebuilt as %T", c)
	}
	return &typedSetOp{SetOp: so, sch: n.sch}, nil
}

// typeSetOps wraps each set operation whose column types MySQL would
// give otherwise in a typedSetOp (after analysis: the planner has done
// with the tree), and gives the columns of a derived table over one,
// where the query reads them, the same types.
func typeSetOps(ctx *sql.Context, n sql.Node) (sql.Node, transform.TreeIdentity, error) {
	// A derived table's columns are read by column id: the references
	// were planned with go-mysql-server's types. (Its set operation may
	// have been typed when the derived table was analyzed on its own.)
	retyped := map[sql.ColumnId]sql.Type{}
	n, same, err := transform.NodeWithOpaque(ctx, n, func(ctx *sql.Context, n sql.Node) (sql.Node, transform.TreeIdentity, error) {
		switch n := n.(type) {
		case *plan.SetOp:
			// An operation over a typed one is typed too, even where its
			// type is go-mysql-server's: the analyzer's validation
			// compares the sides of an untyped one, and typing one side
			// set them apart.
			_, lt := n.Left().(*typedSetOp)
			_, rt := n.Right().(*typedSetOp)
			if sch, changed := setOpSchema(ctx, n, false); changed || lt || rt {
				return &typedSetOp{SetOp: n, sch: sch}, transform.NewTree, nil
			}
		case *plan.SubqueryAlias:
			// Its child is done (the walk goes bottom up).
			if ts, ok := n.Child.(*typedSetOp); ok && n.Columns().Len() == len(ts.sch) {
				i := 0
				n.Columns().ForEach(func(id sql.ColumnId) {
					retyped[id] = ts.sch[i].Type
					i++
				})
			}
		}
		return n, transform.SameTree, nil
	})
	if err != nil {
		return n, same, err
	}
	if len(retyped) > 0 {
		var refs transform.TreeIdentity
		if n, refs, err = retypeColumns(ctx, n, retyped); err != nil {
			return n, same, err
		}
		same = same && refs
	}
	n, facing := typeClientStrings(ctx, n)
	if facing {
		same = transform.NewTree
	}
	return n, same, nil
}

// typeClientStrings gives the string columns of the set operations whose
// rows go to the client as they are, under nothing but sorts, limits and
// DISTINCT, MySQL's string types (stringUnionType). Only those: the
// types describe the result to the client (a projection above would
// describe it with its own), and a set operation deeper in the plan (a
// CTE's or derived table's, with projections and filters go-mysql-server
// placed around it by its column positions) is left as it planned it.
func typeClientStrings(ctx *sql.Context, n sql.Node) (sql.Node, bool) {
	switch x := n.(type) {
	case *plan.Sort, *plan.TopN, *plan.Limit, *plan.Offset, *plan.Distinct, *plan.OrderedDistinct:
		child, changed := typeClientStrings(ctx, n.Children()[0])
		if !changed {
			return n, false
		}
		nn, err := x.WithChildren(ctx, child)
		if err != nil {
			return n, false
		}
		return nn, true
	case *typedSetOp:
		// Typed for its decimals: typed again, strings too.
		if nn, changed := typeClientStrings(ctx, x.SetOp); changed {
			return nn, true
		}
	case *plan.SetOp:
		// A side that is a set operation is one too (under a projection
		// converting its columns, it keeps go-mysql-server's types).
		left, lch := typeClientStrings(ctx, x.Left())
		right, rch := typeClientStrings(ctx, x.Right())
		so := x
		if lch || rch {
			nn, err := x.WithChildren(ctx, left, right)
			if err != nil {
				return n, false
			}
			so = nn.(*plan.SetOp)
		}
		if sch, changed := setOpSchema(ctx, so, true); changed || lch || rch {
			return &typedSetOp{SetOp: so, sch: sch}, true
		}
	}
	return n, false
}

// setOpSchema is n's schema with MySQL's types where they differ from
// go-mysql-server's (changed says whether any does).
func setOpSchema(ctx *sql.Context, n *plan.SetOp, strs bool) (sch sql.Schema, changed bool) {
	sch = n.Schema(ctx)
	left, right := sideTypes(ctx, n.Left(), strs), sideTypes(ctx, n.Right(), strs)
	if len(left) != len(sch) || len(right) != len(sch) {
		return sch, false
	}
	var out sql.Schema
	var hashed sql.Schema // the aggregated collations, when a string column needs them
	for i, col := range sch {
		t, ok := exactUnionType(ctx, left[i], right[i])
		if !ok && strs && types.IsTextOnly(col.Type) {
			if hashed == nil {
				hashed = setOpHashSchema(ctx, n)
			}
			t, ok = stringUnionType(ctx, n, i, hashed[i].Type)
			ok = ok && !t.Equals(col.Type)
		}
		if !ok {
			continue
		}
		if out == nil {
			out = make(sql.Schema, len(sch))
			copy(out, sch)
		}
		c := *col
		c.Type = t
		out[i] = &c
	}
	if out == nil {
		return sch, false
	}
	return out, true
}

// sideTypes are the types of the columns of a side of a set operation as
// the side computes them: go-mysql-server's planner converts each side's
// columns to the operation's type in a projection over it, so the type
// is the one under that conversion; a side that is a set operation
// itself has the types MySQL gives it.
func sideTypes(ctx *sql.Context, n sql.Node, strs bool) []sql.Type {
	if so, ok := n.(*plan.SetOp); ok {
		sch, _ := setOpSchema(ctx, so, strs)
		return schemaTypes(sch)
	}
	if ts, ok := n.(*typedSetOp); ok {
		return schemaTypes(ts.sch)
	}
	pr, ok := n.(*plan.Project)
	if !ok {
		return schemaTypes(n.Schema(ctx))
	}
	out := make([]sql.Type, len(pr.Projections))
	for i, e := range pr.Projections {
		out[i] = sideExpr(e).Type(ctx)
	}
	return out
}

// sideExpr is a side's projected expression e as the side computes it:
// without its alias, and without the conversion to the operation's type
// go-mysql-server's planner puts over it.
func sideExpr(e sql.Expression) sql.Expression {
	if a, ok := e.(*expression.Alias); ok {
		e = a.Child
	}
	if c, ok := e.(*expression.Convert); ok {
		e = c.Child
	}
	return e
}

func schemaTypes(sch sql.Schema) []sql.Type {
	out := make([]sql.Type, len(sch))
	for i, c := range sch {
		out[i] = c.Type
	}
	return out
}

// exactUnionType is the DECIMAL column type MySQL gives a column whose
// sides are of exact types a and b, one of them a DECIMAL and the two
// different; ok is false for any other pair.
func exactUnionType(ctx *sql.Context, a, b sql.Type) (sql.Type, bool) {
	_, aDec := a.(sql.DecimalType)
	_, bDec := b.(sql.DecimalType)
	if (!aDec && !bDec) || a.Equals(b) || a.Equals(types.InternalDecimalType) || b.Equals(types.InternalDecimalType) {
		return nil, false
	}
	ap, as, aok := exactDigits(ctx, a)
	bp, bs, bok := exactDigits(ctx, b)
	if !aok || !bok {
		return nil, false
	}
	scale := min(max(as, bs), maxDecimalScale)
	precision := min(max(ap-as, bp-bs)+scale, maxDecimalPrecision)
	t, err := types.CreateColumnDecimalType(uint8(precision), uint8(scale))
	if err != nil {
		return nil, false
	}
	return t, true
}

// stringUnionType is the string type MySQL gives column i of n, whose
// sides are strings, string literals or integers, not all of one type,
// agg being the column's type with its aggregated collation; ok is false
// for any other column.
func stringUnionType(ctx *sql.Context, n *plan.SetOp, i int, agg sql.Type) (sql.Type, bool) {
	coll := agg.(sql.StringType).Collation()
	if coll == sql.Collation_binary {
		return nil, false
	}
	var chars int64
	text, allChar := false, true
	for _, side := range []sql.Node{n.Left(), n.Right()} {
		w, ok := sideWidth(ctx, side, i)
		if !ok {
			return nil, false
		}
		chars = max(chars, w.chars)
		text = text || w.text
		allChar = allChar && w.char
	}
	bytes := chars * coll.CharacterSet().MaxLength()
	switch {
	case text || bytes > types.TextBlobMax: // longer than a VARCHAR can be
		switch {
		case bytes <= types.TextBlobMax:
			return types.CreateText(coll), true
		case bytes <= types.MediumTextBlobMax:
			return types.CreateMediumText(coll), true
		}
		return types.CreateLongText(coll), true
	case allChar:
		if t, err := types.CreateString(sqltypes.Char, chars, coll); err == nil {
			return t, true
		}
	}
	t, err := types.CreateString(sqltypes.VarChar, chars, coll)
	if err != nil {
		return types.CreateMediumText(coll), true
	}
	return t, true
}

// width is how long a side's column is as MySQL counts it for a set
// operation's type: in characters, whether it is a TEXT, and whether it
// is a CHAR column.
type width struct {
	chars      int64
	text, char bool
}

// sideWidth is the width of column i of a side: a nested set operation's
// type, a projected literal's own length, or the column's type.
func sideWidth(ctx *sql.Context, side sql.Node, i int) (width, bool) {
	switch s := side.(type) {
	case *plan.SetOp:
		sch, _ := setOpSchema(ctx, s, true)
		if i < len(sch) {
			return typeWidth(sch[i].Type)
		}
		return width{}, false
	case *typedSetOp:
		if i < len(s.sch) {
			return typeWidth(s.sch[i].Type)
		}
		return width{}, false
	case *plan.Project:
		if i >= len(s.Projections) {
			return width{}, false
		}
		e := sideExpr(s.Projections[i])
		if types.IsNullType(e.Type(ctx)) {
			return width{}, true // NULL: the other side's
		}
		if gf, ok := e.(*expression.GetField); ok {
			// A column of the projection below (go-mysql-server projects
			// a side's literals first, then converts them), if the field
			// names it.
			if sch := s.Child.Schema(ctx); gf.Index() < len(sch) && strings.EqualFold(sch[gf.Index()].Name, gf.Name()) {
				switch s.Child.(type) {
				case *plan.Project, *plan.SetOp, *typedSetOp:
					return sideWidth(ctx, s.Child, gf.Index())
				}
			}
		}
		if l, ok := e.(*expression.Literal); ok {
			if v, ok := l.Value().(string); ok {
				return width{chars: int64(utf8.RuneCountInString(v))}, true
			}
			if types.IsInteger(l.Type(ctx)) {
				return width{chars: int64(len(fmt.Sprint(l.Value())))}, true
			}
			return width{}, false
		}
		return typeWidth(e.Type(ctx))
	}
	sch := side.Schema(ctx)
	if i < len(sch) {
		return typeWidth(sch[i].Type)
	}
	return width{}, false
}

// typeWidth is the width of a value of type t: a string type's length, an
// integer type's display width (its sign included).
func typeWidth(t sql.Type) (width, bool) {
	if types.IsTextOnly(t) {
		st := t.(sql.StringType)
		return width{chars: st.MaxCharacterLength(), text: types.IsTextBlob(t), char: t.Type() == sqltypes.Char}, true
	}
	d, ok := intDisplayWidth[t.Type()]
	return width{chars: d}, ok
}

// intDisplayWidth is each integer type's display width, its sign
// included.
var intDisplayWidth = map[query.Type]int64{sqltypes.Int8: 4, sqltypes.Uint8: 3, sqltypes.Int16: 6, sqltypes.Uint16: 5, sqltypes.Int24: 9, sqltypes.Uint24: 8, sqltypes.Int32: 11, sqltypes.Uint32: 10, sqltypes.Int64: 20, sqltypes.Uint64: 20}
