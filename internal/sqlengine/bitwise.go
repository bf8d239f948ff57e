package sqlengine

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/shopspring/decimal"
)

// The bit operators &, |, ^, <<, >> and ~ as MySQL 8.0 evaluates them.
//
// Numeric evaluation (the usual one) converts each operand to an
// unsigned 64-bit integer the way MySQL's val_uint does, and gives a
// BIGINT UNSIGNED:
//
//   - an integer keeps its bits: a negative one is its two's complement
//     (-1 | 0 is 18446744073709551615);
//   - a DECIMAL is rounded half away from zero, a DOUBLE to the nearest
//     integer with ties to even (rint), both first clamped to BIGINT's
//     signed range;
//   - a string is read as MySQL reads an integer from text: leading
//     space, a sign and digits, the rest ignored with warning 1292
//     ('2.5' | 0 is 2); past the range it is the nearest end;
//   - a hexadecimal literal is the big-endian number its last 8 bytes
//     make; a DATE, DATETIME or TIME is its digits (20200102, 100000);
//   - a shift by 64 or more (a negative count is a huge one) gives 0.
//
// Binary-string evaluation happens when the operands are binary strings
// (BINARY, VARBINARY, BLOB, CAST(... AS BINARY), UNHEX, INET6_ATON) and
// at least one of them is not a hexadecimal or bit literal; for << >> and
// ~ only the first operand counts. It gives a binary string of the
// operands' length, byte by byte; & | ^ of strings of different lengths
// is error 3513. This is what makes INET6_ATON(ip) & INET6_ATON(mask)
// work.
//
// go-mysql-server computed the operators in signed 64 bits or in
// float64 (5 ^ 18446744073709551615 was 9223372036854775813, a BIGINT
// UNSIGNED column ^ 1 lost its low bits past 2^53), read DATE '2020-01-02'
// | 0 as 2020 and binary strings as numbers, and refused ~. The parser
// therefore turns every operator into a call of bitwiseOp
// (rewriteBitOperators), marking the operands that are hexadecimal
// literals, which go-mysql-server's expressions no longer tell apart from
// other binary strings. The call prints as the operator, so stored
// defaults, generated columns and CHECK constraints read back the same.

// bitOperators are the binary operators rewritten; "~" is the unary one.
var bitOperators = map[string]bool{
	ast.BitAndStr: true, ast.BitOrStr: true, ast.BitXorStr: true,
	ast.ShiftLeftStr: true, ast.ShiftRightStr: true,
}

// bitFunctionPrefix starts the internal names of the operators' calls:
// "bitwise ^ x-" is ^ whose first operand is a hexadecimal literal. A
// name with a space cannot be written as a function call unquoted.
const bitFunctionPrefix = "bitwise "

// rewriteBitOperators turns st's bit operators into bitwiseOp calls.
func rewriteBitOperators(st ast.SQLNode, query string) {
	// Comparisons (< and >) are in most statements: only the shifts'
	// doubled signs send the statement through the walk of its tree.
	if st == nil || !strings.ContainsAny(query, "&|^~") && !strings.Contains(query, "<<") && !strings.Contains(query, ">>") {
		return
	}
	rewriteExprs(st, func(e ast.Expr) ast.Expr {
		switch x := e.(type) {
		case *ast.BinaryExpr:
			if bitOperators[x.Operator] {
				return bitCall(x.Operator, x.Left, x.Right)
			}
		case *ast.UnaryExpr:
			if x.Operator == ast.TildaStr {
				return bitCall(x.Operator, x.Expr)
			}
		}
		return nil
	})
}

// bitCall is the call for operator op on operands.
func bitCall(op string, operands ...ast.Expr) *ast.FuncExpr {
	marks := make([]byte, len(operands))
	for i, o := range operands {
		marks[i] = '-'
		if isHexLiteral(o) {
			marks[i] = 'x'
		}
	}
	return funcCall(ast.NewColIdent(bitFunctionPrefix+op+" "+string(marks)), operands...)
}

