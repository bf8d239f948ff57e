package sqlengine

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/lockstepdb/lockstep/internal/icuregex"
)

// MySQL's REGEXP_LIKE, REGEXP_INSTR, REGEXP_SUBSTR and REGEXP_REPLACE, and
// the REGEXP and RLIKE operators, on icuregex: ICU's engine, as in MySQL
// and go-mysql-server, but under regexp_time_limit, regexp_stack_limit and
// the query's context. go-mysql-server's own functions reach ICU through a
// binding that sets none of ICU's limits, so one SELECT of a backtracking
// pattern could hold a core for as long as its author liked.
//
// The functions replace go-mysql-server's by name (provider.Function).
// The operators are built by go-mysql-server's planner straight into its
// own function, so the parser turns a REGEXP b into regexp_like(a, b)
// before planning (rewriteRegexpOperators); every statement text is
// parsed by that parser, including view, trigger, procedure, default and
// CHECK definitions.
//
// Semantics are MySQL 8's (sql/item_regexp_func.cc): positions count
// characters from 1; a NULL subject, pattern, replacement, position or
// occurrence gives NULL; a NULL match type or return option is the
// default; case sensitivity comes from the arguments' collation unless
// the match type says otherwise.

// regexpKind is one of the four functions.
type regexpKind int

const (
	regexpLike regexpKind = iota
	regexpInstr
	regexpSubstr
	regexpReplace
)

var regexpKinds = map[string]regexpKind{
	"regexp_like":    regexpLike,
	"regexp_instr":   regexpInstr,
	"regexp_substr":  regexpSubstr,
	"regexp_replace": regexpReplace,
}

// regexpArgs is, per kind, how many arguments it takes at least and at
// most, and where its optional arguments are (-1: none).
var regexpArgs = [...]struct{ min, max, pos, occ, ret, match int }{
	regexpLike:    {2, 3, -1, -1, -1, 2},
	regexpInstr:   {2, 6, 2, 3, 4, 5},
	regexpSubstr:  {2, 5, 2, 3, -1, 4},
	regexpReplace: {3, 6, 3, 4, -1, 5},
}

func (k regexpKind) name() string {
	for n, kk := range regexpKinds {
		if kk == k {
			return n
		}
	}
	return "regexp"
}

// regexpFunction is the sql.Function for a name of regexpKinds.
func regexpFunction(name string) (sql.Function, bool) {
	k, ok := regexpKinds[name]
	if !ok {
		return nil, false
	}
	return sql.FunctionN{Name: name, Fn: func(_ *sql.Context, args ...sql.Expression) (sql.Expression, error) {
		a := regexpArgs[k]
		if len(args) < a.min || len(args) > a.max {
			return nil, mysql.NewSQLError(erWrongParamcountToNativeFct, "42000", "Incorrect parameter count in the call to native function '%s'", name)
		}
		return &regexpCall{kind: k, args: args}, nil
	}}, true
}

// regexpCall is one call of a regexp function. It keeps the last pattern
// it compiled: a constant pattern is compiled once per statement.
type regexpCall struct {
	kind regexpKind
	args []sql.Expression

	mu       sync.Mutex
	compiled *compiledRegexp

	// collFlags is the case sensitivity the arguments' collation gives,
	// worked out once (the arguments' types do not change).
	collOnce  sync.Once
	collFlags icuregex.Flags
}

type compiledRegexp struct {
	pattern string
	flags   icuregex.Flags
	re      *icuregex.Regexp
}

var (
	_ sql.FunctionExpression = (*regexpCall)(nil)
	_ sql.CollationCoercible = (*regexpCall)(nil)
	_ sql.Disposable         = (*regexpCall)(nil)
)

func (r *regexpCall) FunctionName() string { return r.kind.name() }

func (r *regexpCall) Description() string {
	switch r.kind {
	case regexpLike:
		return "returns whether string matches regular expression"
	case regexpInstr:
		return "returns the starting index of substring matching regular expression"
	case regexpSubstr:
		return "returns substring matching regular expression"
	}
	return "replaces substrings matching regular expression"
}

func (r *regexpCall) Type(ctx *sql.Context) sql.Type {
	switch r.kind {
	case regexpLike:
		return types.Boolean
	case regexpInstr:
		return types.Int32
	}
	return types.LongText
}

func (r *regexpCall) CollationCoercibility(ctx *sql.Context) (sql.CollationID, byte) {
	if r.kind == regexpLike || r.kind == regexpInstr {
		return sql.Collation_binary, 5
	}
	c1, k1 := sql.GetCoercibility(ctx, r.args[0])
	c2, k2 := sql.GetCoercibility(ctx, r.args[1])
	return sql.ResolveCoercibility(c1, k1, c2, k2)
}

