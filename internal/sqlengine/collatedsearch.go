package sqlengine

import (
	"strings"
	"unicode/utf8"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// LOCATE, INSTR and POSITION search as MySQL does: by the collation of the
// comparison, counting characters. go-mysql-server lower-cased both
// strings and counted bytes, so INSTR('ABC', 'b') was 0 (its INSTR did
// not even lower-case), LOCATE('b', 'éb') 3, and a search in a
// case-sensitive or binary string ignored case. LEAST and GREATEST of
// strings compare by collation too (go-mysql-server compared bytes:
// LEAST('a', 'B') was 'B').

// collatedSearchFunction is the sql.Function for LOCATE, INSTR (its
// arguments the other way round) and POSITION, and for LEAST and
// GREATEST.
func collatedSearchFunction(name string) (sql.Function, bool) {
	switch name {
	case "locate", "position":
		return sql.FunctionN{Name: name, Fn: func(_ *sql.Context, args ...sql.Expression) (sql.Expression, error) {
			if len(args) < 2 || len(args) > 3 {
				return nil, sql.ErrInvalidArgumentNumber.New(strings.ToUpper(name), "2 or 3", len(args))
			}
			return &locate{name: name, args: args}, nil
		}}, true
	case "instr":
		return sql.Function2{Name: name, Fn: func(_ *sql.Context, str, sub sql.Expression) sql.Expression {
			return &locate{name: name, args: []sql.Expression{sub, str}, instr: true}
		}}, true
	case "least", "greatest":
		return sql.FunctionN{Name: name, Fn: func(ctx *sql.Context, args ...sql.Expression) (sql.Expression, error) {
			var inner sql.Expression
			var err error
			if name == "least" {
				inner, err = function.NewLeast(ctx, args...)
			} else {
				inner, err = function.NewGreatest(ctx, args...)
			}
			if err != nil {
				return nil, err
			}
			return &collatedExtreme{Expression: inner, name: name, args: args, least: name == "least"}, nil
		}}, true
	}
	return nil, false
}

// argsCollation is the collation string arguments are compared by:
// binary if any is a binary string, else MySQL's rules of coercibility
// over them all (the connection's when none decides).
func argsCollation(ctx *sql.Context, args ...sql.Expression) sql.CollationID {
	var coll sql.CollationID
	var co byte
	for i, a := range args {
		if isBinaryString(a.Type(ctx)) {
			return sql.Collation_binary
		}
		ca, xa := sql.GetCoercibility(ctx, a)
		if i == 0 {
			coll, co = ca, xa
			continue
		}
		coll, co = sql.ResolveCoercibility(coll, co, ca, xa)
	}
	if coll == sql.Collation_Unspecified {
		return ctx.GetCollation()
	}
	return coll
}

// evalText evaluates e as text; null when it is NULL.
func evalText(ctx *sql.Context, e sql.Expression, row sql.Row) (s string, null bool, err error) {
	v, err := e.Eval(ctx, row)
	if err != nil || v == nil {
		return "", true, err
	}
	t, _, err := types.LongText.Convert(ctx, v)
	if err != nil {
		return "", true, err
	}
	if t, err = sql.UnwrapAny(ctx, t); err != nil {
		return "", true, err
	}
	s, _ = t.(string)
	return s, false, nil
}

// locate is LOCATE(sub, str[, pos]), POSITION(sub IN str) or
// INSTR(str, sub) (args always sub, str[, pos]).
type locate struct {
	name  string
	args  []sql.Expression
	instr bool
}

var _ sql.FunctionExpression = (*locate)(nil)

func (l *locate) FunctionName() string       { return l.name }
func (l *locate) Description() string        { return "returns the position of a substring" }
func (l *locate) Children() []sql.Expression { return l.args }
func (l *locate) Type(*sql.Context) sql.Type { return types.Int32 }
func (l *locate) IsNullable(ctx *sql.Context) bool {
	for _, a := range l.args {
		if a.IsNullable(ctx) {
			return true
		}
	}
	return false
}
func (l *locate) CollationCoercibility(*sql.Context) (sql.CollationID, byte) {
	return sql.Collation_binary, 5
}

func (l *locate) Resolved() bool {
	for _, a := range l.args {
		if !a.Resolved() {
			return false
		}
	}
	return true
}

func (l *locate) String() string {
	parts := make([]string, len(l.args))
	for i, a := range l.args {
		parts[i] = a.String()
	}
	if l.instr {
		parts[0], parts[1] = parts[1], parts[0]
	}
	return strings.ToUpper(l.name) + "(" + strings.Join(parts, ", ") + ")"
}

func (l *locate) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != len(l.args) {
		return nil, sql.ErrInvalidChildrenNumber.New(l, len(children), len(l.args))
	}
	nl := *l
	nl.args = children
	return &nl, nil
}

