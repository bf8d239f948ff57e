package sqlengine

import (
	"math"
	"strconv"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// ROUND of a DOUBLE (or FLOAT, or a string, which MySQL reads as a
// DOUBLE) as MySQL computes it: x scaled by 10^d, rounded to the nearest
// integer with ties to even (the C library's rint), scaled back.
// go-mysql-server converted the double to a decimal and rounded ties away
// from zero: ROUND(2.5e0) was 3 where MySQL gives 2, ROUND(-0.5e0) -1
// where MySQL gives -0. Exact arguments (integers, DECIMAL) round half
// away from zero in both and stay go-mysql-server's.

// roundFunction is the sql.Function for ROUND.
func roundFunction(name string) (sql.Function, bool) {
	if name != "round" {
		return nil, false
	}
	return sql.FunctionN{Name: name, Fn: newDoubleRound}, true
}

func newDoubleRound(ctx *sql.Context, args ...sql.Expression) (sql.Expression, error) {
	e, err := function.NewRound(ctx, args...)
	if err != nil {
		return nil, err
	}
	return doubleRound{e.(*function.Round)}, nil
}

// doubleRound is go-mysql-server's ROUND with MySQL's rounding of
// approximate values.
type doubleRound struct{ *function.Round }

func (r doubleRound) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	return newDoubleRound(ctx, children...)
}

func (r doubleRound) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	t := r.Num.Type(ctx)
	if !types.IsFloat(t) && !types.IsTextBlob(t) {
		return r.Round.Eval(ctx, row)
	}
	v, err := r.Num.Eval(ctx, row)
	if err != nil || v == nil {
		return nil, err
	}
	f, _, err := types.Float64.Convert(ctx, v)
	if err != nil {
		return r.Round.Eval(ctx, row) // go-mysql-server's warning and value
	}
	dec := int64(0)
	if r.Dec != nil {
		d, err := r.Dec.Eval(ctx, row)
		if err != nil || d == nil {
			return nil, err
		}
		n, _, err := types.Int64.Convert(ctx, d)
		if err != nil {
			return r.Round.Eval(ctx, row)
		}
		dec = n.(int64)
	}
	res := roundDouble(f.(float64), dec)
	if res == 0 {
		res = 0 // not -0: go-mysql-server's decimal rounding gave 0, as MariaDB shows
	}
	return res, nil
}

// powersOf10 are 1e0 to 1e308 as the compiler reads the literals (MySQL's
// table), each the double nearest the power.
var powersOf10 = func() []float64 {
	p := make([]float64, 309)
	for i := range p {
		p[i], _ = strconv.ParseFloat("1e"+strconv.Itoa(i), 64)
	}
	return p
}()

// roundDouble is MySQL's my_double_round without truncation.
func roundDouble(v float64, dec int64) float64 {
	abs := dec
	if abs < 0 {
		abs = -abs
	}
	scale := math.Inf(1)
	if abs < int64(len(powersOf10)) {
		scale = powersOf10[abs]
	}
	switch {
	case dec < 0 && math.IsInf(scale, 0):
		return 0
	case dec < 0:
		return math.RoundToEven(v/scale) * scale
	case math.IsInf(v*scale, 0):
		return v
	}
	return math.RoundToEven(v*scale) / scale
}
