package sqlengine

import (
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/shopspring/decimal"
)

// Numbers assigned out of a column's range by UPDATE and by INSERT's ON
// DUPLICATE KEY UPDATE, as MySQL's strict error handler treats them.
//
// go-mysql-server's SetField converts the value to the column's type and
// drops the conversion's verdict: UPDATE t SET int_col = 2147483648
// stored 2147483647, silently, in strict mode too. MySQL fails the
// statement with 1264 "Out of range value for column 'c' at row N" in
// strict mode without IGNORE, and otherwise stores the nearest value
// with that warning. (INSERT's own values go through go-mysql-server's
// insert path, which checks the range.)
//
// Each SetField of a numeric column gets a rangeChecked in front of its
// value as the statement is built (execExpressions); the rangeChecked
// converts the value, and either fails or warns and hands the SetField
// the converted value, which is then in range. The SetField itself stays:
// go-mysql-server recognises it by its type.

// checkSetRange puts a rangeChecked in front of e's value if e assigns to
// a numeric column; ok false if there is nothing to do.
func checkSetRange(ctx *sql.Context, e sql.Expression) (sql.Expression, bool) {
	sf, ok := e.(*expression.SetField)
	if !ok {
		return nil, false
	}
	gf, ok := sf.LeftChild.(*expression.GetField)
	if !ok {
		return nil, false
	}
	switch sf.RightChild.(type) {
	case *rangeChecked, *exactJSONText, *sql.ColumnDefaultValue, *expression.Wrapper, plan.ColDefaultExpression:
		return nil, false // done, or a DEFAULT (checked when it is made)
	}
	switch t := gf.Type(ctx); {
	case types.IsNumber(t):
		return expression.NewSetField(gf, &rangeChecked{valueWrapper: wrap(sf.RightChild), typ: t, column: gf.Name()}), true
	case types.IsJSON(t):
		return expression.NewSetField(gf, &exactJSONText{valueWrapper: wrap(sf.RightChild)}), true // json.go
	}
	return nil, false
}

// rangeChecked is a value about to be stored into a numeric column.
type rangeChecked struct {
	valueWrapper
	typ    sql.Type
	column string
}

var _ sql.Expression = (*rangeChecked)(nil)

func (r *rangeChecked) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(r, len(children), 1)
	}
	c := *r
	c.Child = children[0]
	return &c, nil
}

func (r *rangeChecked) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	v, err := r.Child.Eval(ctx, row)
	if err != nil || v == nil {
		return v, err
	}
	cv, past := pastRange(ctx, r.typ, v)
	if !past {
		return v, nil // go-mysql-server's SetField converts (and reports)
	}
	s := sessionOf(ctx)
	if s == nil {
		return cv, nil
	}
	n := s.strict.rows + 1 // the rows an UPDATE has written, and this one
	if s.strict.upsert {
		n = s.strict.rows // the row ON DUPLICATE KEY UPDATE changes was counted
	}
	if err := outOfRange(ctx, r.column, n); err != nil {
		return nil, err
	}
	return cv, nil
}

// pastRange says whether v is past the range of a column of type typ,
// and if so gives the nearest value in range, which MySQL stores when it
// does not fail the statement.
func pastRange(ctx *sql.Context, typ sql.Type, v any) (any, bool) {
	cv, inRange, err := typ.Convert(ctx, v)
	if err != nil {
		cv, err = decimalLimit(typ, v, err)
		return cv, err == nil
	}
	if inRange == sql.InRange {
		return nil, false
	}
	return nearestInRange(typ, cv, inRange), true
}

// outOfRange is the statement's error for a number past column's range
// in its row n, or nil after warning of it (IGNORE, or no strict mode).
func outOfRange(ctx *sql.Context, column string, n int64) error {
	s := sessionOf(ctx)
	if s == nil {
		return nil
	}
	msg := fmt.Sprintf("Out of range value for column '%s' at row %d", column, n)
	if s.escalates(s.sqlMode()) {
		return mysql.NewSQLError(mysql.ERWarnDataOutOfRange, "22003", "%s", msg)
	}
	s.BaseSession.Warn(&sql.Warning{Level: "Warning", Code: mysql.ERWarnDataOutOfRange, Message: msg})
	return nil
}