func (r *regexpCall) IsNullable(*sql.Context) bool { return true }

func (r *regexpCall) Resolved() bool {
	for _, a := range r.args {
		if !a.Resolved() {
			return false
		}
	}
	return true
}

func (r *regexpCall) Children() []sql.Expression { return r.args }

func (r *regexpCall) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != len(r.args) {
		return nil, sql.ErrInvalidChildrenNumber.New(r, len(children), len(r.args))
	}
	return &regexpCall{kind: r.kind, args: children}, nil
}

func (r *regexpCall) String() string {
	s := make([]string, len(r.args))
	for i, a := range r.args {
		s[i] = a.String()
	}
	return fmt.Sprintf("%s(%s)", r.FunctionName(), strings.Join(s, ","))
}

// Dispose frees the compiled pattern at the end of the statement; a later
// evaluation compiles it again.
func (r *regexpCall) Dispose(*sql.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.compiled != nil {
		r.compiled.re.Close()
		r.compiled = nil
	}
}

// evalString evaluates an argument as text; ok is false for NULL.
func evalString(ctx *sql.Context, e sql.Expression, row sql.Row) (s string, ok bool, err error) {
	v, err := e.Eval(ctx, row)
	if err != nil || v == nil {
		return "", false, err
	}
	v, _, err = types.LongText.Convert(ctx, v)
	if err != nil || v == nil {
		return "", false, err
	}
	s, _, err = sql.Unwrap[string](ctx, v)
	return s, err == nil, err
}

// evalInt evaluates optional argument i as an integer: def when it is
// absent, ok false when it is NULL.
func (r *regexpCall) evalInt(ctx *sql.Context, i int, def int64, row sql.Row) (n int64, ok bool, err error) {
	if i < 0 || i >= len(r.args) {
		return def, true, nil
	}
	v, err := r.args[i].Eval(ctx, row)
	if err != nil || v == nil {
		return 0, false, err
	}
	v, _, err = types.Int64.Convert(ctx, v)
	if err != nil {
		return 0, false, err
	}
	return v.(int64), true, nil
}

func (r *regexpCall) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	a := regexpArgs[r.kind]
	name := r.FunctionName()
	text, ok, err := evalString(ctx, r.args[0], row)
	if err != nil || !ok {
		return nil, err
	}
	pattern, ok, err := evalString(ctx, r.args[1], row)
	if err != nil || !ok {
		return nil, err
	}
	var repl string
	if r.kind == regexpReplace {
		if repl, ok, err = evalString(ctx, r.args[2], row); err != nil || !ok {
			return nil, err
		}
	}
	pos, ok, err := r.evalInt(ctx, a.pos, 1, row)
	if err != nil || !ok {
		return nil, err
	}
	defOcc := int64(1)
	if r.kind == regexpReplace {
		defOcc = 0
	}
	occ, ok, err := r.evalInt(ctx, a.occ, defOcc, row)
	if err != nil || !ok {
		return nil, err
	}
	ret, ok, err := r.evalInt(ctx, a.ret, 0, row)
	if err != nil {
		return nil, err
	}
	if !ok {
		ret = 0
	}
	if ret != 0 && ret != 1 {
		return nil, mysql.NewSQLError(mysql.ERWrongArguments, "HY000", "Incorrect arguments to regexp_instr: return_option must be 1 or 0.")
	}
	flags, err := r.flags(ctx, row, a.match)
	if err != nil {
		return nil, err
	}
	if (r.kind == regexpSubstr || r.kind == regexpReplace) && pos < 1 {
		return nil, mysql.NewSQLError(erWrongParametersToNativeFct, "42000", "Incorrect parameters in the call to native function '%s'", name)
	}
	re, err := r.compile(ctx, pattern, flags)
	if err != nil {
		return nil, err
	}
	switch r.kind {
	case regexpReplace:
		out, err := re.Replace(ctx, text, repl, int(pos-1), int(occ), maxAllowedPacket())
		if err != nil {
			return nil, regexpError(err)
		}
		return out, nil
	case regexpSubstr:
		m, found, err := re.Find(ctx, text, int(pos-1), int(occ), true, false)
		if err != nil || !found {
			return nil, regexpError(err)
		}
		return m.Text, nil
	}
	m, found, err := re.Find(ctx, text, int(pos-1), int(occ), false, r.kind == regexpInstr)
	if err != nil {
		return nil, regexpError(err)
	}
	if r.kind == regexpLike {
		if found {
			return int8(1), nil
		}
		return int8(0), nil
	}
	switch {
	case !found:
		return int32(0), nil
	case ret == 1:
		return int32(m.End + 1), nil
	}
	return int32(m.Start + 1), nil
}

