package sqlengine

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/shopspring/decimal"
)

// DATE, DATETIME, TIMESTAMP and TIME values read as strings or numbers,
// as MySQL reads them.
//
// go-mysql-server holds every temporal value as a time.Time and forgets
// its type when a function converts it: a DATE became '2020-01-02
// 00:00:00' in CONCAT, CAST(... AS CHAR), LENGTH, LIKE and the other
// string functions, 20200102000000 in arithmetic, and the zero date
// '-0001-11-30 00:00:00' in both (the client saw them right only when the
// column was sent as it is, typed). MySQL reads a DATE as 'YYYY-MM-DD' or
// YYYYMMDD, a DATETIME or TIMESTAMP as 'YYYY-MM-DD hh:mm:ss[.fraction]'
// (its declared fractional digits) or YYYYMMDDhhmmss[.fraction], and the
// zero date as '0000-00-00' or 0. A TIME failed outright as text (1105
// "incompatible conversion") and was 0 in arithmetic; MySQL reads it as
// '-hh:mm:ss' or -hhmmss.
//
// Each node about to be executed (execExpressions) therefore gets a
// temporalAs in front of each temporal argument of a function that reads
// its arguments as text (stringReaders, a CAST to a character type, LIKE),
// and of each temporal operand of arithmetic (+, -, *, /, DIV, MOD) that
// adds no INTERVAL and of the bit operators (bitwise.go). The temporalAs
// gives the value as the column's type shows it: its text, or that text's
// digits as a number. go-mysql-server keeps six fractional digits for
// every TIME (TIME and TIME(6) columns are one type to it), so a TIME's
// text and number have a fraction only when the value has one, and
// arithmetic, typed by the TIME's integer form, rounds that fraction.
// Comparisons, date functions and every other reader keep the time.Time
// or TIME value, which they handle by its type.

// stringReaders are the functions that read every argument as text.
var stringReaders = map[string]bool{
	"concat": true, "concat_ws": true, "length": true, "char_length": true,
	"character_length": true, "octet_length": true, "bit_length": true,
	"substring": true, "substr": true, "mid": true, "left": true, "right": true,
	"replace": true, "lpad": true, "rpad": true, "trim": true, "ltrim": true,
	"rtrim": true, "locate": true, "instr": true, "position": true,
	"reverse": true, "upper": true, "ucase": true, "lower": true, "lcase": true,
	"hex": true, "md5": true, "sha": true, "sha1": true, "sha2": true,
	"crc32": true, "to_base64": true, "insert": true, "repeat": true,
	"strcmp": true, "substring_index": true, "group_concat": true,
	"ascii": true, "ord": true, "quote": true, "soundex": true, "elt": true,
	"field": true, "find_in_set": true, "make_set": true,
}

// wrapTemporalArgs puts a temporalAs in front of e's temporal arguments if
// e reads them as text or numbers, or returns them as text.
func wrapTemporalArgs(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
	text, cond := returnedAsText(ctx, e), readsAsCondition(e)
	if text != noArgs || cond != noArgs {
		return replaceChildren(ctx, e, func(i int, c sql.Expression) sql.Expression {
			t := c.Type(ctx)
			switch {
			case cond.has(e, i) && types.IsTimespan(t):
				return &temporalAs{valueWrapper: wrap(c), typ: t, number: true}
			case text.has(e, i) && (types.IsTime(t) || types.IsTimespan(t)):
				return &temporalAs{valueWrapper: wrap(c), typ: t}
			}
			return nil
		})
	}
	asNumber, ok := readsTemporalAs(ctx, e)
	if !ok {
		return e, transform.SameTree, nil
	}
	return replaceChildren(ctx, e, func(_ int, c sql.Expression) sql.Expression {
		t := c.Type(ctx)
		if !types.IsTime(t) && !types.IsTimespan(t) {
			return nil
		}
		return &temporalAs{valueWrapper: wrap(c), typ: t, number: asNumber}
	})
}

// args names a set of an expression's children by position, without
// allocating: the sets below are asked about for expressions of every
// statement go-mysql-server plans.
type args int

const (
	noArgs     args = iota
	allArgs         // every child
	ifCond          // IF's condition
	ifValues        // IF's two values
	caseConds       // the conditions of a CASE without an operand
	caseValues      // the values of a CASE's branches and its ELSE
)

// has reports whether e's child i is in the set (e is the expression the
// set was chosen for).
func (a args) has(e sql.Expression, i int) bool {
	switch a {
	case allArgs:
		return true
	case ifCond:
		return i == 0
	case ifValues:
		return i == 1 || i == 2
	case caseConds:
		return i%2 == 0 && i < 2*len(e.(*expression.Case).Branches)
	case caseValues:
		c := e.(*expression.Case)
		if c.Expr != nil {
			i-- // the operand compared with each branch's
		}
		n := 2 * len(c.Branches)
		return (i >= 0 && i%2 == 1 && i < n) || (c.Else != nil && i == n)
	}
	return false
}