func (l *locate) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	var vals [2]string
	for i, a := range l.args[:2] {
		s, null, err := evalText(ctx, a, row)
		if null {
			return nil, err
		}
		vals[i] = s
	}
	from := 1
	if len(l.args) == 3 {
		v, err := l.args[2].Eval(ctx, row)
		if err != nil || v == nil {
			return nil, err
		}
		n, _, err := types.Int64.Convert(ctx, v)
		if err != nil {
			return nil, err
		}
		if from = int(n.(int64)); from < 1 {
			return int32(0), nil
		}
	}
	return int32(locateIn(argsCollation(ctx, l.args[0], l.args[1]), vals[1], vals[0], from, len(l.args) == 3)), nil
}

// locateIn is the position of the first sub in s at or after position
// from (1-based), comparing by coll: characters for a character string,
// bytes for a binary one; 0 when there is none. A start given past the
// end of s finds nothing, not even an empty sub (MySQL's
// Item_func_locate).
func locateIn(coll sql.CollationID, s, sub string, from int, given bool) int {
	if coll == sql.Collation_binary || coll.Collation().Sorter == nil {
		if given && from > len(s) {
			return 0
		}
		if i := strings.Index(s[from-1:], sub); i >= 0 {
			return i + from
		}
		return 0
	}
	sorter := coll.Sorter()
	weights := func(str string) []int32 {
		w := make([]int32, 0, utf8.RuneCountInString(str))
		for _, r := range str {
			w = append(w, sorter(r))
		}
		return w
	}
	ws, wsub := weights(s), weights(sub)
	if given && from > len(ws) {
		return 0
	}
	for i := from - 1; i+len(wsub) <= len(ws); i++ {
		match := true
		for j := range wsub {
			if ws[i+j] != wsub[j] {
				match = false
				break
			}
		}
		if match {
			return i + 1
		}
	}
	return 0
}

// collatedExtreme is LEAST or GREATEST: of strings (the function's type
// is text), by the arguments' collation; otherwise go-mysql-server's.
type collatedExtreme struct {
	sql.Expression // go-mysql-server's LEAST or GREATEST
	name           string
	args           []sql.Expression
	least          bool
}

var _ sql.FunctionExpression = (*collatedExtreme)(nil)

func (c *collatedExtreme) FunctionName() string { return c.name }
func (c *collatedExtreme) Description() string {
	return c.Expression.(sql.FunctionExpression).Description()
}

func (c *collatedExtreme) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	inner, err := c.Expression.WithChildren(ctx, children...)
	if err != nil {
		return nil, err
	}
	return &collatedExtreme{Expression: inner, name: c.name, args: children, least: c.least}, nil
}

func (c *collatedExtreme) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	if !types.IsTextOnly(c.Type(ctx)) {
		return c.Expression.Eval(ctx, row)
	}
	coll := argsCollation(ctx, c.args...)
	var best string
	for i, a := range c.args {
		str, null, err := evalText(ctx, a, row)
		if null {
			return nil, err
		}
		if i == 0 {
			best = str
			continue
		}
		cmp := compareByCollation(coll, str, best)
		if c.least && cmp < 0 || !c.least && cmp > 0 {
			best = str
		}
	}
	return best, nil
}

// compareByCollation orders two strings by coll's weights (bytes for
// binary).
func compareByCollation(coll sql.CollationID, a, b string) int {
	var c Collator
	return strings.Compare(string(c.AppendWeights(nil, uint16(coll), a)), string(c.AppendWeights(nil, uint16(coll), b)))
}