// flags is the match: case-insensitive when the arguments' collation is,
// then changed by the match type's letters in order.
func (r *regexpCall) flags(ctx *sql.Context, row sql.Row, match int) (icuregex.Flags, error) {
	r.collOnce.Do(func() {
		c1, k1 := sql.GetCoercibility(ctx, r.args[0])
		c2, k2 := sql.GetCoercibility(ctx, r.args[1])
		coll, _ := sql.ResolveCoercibility(c1, k1, c2, k2)
		if strings.HasSuffix(coll.String(), "_ci") {
			r.collFlags = icuregex.CaseInsensitive
		}
	})
	f := r.collFlags
	if match < 0 || match >= len(r.args) {
		return f, nil
	}
	mt, ok, err := evalString(ctx, r.args[match], row)
	if err != nil || !ok {
		return f, err
	}
	for _, c := range mt {
		switch c {
		case 'c':
			f &^= icuregex.CaseInsensitive
		case 'i':
			f |= icuregex.CaseInsensitive
		case 'm':
			f |= icuregex.Multiline
		case 'n':
			f |= icuregex.DotAll
		case 'u':
			f |= icuregex.UnixLines
		default:
			return 0, mysql.NewSQLError(mysql.ERWrongArguments, "HY000", "Incorrect arguments to %s", r.FunctionName())
		}
	}
	return f, nil
}