// isHexLiteral says whether e is a hexadecimal literal (X'0F' or 0x0F),
// which MySQL evaluates as a number in a bit operation of two literals.
// Bit literals (b'101') are numbers in go-mysql-server already.
func isHexLiteral(e ast.Expr) bool {
	for {
		p, ok := e.(*ast.ParenExpr)
		if !ok {
			break
		}
		e = p.Expr
	}
	v, ok := e.(*ast.SQLVal)
	return ok && (v.Type == ast.HexVal || v.Type == ast.HexNum)
}

// bitwiseFunction is the sql.Function for a rewritten operator's name.
func bitwiseFunction(name string) (sql.Function, bool) {
	rest, ok := strings.CutPrefix(name, bitFunctionPrefix)
	if !ok {
		return nil, false
	}
	op, marks, ok := strings.Cut(rest, " ")
	if !ok || !(bitOperators[op] || op == ast.TildaStr) {
		return nil, false
	}
	want := 2
	if op == ast.TildaStr {
		want = 1
	}
	if len(marks) != want {
		return nil, false
	}
	return sql.FunctionN{Name: name, Fn: func(_ *sql.Context, args ...sql.Expression) (sql.Expression, error) {
		if len(args) != want {
			return nil, sql.ErrInvalidArgumentNumber.New(op, want, len(args))
		}
		hex := make([]bool, want)
		for i := range hex {
			hex[i] = marks[i] == 'x'
		}
		return &bitwiseOp{op: op, args: args, hex: hex}, nil
	}}, true
}

// maxVarbinary is the longest VARBINARY.
const maxVarbinary = 65535

// erInvalidBitwiseOperandsSize is ER_INVALID_BITWISE_OPERANDS_SIZE.
const erInvalidBitwiseOperandsSize = 3513

// bitwiseOp is one bit operator applied to its operands.
type bitwiseOp struct {
	op   string
	args []sql.Expression
	hex  []bool // args[i] is a hexadecimal literal
}

var _ sql.FunctionExpression = (*bitwiseOp)(nil)

func (b *bitwiseOp) FunctionName() string       { return b.op }
func (b *bitwiseOp) Description() string        { return "bit operator " + b.op }
func (b *bitwiseOp) Children() []sql.Expression { return b.args }

func (b *bitwiseOp) Resolved() bool {
	for _, a := range b.args {
		if !a.Resolved() {
			return false
		}
	}
	return true
}

func (b *bitwiseOp) IsNullable(ctx *sql.Context) bool {
	for _, a := range b.args {
		if a.IsNullable(ctx) {
			return true
		}
	}
	return false
}

func (b *bitwiseOp) String() string {
	if len(b.args) == 1 {
		return fmt.Sprintf("~(%s)", b.args[0])
	}
	return fmt.Sprintf("(%s %s %s)", b.args[0], b.op, b.args[1])
}

func (b *bitwiseOp) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != len(b.args) {
		return nil, sql.ErrInvalidChildrenNumber.New(b, len(children), len(b.args))
	}
	c := *b
	c.args = children
	return &c, nil
}

func (b *bitwiseOp) CollationCoercibility(*sql.Context) (sql.CollationID, byte) {
	return sql.Collation_binary, 5
}

// stringOperands are the operands that decide between numeric and
// binary-string evaluation: both for & | ^, the first for << >> and ~.
func (b *bitwiseOp) stringOperands() []sql.Expression {
	switch b.op {
	case ast.BitAndStr, ast.BitOrStr, ast.BitXorStr:
		return b.args
	}
	return b.args[:1]
}

// binaryOperands says whether b evaluates as binary strings (see the
// file comment).
func (b *bitwiseOp) binaryOperands(ctx *sql.Context) bool {
	notLiteral := false
	for i, a := range b.stringOperands() {
		if !types.IsBinaryType(a.Type(ctx)) {
			return false
		}
		notLiteral = notLiteral || !b.hex[i]
	}
	return notLiteral
}

func (b *bitwiseOp) Type(ctx *sql.Context) sql.Type {
	if !b.binaryOperands(ctx) {
		return types.Uint64
	}
	var n int64
	for _, a := range b.stringOperands() {
		if st, ok := a.Type(ctx).(sql.StringType); ok && st.MaxByteLength() > n {
			n = st.MaxByteLength()
		}
	}
	if n == 0 || n > maxVarbinary {
		return types.LongBlob
	}
	return types.MustCreateBinary(sqltypes.VarBinary, n)
}

