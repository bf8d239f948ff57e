package sqlengine

// LIKE's escape character, read as MySQL reads it.
//
// go-mysql-server differs from MySQL in three ways, each silently:
//
//   - it prints a LIKE without its ESCAPE clause, and the texts it stores
//     for CHECK constraints (and shows in SHOW CREATE TABLE) are such
//     prints: a constraint with ESCAPE '|' read itself back without it;
//   - it turns a LIKE of a constant pattern without a wildcard into an
//     equality with the pattern, backslashes and all: v LIKE 'a\_'
//     found the row "a\_" and not "a_";
//   - it fails on ESCAPE '' (a panic) and gives 1105 for a longer one.
//
// MySQL takes an ESCAPE of at most one character, of exactly one under
// NO_BACKSLASH_ESCAPES (else 1210), an empty one meaning \ (likeEscape).
// A LIKE whose escape character is named, or whose pattern is a string
// with a backslash (given ESCAPE '\\', what it means), becomes an
// escapedLike before go-mysql-server's analyzer rules read it
// (escapedLikes, a rule that runs first; correctArgs makes the same
// change where the rules did not run): it prints its clause and is no LIKE
// those rules rewrite. A LIKE of a pattern without a backslash is left to
// go-mysql-server, whose rewrite of 'abc%' into a range uses an index.

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
)

// likeEscape is a LIKE's ESCAPE clause read as MySQL reads it (see the top
// of the file).
type likeEscape struct{ valueWrapper }

// erWrongArguments is ER_WRONG_ARGUMENTS.
const erWrongArguments = 1210

func (l *likeEscape) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	v, err := l.Child.Eval(ctx, row)
	if err != nil || v == nil {
		return v, err
	}
	s, ok := v.(string)
	if !ok {
		return v, nil // go-mysql-server converts it
	}
	if n := utf8.RuneCountInString(s); n > 1 || n != 1 && NoBackslashEscapes(ctx) {
		return nil, mysql.NewSQLError(erWrongArguments, "HY000", "Incorrect arguments to ESCAPE")
	}
	if s == "" {
		return `\`, nil
	}
	return s, nil
}

func (l *likeEscape) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(l, len(children), 1)
	}
	return &likeEscape{wrap(children[0])}, nil
}

// escapedLike is a LIKE with its escape character named: one with an
// ESCAPE clause (its likeEscape), or one whose pattern is a string with a
// backslash in it, given ESCAPE '\\'. It prints its clause, and is no LIKE
// go-mysql-server's rules rewrite.
type escapedLike struct{ *expression.Like }

var _ sql.Expression = escapedLike{}

// asEscapedLike is e as an escapedLike, if it is a LIKE that must be one.
func asEscapedLike(e sql.Expression) (sql.Expression, bool) {
	l, ok := e.(*expression.Like)
	if !ok {
		return nil, false
	}
	esc := l.Escape
	if esc == nil {
		lit, isLit := l.RightChild.(*expression.Literal)
		if !isLit {
			return nil, false
		}
		if s, isStr := lit.Value().(string); !isStr || strings.IndexByte(s, '\\') < 0 {
			return nil, false
		}
		esc = expression.NewLiteral(`\`, types.LongText)
	}
	return newEscapedLike(l.LeftChild, l.RightChild, &likeEscape{wrap(esc)}), true
}

func newEscapedLike(left, right sql.Expression, esc *likeEscape) escapedLike {
	return escapedLike{expression.NewLike(left, right, esc).(*expression.Like)}
}

func (l escapedLike) String() string {
	return fmt.Sprintf("%s LIKE %s ESCAPE %s", l.LeftChild, l.RightChild, l.Escape.(*likeEscape).Child)
}

func (l escapedLike) DebugString(ctx *sql.Context) string { return l.String() }

func (l escapedLike) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 2 {
		return nil, sql.ErrInvalidChildrenNumber.New(l, len(children), 2)
	}
	return newEscapedLike(children[0], children[1], l.Escape.(*likeEscape)), nil
}

// escapedLikes is the analyzer rule that makes each LIKE of n that must be
// one an escapedLike, before go-mysql-server's rules read them: in the
// nodes' expressions and subqueries, and in the CHECK constraints a node
// carries (a write evaluates them, SHOW CREATE TABLE prints them).
func escapedLikes(ctx *sql.Context, _ *analyzer.Analyzer, n sql.Node, _ *plan.Scope, _ analyzer.RuleSelector, _ *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
	n, sameChecks, err := transform.Node(ctx, n, func(ctx *sql.Context, n sql.Node) (sql.Node, transform.TreeIdentity, error) {
		c, ok := n.(checkedNode)
		if !ok {
			return n, transform.SameTree, nil
		}
		var out sql.CheckConstraints
		for i, ch := range c.Checks() {
			e, same, err := transform.Expr(ctx, ch.Expr, escapedLikeExpr)
			if err != nil {
				return nil, transform.SameTree, err
			}
			if same {
				continue
			}
			if out == nil {
				out = slices.Clone(c.Checks())
			}
			changed := *ch
			changed.Expr = e
			out[i] = &changed
		}
		if out == nil {
			return n, transform.SameTree, nil
		}
		return c.WithChecks(out), transform.NewTree, nil
	})
	if err != nil {
		return nil, transform.SameTree, err
	}
	n, sameExprs, err := transform.NodeExprs(ctx, n, escapedLikeExpr)
	return n, sameChecks && sameExprs, err
}

// checkedNode is a node that carries CHECK constraints.
type checkedNode interface {
	Checks() sql.CheckConstraints
	WithChecks(sql.CheckConstraints) sql.Node
}

func escapedLikeExpr(ctx *sql.Context, e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
	if sq, ok := e.(*plan.Subquery); ok {
		q, same, err := escapedLikes(ctx, nil, sq.Query, nil, nil, nil)
		if err != nil || same {
			return e, transform.SameTree, err
		}
		return sq.WithQuery(q), transform.NewTree, nil
	}
	if l, ok := asEscapedLike(e); ok {
		return l, transform.NewTree, nil
	}
	return e, transform.SameTree, nil
}

// escapedLikesRule names the rule.
const escapedLikesRule analyzer.RuleId = 1<<20 + 1