// returnedAsText gives e's children whose value e returns as it is, when
// e is COALESCE, IFNULL, IF or CASE typed as a string (its arguments mix
// temporal values and strings): a temporal value there must come out as
// its text. go-mysql-server converted a TIME to an empty string there
// (IFNULL, IF, CASE) or failed (COALESCE, 1105 "incompatible
// conversion"), and a DATE to its DATETIME text.
func returnedAsText(ctx *sql.Context, e sql.Expression) args {
	a := noArgs
	switch x := e.(type) {
	case *expression.Case:
		a = caseValues
	case sql.FunctionExpression:
		switch strings.ToLower(x.FunctionName()) {
		case "coalesce", "ifnull":
			a = allArgs
		case "if":
			a = ifValues
		}
	}
	if a == noArgs || !types.IsText(e.Type(ctx)) {
		return noArgs
	}
	return a
}

// readsAsCondition gives e's children that e reads as a truth value (IF's
// condition, CASE's conditions, NOT, AND, OR, XOR). A TIME there is true
// when it is not 00:00:00, as MySQL reads it by its number;
// go-mysql-server failed on it (1105 "unable to cast"). A condition that
// is a TIME alone (WHERE t) is execExpressions'.
func readsAsCondition(e sql.Expression) args {
	switch x := e.(type) {
	case *expression.Case:
		if x.Expr == nil { // with an operand: comparisons, not conditions
			return caseConds
		}
	case *expression.Not, *expression.And, *expression.Or, *expression.Xor:
		return allArgs
	case sql.FunctionExpression:
		if strings.EqualFold(x.FunctionName(), "if") {
			return ifCond
		}
	}
	return noArgs
}

// readsTemporalAs says whether e reads temporal arguments as text or (as
// number) as numbers, and ok false if it reads them as they are.
func readsTemporalAs(ctx *sql.Context, e sql.Expression) (asNumber, ok bool) {
	switch x := e.(type) {
	case *temporalAs:
		return false, false
	case *expression.Convert:
		return false, types.IsText(x.Type(ctx))
	case *expression.Like:
		return false, true
	case *bitwiseOp:
		return true, true
	case *expression.Arithmetic, *expression.Div, *expression.IntDiv, *expression.Mod:
		for _, c := range e.Children() {
			if _, isInterval := c.(*expression.Interval); isInterval {
				return false, false
			}
		}
		return true, true
	case sql.FunctionExpression:
		return false, stringReaders[strings.ToLower(x.FunctionName())]
	}
	return false, false
}

// temporalTextType is temporalAs's type as text: room for a DATETIME(6).
var temporalTextType = types.MustCreateStringWithDefaults(sqltypes.VarChar, 26)

// temporalAs is a DATE, DATETIME, TIMESTAMP or TIME value as text or
// number.
type temporalAs struct {
	valueWrapper
	typ    sql.Type // a sql.DatetimeType, or TIME
	number bool
}

// precision is the fractional digits the value's type shows: a TIME's
// are not known (go-mysql-server keeps six for every TIME), and its
// number is an integer unless the value has a fraction.
func (t *temporalAs) precision() int {
	if dt, ok := t.typ.(sql.DatetimeType); ok {
		return dt.Precision()
	}
	return 0
}

var _ sql.Expression = (*temporalAs)(nil)

func (t *temporalAs) Type(*sql.Context) sql.Type {
	if !t.number {
		return temporalTextType
	}
	if p := t.precision(); p > 0 {
		return types.MustCreateDecimalType(14+uint8(p), uint8(p))
	}
	return types.Int64
}

func (t *temporalAs) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(t, len(children), 1)
	}
	c := *t
	c.Child = children[0]
	return &c, nil
}

func (t *temporalAs) Eval(ctx *sql.Context, r sql.Row) (any, error) {
	v, err := t.Child.Eval(ctx, r)
	if err != nil || v == nil {
		return nil, err
	}
	switch x := v.(type) {
	case time.Time, types.Timespan:
	case string:
		// DATE(x) is typed DATE but gives its value as text.
		tv, _, err := t.typ.Convert(ctx, x)
		if err != nil {
			return v, nil // left to the reader, which warns as it would
		}
		v = tv
	default:
		return v, nil // not a value of the type: left to the reader
	}
	sv, err := t.typ.SQL(ctx, nil, v)
	if err != nil {
		return nil, err
	}
	text := sv.ToString()
	if types.IsTimespan(t.typ) {
		// Six fractional digits for every TIME: shown, as the column's
		// values are, only when the value has a fraction.
		text = strings.TrimSuffix(text, ".000000")
	}
	if !t.number {
		return text, nil
	}
	digits := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return -1
	}, text)
	if !types.IsTimespan(t.typ) {
		digits = strings.ReplaceAll(digits, "-", "") // a date's separators
	}
	if t.precision() > 0 || strings.Contains(digits, ".") {
		return decimal.NewFromString(digits)
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("lockstep: temporal value %q as a number: %w", text, err)
	}
	return n, nil
}
