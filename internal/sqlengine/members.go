package sqlengine

// ENUM and SET values where a function reads text.
//
// go-mysql-server keeps an ENUM value as its member's number (uint16) and
// a SET value as its bits (uint64). Most of its string functions turned
// that number into text: CONCAT_WS('|', e) gave '1' where MySQL gives the
// member's name, and so did SUBSTRING, REPLACE, LPAD, LOCATE, REVERSE,
// HEX, MD5, SHA1, CRC32, TO_BASE64, REPEAT, STRCMP, SUBSTRING_INDEX,
// ASCII, QUOTE, ELT, FIELD, INSTR, COALESCE, IFNULL, IF's values and
// JSON_ARRAY; LEFT failed. In MySQL an ENUM or SET is its text where text
// is read and its number where a number is (e + 0, IF's condition, SUM).
// memberText puts the text in front of each ENUM or SET argument of the
// functions that read every argument as text (stringReaders,
// temporaltext.go), of the values COALESCE, IFNULL and IF return, and of
// the JSON constructors. CONCAT, UPPER, LOWER, TRIM, CAST and LIKE were
// right already, and stay right. GREATEST and LEAST still refuse an ENUM
// or SET (1105): they compare as text or as numbers by their other
// arguments, which is not done here.

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// memberReaders are the functions, besides stringReaders, that read the
// arguments memberArgs gives as text.
var memberReaders = map[string]args{
	"coalesce": allArgs, "ifnull": allArgs, "if": ifValues,
	"json_array": allArgs, "json_object": allArgs,
}

// memberArgs gives the children of e that e reads as text.
func memberArgs(e sql.Expression) args {
	if _, ok := e.(*function.Quote); ok {
		return allArgs // not a sql.FunctionExpression: it has no Description
	}
	f, ok := e.(sql.FunctionExpression)
	if !ok {
		return noArgs
	}
	name := strings.ToLower(f.FunctionName())
	if name == "group_concat" {
		return noArgs // its values are text already, its ORDER BY keys not (groupconcat.go)
	}
	if stringReaders[name] {
		return allArgs
	}
	return memberReaders[name]
}

// wrapMemberArgs puts a memberText in front of e's ENUM and SET arguments
// that e reads as text.
func wrapMemberArgs(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
	a := memberArgs(e)
	if a == noArgs {
		return e, transform.SameTree, nil
	}
	return replaceChildren(ctx, e, func(i int, c sql.Expression) sql.Expression {
		if !a.has(e, i) {
			return nil
		}
		switch t := c.Type(ctx).(type) {
		case types.EnumType:
			return &memberText{valueWrapper: wrap(c), typ: t, text: types.CreateLongText(t.Collation())}
		case types.SetType:
			return &memberText{valueWrapper: wrap(c), typ: t, text: types.CreateLongText(t.Collation())}
		}
		return nil
	})
}

// memberText is an ENUM or SET value as its text.
type memberText struct {
	valueWrapper
	typ  sql.Type // a types.EnumType or types.SetType
	text sql.Type
}

var _ sql.Expression = (*memberText)(nil)

func (m *memberText) Type(*sql.Context) sql.Type { return m.text }

func (m *memberText) WithChildren(_ *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(m, len(children), 1)
	}
	c := *m
	c.Child = children[0]
	return &c, nil
}

func (m *memberText) Eval(ctx *sql.Context, r sql.Row) (any, error) {
	v, err := m.Child.Eval(ctx, r)
	if err != nil || v == nil {
		return nil, err
	}
	s, _, err := types.ConvertToCollatedString(ctx, v, m.typ)
	return s, err
}