func (b *bitwiseOp) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	vals := make([]any, len(b.args))
	for i, a := range b.args {
		v, err := a.Eval(ctx, row)
		if err != nil || v == nil {
			return nil, err
		}
		vals[i] = v
	}
	if b.binaryOperands(ctx) {
		return b.evalBinary(ctx, vals)
	}
	ops := make([]uint64, len(vals))
	for i, v := range vals {
		n, err := bitOperand(ctx, v, b.hex[i])
		if err != nil {
			return nil, err
		}
		ops[i] = n
	}
	switch b.op {
	case ast.TildaStr:
		return ^ops[0], nil
	case ast.BitAndStr:
		return ops[0] & ops[1], nil
	case ast.BitOrStr:
		return ops[0] | ops[1], nil
	case ast.BitXorStr:
		return ops[0] ^ ops[1], nil
	case ast.ShiftLeftStr:
		if ops[1] >= 64 {
			return uint64(0), nil
		}
		return ops[0] << ops[1], nil
	default: // >>
		if ops[1] >= 64 {
			return uint64(0), nil
		}
		return ops[0] >> ops[1], nil
	}
}

// evalBinary is b over binary strings.
func (b *bitwiseOp) evalBinary(ctx *sql.Context, vals []any) (any, error) {
	s, err := binaryBytes(vals[0])
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(s))
	switch b.op {
	case ast.TildaStr:
		for i, c := range s {
			out[i] = ^c
		}
	case ast.ShiftLeftStr, ast.ShiftRightStr:
		n, err := bitOperand(ctx, vals[1], b.hex[1])
		if err != nil {
			return nil, err
		}
		shiftBytes(out, s, min(n, uint64(len(s))*8), b.op == ast.ShiftLeftStr)
	default:
		t, err := binaryBytes(vals[1])
		if err != nil {
			return nil, err
		}
		if len(t) != len(s) {
			return nil, mysql.NewSQLError(erInvalidBitwiseOperandsSize, "HY000", "Binary operands of bitwise operators must be of equal length")
		}
		for i := range s {
			switch b.op {
			case ast.BitAndStr:
				out[i] = s[i] & t[i]
			case ast.BitOrStr:
				out[i] = s[i] | t[i]
			default:
				out[i] = s[i] ^ t[i]
			}
		}
	}
	return out, nil
}

func binaryBytes(v any) ([]byte, error) {
	switch x := v.(type) {
	case []byte:
		return x, nil
	case string:
		return []byte(x), nil
	}
	return nil, fmt.Errorf("lockstep: binary string operand of type %T", v)
}

// shiftBytes writes into out the bits of s, a big-endian bit string,
// shifted by n < 8*len(s)+1 bits, zeros shifted in.
func shiftBytes(out, s []byte, n uint64, left bool) {
	whole, part := int(n/8), n%8
	for i := range out {
		var hi, lo byte // the source bytes that land on out[i]
		if left {
			if j := i + whole; j < len(s) {
				hi = s[j]
			}
			if j := i + whole + 1; j < len(s) {
				lo = s[j]
			}
			out[i] = hi<<part | byte(uint16(lo)>>(8-part))
		} else {
			if j := i - whole; j >= 0 {
				lo = s[j]
			}
			if j := i - whole - 1; j >= 0 {
				hi = s[j]
			}
			out[i] = lo>>part | byte(uint16(hi)<<(8-part))
		}
	}
}

