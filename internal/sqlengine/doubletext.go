package sqlengine

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
)

// DOUBLE and FLOAT values as text, as MySQL writes them.
//
// MySQL writes an approximate value (my_gcvt) with the fewest significant
// digits that read back as the same double (for a FLOAT, at most six,
// FLT_DIG), in positional form unless the point would fall more than 15
// digits to the right of the first digit with no digit after it, or more
// than 14 zeros to the left of it: 8385959, 1e15, 123456789012345,
// 1.2345678901234567e15, 0.000000000000001, 1e-16, 1.7976931348623157e308.
// go-mysql-server wrote Go's shortest form in results (8.385959e+06,
// 1e+15) and the positional form in strings (CONCAT(1e20) was
// '100000000000000000000'), and every digit of a FLOAT (3.4028235e+38,
// where MySQL writes 3.40282e38).

// maxDecptForF is MySQL's MAX_DECPT_FOR_F_FORMAT (DBL_DIG): the furthest
// the decimal point goes from the first digit in positional form.
const maxDecptForF = 15

// AppendDouble appends f as MySQL writes a DOUBLE, or a FLOAT when single.
// Zero, infinities and NaN (which MySQL never stores) are written as Go
// writes them.
func AppendDouble(dst []byte, f float64, single bool) []byte {
	if f == 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return strconv.AppendFloat(dst, f, 'g', -1, 64)
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	if single {
		e = strconv.AppendFloat(buf[:0], f, 'e', 5, 64) // six digits, zeros dropped below
	}
	// e is [-]d[.ddd]e±xx: split it into sign, digits and exponent.
	neg := e[0] == '-'
	if neg {
		e = e[1:]
	}
	ePos := 0
	for ePos < len(e) && e[ePos] != 'e' {
		ePos++
	}
	exp, _ := strconv.Atoi(string(e[ePos+1:]))
	var digitBuf [24]byte
	digits := digitBuf[:0]
	for _, c := range e[:ePos] {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	for len(digits) > 1 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1] // the rounded FLOAT's
	}
	n, decpt := len(digits), exp+1 // the value is 0.digits × 10^decpt
	if neg {
		dst = append(dst, '-')
	}
	if decpt >= -maxDecptForF+1 && (decpt <= maxDecptForF || n > decpt) {
		switch {
		case decpt <= 0:
			dst = append(dst, '0', '.')
			for i := decpt; i < 0; i++ {
				dst = append(dst, '0')
			}
			return append(dst, digits...)
		case decpt < n:
			dst = append(dst, digits[:decpt]...)
			dst = append(dst, '.')
			return append(dst, digits[decpt:]...)
		default:
			dst = append(dst, digits...)
			for i := n; i < decpt; i++ {
				dst = append(dst, '0')
			}
			return dst
		}
	}
	dst = append(dst, digits[0])
	if n > 1 {
		dst = append(dst, '.')
		dst = append(dst, digits[1:]...)
	}
	dst = append(dst, 'e')
	return strconv.AppendInt(dst, int64(decpt-1), 10)
}

// numericArgs are, for the functions temporaltext.go lists as reading
// text, the arguments they read as numbers (a position, a length, a
// count), and nil for those that read a number argument as a number
// altogether: HEX(1.5e0) is the hexadecimal of 2, and FIELD and ELT of
// numbers compare numbers.
var numericArgs = map[string][]int{
	"substring": {1, 2}, "substr": {1, 2}, "mid": {1, 2}, "left": {1}, "right": {1},
	"lpad": {1}, "rpad": {1}, "repeat": {1}, "insert": {1, 2}, "substring_index": {2},
	"locate": {2}, "sha2": {1}, "make_set": {0}, "elt": {0},
	"hex": nil, "field": nil,
}

// wrapDoubleArgs puts a doubleAsText in front of e's DOUBLE and FLOAT
// arguments that e reads as text (CONCAT, CAST(... AS CHAR), LIKE and
// the functions temporaltext.go lists), so that CONCAT(1e20) is '1e20',
// as in MySQL.
func wrapDoubleArgs(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
	if asNumber, ok := readsTemporalAs(ctx, e); !ok || asNumber {
		return e, transform.SameTree, nil
	}
	var skip []int
	if f, ok := e.(sql.FunctionExpression); ok {
		var listed bool
		if skip, listed = numericArgs[strings.ToLower(f.FunctionName())]; listed && skip == nil {
			return e, transform.SameTree, nil
		}
	}
	return replaceChildren(ctx, e, func(i int, c sql.Expression) sql.Expression {
		if _, done := c.(*doubleAsText); done || slices.Contains(skip, i) || !types.IsFloat(c.Type(ctx)) {
			return nil
		}
		return &doubleAsText{valueWrapper: wrap(c)}
	})
}

// doubleAsText is a DOUBLE or FLOAT value as MySQL writes it as text.
type doubleAsText struct {
	valueWrapper
}

var _ sql.Expression = (*doubleAsText)(nil)

// doubleTextType is doubleAsText's type: room for -1.2345678901234567e-308.
var doubleTextType = types.MustCreateStringWithDefaults(sqltypes.VarChar, 24)

func (d *doubleAsText) Type(*sql.Context) sql.Type { return doubleTextType }

func (d *doubleAsText) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(d, len(children), 1)
	}
	return &doubleAsText{valueWrapper: wrap(children[0])}, nil
}

func (d *doubleAsText) Eval(ctx *sql.Context, r sql.Row) (any, error) {
	v, err := d.Child.Eval(ctx, r)
	if err != nil || v == nil {
		return v, err
	}
	switch x := v.(type) {
	case float64:
		return string(AppendDouble(nil, x, false)), nil
	case float32:
		return string(AppendDouble(nil, float64(x), true)), nil
	}
	return v, nil // not a double: left to the reader
}