// compile returns pattern compiled with flags and the limits of the
// moment, reusing the last one compiled for the same pattern and flags
// (the limits are read when compiling: a statement keeps those it
// started with, as in MySQL; Dispose ends the reuse with the statement).
func (r *regexpCall) compile(ctx *sql.Context, pattern string, flags icuregex.Flags) (*icuregex.Regexp, error) {
	if pattern == "" {
		return nil, regexpError(&icuregex.Error{Code: icuregex.IllegalArgument})
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.compiled; c != nil && c.pattern == pattern && c.flags == flags {
		return c.re, nil
	}
	lim := icuregex.Limits{Time: globalInt32("regexp_time_limit", 32), Stack: globalInt32("regexp_stack_limit", 8000000)}
	re, err := icuregex.Compile(pattern, flags, lim)
	if err != nil {
		return nil, regexpError(err)
	}
	if r.compiled != nil {
		r.compiled.re.Close()
	}
	r.compiled = &compiledRegexp{pattern: pattern, flags: flags, re: re}
	return re, nil
}

// globalInt32 is the global value of an integer system variable.
func globalInt32(name string, def int32) int32 {
	_, v, _ := sql.SystemVariables.GetGlobal(name)
	n, ok := asInt64(v)
	if !ok {
		return def
	}
	return int32(min(max(n, 0), 1<<31-1))
}

// maxAllowedPacket is max_allowed_packet, the longest result
// REGEXP_REPLACE may build (as in MySQL; global, as for the other string
// functions, stringlimit.go).
func maxAllowedPacket() int64 {
	_, v, _ := sql.SystemVariables.GetGlobal("max_allowed_packet")
	if n, ok := asInt64(v); ok {
		return n
	}
	return 64 << 20
}

// MySQL's errors for the regular expression library's failures.
const (
	erWrongParamcountToNativeFct = 1582
	erWrongParametersToNativeFct = 1583
	erRegexpBufferOverflow       = 3684
)

var regexpErrors = map[icuregex.Code]struct {
	num uint16
	msg string
}{
	icuregex.BufferOverflow:          {erRegexpBufferOverflow, "The result string is larger than the result buffer."},
	icuregex.IllegalArgument:         {3685, "Illegal argument to a regular expression."},
	icuregex.IndexOutOfBounds:        {3686, "Index out of bounds in regular expression search."},
	icuregex.Internal:                {3687, "Internal error in regular expression library."},
	icuregex.Syntax:                  {3688, "Syntax error in regular expression on line %d, character %d."},
	icuregex.BadEscape:               {3689, "Unrecognized escape sequence in regular expression."},
	icuregex.Unimplemented:           {3690, "The regular expression contains a feature that is not implemented in this library version."},
	icuregex.MismatchedParen:         {3691, "Mismatched parenthesis in regular expression."},
	icuregex.BadInterval:             {3692, "Incorrect description of a {min,max} interval."},
	icuregex.MaxLessThanMin:          {3693, "The maximum is less than the minumum in a {min,max} interval."},
	icuregex.InvalidBackRef:          {3694, "Invalid back-reference in regular expression."},
	icuregex.LookBehindLimit:         {3695, "The look-behind assertion exceeds the limit in regular expression."},
	icuregex.MissingCloseBracket:     {3696, "The regular expression contains an unclosed bracket expression."},
	icuregex.InvalidRange:            {3697, "The regular expression contains an [x-y] character range where x comes after y."},
	icuregex.StackOverflow:           {3698, "Overflow in the regular expression backtrack stack."},
	icuregex.TimeOut:                 {3699, "Timeout exceeded in regular expression match."},
	icuregex.PatternTooBig:           {3700, "The regular expression pattern exceeds limits on size or complexity."},
	icuregex.InvalidCaptureGroupName: {3887, "A capture group has an invalid name."},
	icuregex.InvalidFlag:             {3900, "Invalid match mode flag in regular expression."},
	icuregex.NumberTooBig:            {4007, "A number in the regular expression is too big."},
	icuregex.Stopped:                 {mysql.ERQueryInterrupted, "Query execution was interrupted"},
}

// regexpError turns an icuregex error into MySQL's.
func regexpError(err error) error {
	e, ok := err.(*icuregex.Error)
	if !ok {
		return err
	}
	m, ok := regexpErrors[e.Code]
	if !ok {
		m = regexpErrors[icuregex.Internal]
		return mysql.NewSQLError(int(m.num), "HY000", "%s (%s)", m.msg, e.Error())
	}
	state := "HY000"
	if e.Code == icuregex.Stopped {
		state = "70100"
	}
	if e.Code == icuregex.Syntax {
		return mysql.NewSQLError(int(m.num), state, m.msg, e.Line, e.Offset)
	}
	return mysql.NewSQLError(int(m.num), state, "%s", m.msg)
}

// rewriteRegexpOperators turns every REGEXP, RLIKE and NOT REGEXP in st
// into a call of regexp_like, which provider.Function gives icuregex's
// version of. query is st's text: a statement that cannot contain the
// operators is not walked.
func rewriteRegexpOperators(st ast.SQLNode, query string) {
	if st == nil || !containsFold(query, "regexp") && !containsFold(query, "rlike") {
		return
	}
	rewriteExprs(st, func(e ast.Expr) ast.Expr {
		if c, ok := e.(*ast.ComparisonExpr); ok {
			return regexpOperatorCall(c)
		}
		return nil
	})
}

var exprType = reflect.TypeFor[ast.Expr]()

var regexpLikeCol = ast.NewColIdent("regexp_like")

// rewriteExprs replaces, bottom up, every expression of st that fn
// returns a replacement for (nil: none). It walks the AST's fields by
// reflection, so it reaches expressions in every kind of statement.
// funcCall is the call name(args...) as the parser would have read it.
func funcCall(name ast.ColIdent, args ...ast.Expr) *ast.FuncExpr {
	exprs := make(ast.SelectExprs, len(args))
	for i, a := range args {
		exprs[i] = &ast.AliasedExpr{Expr: a}
	}
	return &ast.FuncExpr{Name: name, Exprs: exprs}
}

func rewriteExprs(st ast.SQLNode, fn func(ast.Expr) ast.Expr) {
	rewriteExprsIn(reflect.ValueOf(st), map[uintptr]bool{}, fn)
}

func rewriteExprsIn(v reflect.Value, seen map[uintptr]bool, fn func(ast.Expr) ast.Expr) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return
		}
		seen[v.Pointer()] = true
		rewriteExprsIn(v.Elem(), seen, fn)
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		rewriteExprsIn(v.Elem(), seen, fn)
		if e, ok := v.Interface().(ast.Expr); ok && v.CanSet() && v.Type() == exprType {
			if r := fn(e); r != nil {
				v.Set(reflect.ValueOf(r))
			}
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Field(i); f.CanSet() {
				rewriteExprsIn(f, seen, fn)
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			rewriteExprsIn(v.Index(i), seen, fn)
		}
	}
}

// regexpOperatorCall is c as a call of regexp_like, or nil for any other
// comparison.
func regexpOperatorCall(c *ast.ComparisonExpr) ast.Expr {
	var not bool
	switch strings.ToLower(c.Operator) {
	case ast.RegexpStr:
	case ast.NotRegexpStr:
		not = true
	default:
		return nil
	}
	var e ast.Expr = funcCall(regexpLikeCol, c.Left, c.Right)
	if not {
		e = &ast.NotExpr{Expr: e}
	}
	return e
}