// bitOperand is v as the unsigned 64-bit integer MySQL's val_uint gives
// (see the file comment); hex says v is a hexadecimal literal's bytes.
func bitOperand(ctx *sql.Context, v any, hex bool) (uint64, error) {
	switch x := v.(type) {
	case int8:
		return uint64(int64(x)), nil
	case int16:
		return uint64(int64(x)), nil
	case int32:
		return uint64(int64(x)), nil
	case int64:
		return uint64(x), nil
	case int:
		return uint64(int64(x)), nil
	case uint8:
		return uint64(x), nil
	case uint16:
		return uint64(x), nil
	case uint32:
		return uint64(x), nil
	case uint64:
		return x, nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case float32:
		return doubleBits(float64(x)), nil
	case float64:
		return doubleBits(x), nil
	case decimal.Decimal:
		return decimalBits(ctx, x), nil
	case types.Timespan:
		return timeBits(x), nil
	case time.Time:
		return uint64(datetimeDigits(x)), nil
	case []byte:
		if hex {
			return hexBits(x), nil
		}
		return textBits(ctx, string(x)), nil
	case string:
		return textBits(ctx, x), nil
	}
	n, _, err := types.Int64.Convert(ctx, v)
	if err != nil {
		return 0, err
	}
	return uint64(n.(int64)), nil
}

// doubleBits is MySQL's conversion of a DOUBLE to BIGINT: clamped, then
// rounded with ties to even.
func doubleBits(f float64) uint64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f <= math.MinInt64:
		return 1 << 63
	case f >= math.MaxInt64:
		return math.MaxInt64
	}
	return uint64(int64(math.RoundToEven(f)))
}

var (
	minBigint = decimal.NewFromInt(math.MinInt64)
	maxBigint = decimal.NewFromInt(math.MaxInt64)
)

// decimalBits is MySQL's conversion of a DECIMAL to BIGINT: rounded half
// away from zero, clamped with warning 1292.
func decimalBits(ctx *sql.Context, d decimal.Decimal) uint64 {
	r := d.Round(0)
	switch {
	case r.LessThan(minBigint):
		ctx.Warn(mysql.ERTruncatedWrongValue, "Truncated incorrect DECIMAL value: '%s'", d.String())
		return 1 << 63
	case r.GreaterThan(maxBigint):
		ctx.Warn(mysql.ERTruncatedWrongValue, "Truncated incorrect DECIMAL value: '%s'", d.String())
		return math.MaxInt64
	}
	return uint64(r.IntPart())
}

// hexBits is the number a hexadecimal literal's last 8 bytes make.
func hexBits(b []byte) uint64 {
	if len(b) > 8 {
		b = b[len(b)-8:]
	}
	var buf [8]byte
	copy(buf[8-len(b):], b)
	return binary.BigEndian.Uint64(buf[:])
}

// timeBits is a TIME as the number hhmmss, seconds rounded half away
// from zero.
func timeBits(t types.Timespan) uint64 {
	us := int64(t)
	neg := us < 0
	if neg {
		us = -us
	}
	s := (us + 500000) / 1000000
	n := s/3600*10000 + s/60%60*100 + s%60
	if neg {
		n = -n
	}
	return uint64(n)
}

// datetimeDigits is a DATETIME value as YYYYMMDDhhmmss, seconds rounded
// (a DATE or DATETIME operand is normally given as its digits already:
// temporalAs).
func datetimeDigits(t time.Time) int64 {
	t = t.Round(time.Second)
	y, mo, d := t.Date()
	return ((int64(y)*100+int64(mo))*100+int64(d))*1000000 + int64(t.Hour()*10000+t.Minute()*100+t.Second())
}

// textBits is text read as MySQL reads an integer from a string
// (my_strtoll10): leading space, an optional sign and digits; anything
// after them is ignored with warning 1292, as is text with no digits
// (0). A value past the range is its nearest end.
func textBits(ctx *sql.Context, s string) uint64 {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		neg = s[i] == '-'
		i++
	}
	start := i
	var n uint64
	overflow := false
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		d := uint64(s[i] - '0')
		if n > (math.MaxUint64-d)/10 {
			overflow = true
		} else {
			n = n*10 + d
		}
	}
	rest := strings.TrimRight(s[i:], " ")
	if i == start || rest != "" || overflow {
		ctx.Warn(mysql.ERTruncatedWrongValue, "Truncated incorrect INTEGER value: '%s'", s)
	}
	switch {
	case neg && (overflow || n > 1<<63):
		return 1 << 63
	case neg:
		return -n
	case overflow:
		return math.MaxUint64
	}
	return n
}