// nearestInRange is the value MySQL stores for a number past typ's
// range, which converting it gave as cv (past which end: inRange).
// go-mysql-server's conversion wraps a negative number around into an
// unsigned type (-1 is 255 for TINYINT UNSIGNED), as CAST does; a column
// takes 0.
func nearestInRange(typ sql.Type, cv any, inRange sql.ConvertInRange) any {
	if inRange == sql.Underflow && types.IsUnsigned(typ) {
		return typ.Zero()
	}
	return cv
}

// decimalLimit is the DECIMAL column value nearest to v when converting
// v to typ failed with err because v is past the column's range (MySQL
// stores 999.9 for 1000 in a DECIMAL(4,1) when it does not fail), or err
// when that was not the failure.
func decimalLimit(typ sql.Type, v any, err error) (any, error) {
	dt, ok := typ.(sql.DecimalType)
	if !ok || !types.ErrConvertToDecimalLimit.Is(err) {
		return nil, err
	}
	d, derr := dt.ConvertNoBoundsCheck(v)
	if derr != nil {
		return nil, err
	}
	limit := dt.ExclusiveUpperBound().Sub(decimal.New(1, -int32(dt.Scale())))
	if d.Sign() < 0 {
		return limit.Neg(), nil
	}
	return limit, nil
}

// rangedInsert is n with its rows' numbers checked against the
// destination's columns (rangedInsertSource), and ok false if n's rows
// need no check or have one.
func rangedInsert(ctx *sql.Context, n *plan.InsertInto) (sql.Node, bool) {
	if _, done := n.Source.(*rangedInsertSource); done {
		return nil, false
	}
	var cols []int
	sch := n.Destination.Schema(ctx)
	for i, c := range sch {
		if types.IsNumber(c.Type) || types.IsJSON(c.Type) {
			cols = append(cols, i)
		}
	}
	if len(cols) == 0 {
		return nil, false
	}
	nn := *n
	nn.Source = &rangedInsertSource{Node: n.Source, sch: sch, cols: cols}
	return &nn, true
}

// rangedInsertSource is the rows an INSERT (or REPLACE, LOAD DATA,
// CREATE TABLE ... SELECT) writes, in the destination's column order,
// with each number past its column's range failing the statement or
// replaced by the nearest value in range, with warning 1264, before
// go-mysql-server converts it (and JSON text read with exact numbers:
// json.go). go-mysql-server failed with 1264 in every
// mode, even without strict mode, and under IGNORE stored 0 for a DECIMAL
// or a negative number into an unsigned column where MySQL stores the
// nearest value, with a note numbered 1105.
type rangedInsertSource struct {
	sql.Node
	sch  sql.Schema
	cols []int // the numeric and JSON columns
}

func (r *rangedInsertSource) WithChildren(_ *sql.Context, children ...sql.Node) (sql.Node, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(r, len(children), 1)
	}
	c := *r
	c.Node = children[0]
	return &c, nil
}

func (r *rangedInsertSource) Children() []sql.Node { return []sql.Node{r.Node} }

// rangedRows checks the rows of a rangedInsertSource.
type rangedRows struct {
	sql.RowIter
	src *rangedInsertSource
	n   int64 // rows read, for the messages' "at row N"
}

func (it *rangedRows) Next(ctx *sql.Context) (sql.Row, error) {
	row, err := it.RowIter.Next(ctx)
	if err != nil {
		return row, err
	}
	it.n++
	// An outer scope's values come first in a row that is longer.
	off := len(row) - len(it.src.sch)
	if off < 0 {
		return row, nil
	}
	copied := false
	for _, i := range it.src.cols {
		v := row[off+i]
		if v == nil {
			continue
		}
		col := it.src.sch[i]
		if types.IsJSON(col.Type) {
			if doc, ok := exactJSON(v); ok { // json.go
				if !copied {
					row, copied = row.Copy(), true
				}
				row[off+i] = doc
			}
			continue
		}
		cv, past := pastRange(ctx, col.Type, v)
		if !past {
			continue // go-mysql-server converts (and reports)
		}
		if err := outOfRange(ctx, col.Name, it.n); err != nil {
			return nil, err
		}
		if !copied {
			row, copied = row.Copy(), true
		}
		row[off+i] = cv
	}
	return row, nil
}
