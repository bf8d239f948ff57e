package sqlengine

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// Text-protocol statements differ only in their literals from one
// execution to the next (WHERE id=17, then WHERE id=4711). The plan cache
// lifts the literals out of a query into bind variables, so the query's
// shape is parsed once and each execution only scans its text, as a
// prepared statement's execution only binds values.
//
// The scanner is deliberately narrow: a query with anything it does not
// fully understand (a comment, a backslash, a quote doubled inside a
// string, a character set introducer, strings written side by side, a
// string after an operand (an alias: SELECT c 'name'), a NUL,
// a bare ? or :, a number that is not a plain integer or has a unary plus)
// is not normalised at all, and is parsed whole as before. A literal lifted out becomes exactly the bind variable the
// client-side form of the same statement would send, which the planner
// turns back into the same literal (ast.ExprFromValue).

// planCacheSize bounds the number of shapes kept, and planCacheShape the
// length of a shape that is kept (so the cache holds at most 32 MiB of
// shapes whatever clients send); a workload with more distinct shapes, or
// longer ones, parses the rest every time.
const (
	planCacheSize  = 8192
	planCacheShape = 4096
)

// PlanCache maps query shapes to fast plans (nil: not a fast shape).
type PlanCache struct {
	m sync.Map // cacheKey -> *FastPlan (nil for "not a fast shape")
	n atomic.Int64
}

type cacheKey struct {
	shape      string
	ansiQuotes bool
}

// Plan returns the fast plan for a text query and the bind variables its
// literals became. ok is false when the query is not of a fast shape (or
// does not parse): run it through GMS.
func (c *PlanCache) Plan(ctx context.Context, query string, opts ast.ParserOptions) (p *FastPlan, binds map[string]*querypb.BindVariable, ok bool) {
	shape, lits, norm := normalize(query, opts.AnsiQuotes)
	if !norm {
		return planText(ctx, query, opts)
	}
	key := cacheKey{shape: shape, ansiQuotes: opts.AnsiQuotes}
	if v, hit := c.m.Load(key); hit {
		p = v.(*FastPlan)
	} else {
		p, _, _ = planText(ctx, shape, opts)
		if c.n.Load() < planCacheSize && len(shape) <= planCacheShape {
			if _, loaded := c.m.LoadOrStore(key, p); !loaded {
				c.n.Add(1)
			}
		}
	}
	if p == nil {
		return nil, nil, false
	}
	if len(lits) > 0 {
		binds = make(map[string]*querypb.BindVariable, len(lits))
		for i, l := range lits {
			binds["v"+strconv.Itoa(i+1)] = l
		}
	}
	return p, binds, true
}

// planText parses one statement and plans it.
func planText(ctx context.Context, query string, opts ast.ParserOptions) (*FastPlan, map[string]*querypb.BindVariable, bool) {
	st, n, err := ParseOne(ctx, query, opts)
	if err != nil || !onlySpaceOrSemicolons(query[n:]) {
		return nil, nil, false
	}
	if _, ok := st.(*ast.Begin); ok && containsFold(query, "consistent") {
		// The parser drops WITH CONSISTENT SNAPSHOT: GMS's path reads it
		// from the text (readlock.go).
		return nil, nil, false
	}
	p := PlanFast(st)
	return p, nil, p != nil
}

func onlySpaceOrSemicolons(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r', ';':
		default:
			return false
		}
	}
	return true
}

func identByte(b byte) bool {
	return b == '_' || b == '$' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
}

// normalize replaces the integer and string literals of q with ? and
// returns them as bind variables. ok is false when q holds something the
// scanner does not handle (see the file comment).
func normalize(q string, ansiQuotes bool) (shape string, lits []*querypb.BindVariable, ok bool) {
	out := make([]byte, 0, len(q))
	for i := 0; i < len(q); {
		b := q[i]
		switch {
		case b == '\\' || b == '?' || b == ':' || b == '#' || b == 0:
			// NUL: the parser ends a statement at a NUL after a string
			// but not after a number, so a lifted literal would change
			// whether the text parses.
			return "", nil, false
		case b == '-' && i+1 < len(q) && q[i+1] == '-':
			return "", nil, false
		case b == '/' && i+1 < len(q) && q[i+1] == '*':
			return "", nil, false
		case b == '`' || (b == '"' && ansiQuotes):
			// A quoted identifier, copied as is.
			j := i + 1
			for j < len(q) && q[j] != b {
				j++
			}
			if j+1 < len(q) && q[j+1] == b || j >= len(q) {
				return "", nil, false // a doubled quote, or unterminated
			}
			out = append(out, q[i:j+1]...)
			i = j + 1
		case b == '\'' || b == '"':
			if i > 0 && identByte(q[i-1]) || introducer(out) {
				return "", nil, false // _utf8mb4'x', _latin1 'x', X'ab', N'x', b'01'
			}
			if endsWithOperand(out) {
				return "", nil, false // an alias (SELECT c 'name'), not a value
			}
			j := i + 1
			for j < len(q) && q[j] != b {
				if q[j] == '\\' {
					return "", nil, false // an escape sequence
				}
				j++
			}
			if j >= len(q) || j+1 < len(q) && q[j+1] == b || adjacentString(q[j+1:]) {
				return "", nil, false // unterminated, doubled quote, or 'a' 'b'
			}
			lits = append(lits, sqltypes.StringBindVariable(q[i+1:j]))
			out = append(out, '?')
			i = j + 1
		case b >= '0' && b <= '9' && (i == 0 || !identByte(q[i-1]) && q[i-1] != '.'):
			j := i
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			if j < len(q) && (identByte(q[j]) || q[j] == '.') {
				if isDigitsIdent(q, i) {
					// An identifier starting with digits (1t): copy it.
					k := j
					for k < len(q) && identByte(q[k]) {
						k++
					}
					out = append(out, q[i:k]...)
					i = k
					continue
				}
				return "", nil, false // 1.5, 1e3, 0x1f
			}
			if unaryPlus(out) {
				return "", nil, false // +5: the parser folds it, +? it does not
			}
			lit := q[i:j]
			if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
				lits = append(lits, sqltypes.Int64BindVariable(n))
			} else if u, err := strconv.ParseUint(lit, 10, 64); err == nil {
				lits = append(lits, sqltypes.Uint64BindVariable(u))
			} else {
				return "", nil, false
			}
			out = append(out, '?')
			i = j
		case identByte(b):
			j := i
			for j < len(q) && identByte(q[j]) {
				j++
			}
			out = append(out, q[i:j]...)
			i = j
		default:
			out = append(out, b)
			i++
		}
	}
	return string(out), lits, true
}

// unaryPlus reports whether the text written so far ends with a unary
// plus: a '+' that follows no operand (BETWEEN +0, = +5, or the start).
func unaryPlus(out []byte) bool {
	j := trimBlanks(out)
	return j > 0 && out[j-1] == '+' && !endsWithOperand(out[:j-1])
}

// endsWithOperand reports whether the text written so far (blanks aside)
// ends with an operand: a name or a number (not a keyword: BETWEEN, AND;
// keywords that are operands, NULL, count as keywords, so that such a
// statement only skips the cache), a closing parenthesis, a lifted
// literal, or a quoted identifier or string.
func endsWithOperand(out []byte) bool {
	j := trimBlanks(out)
	if j == 0 {
		return false
	}
	if identByte(out[j-1]) {
		k := j
		for k > 0 && identByte(out[k-1]) {
			k--
		}
		typ, _ := ast.NewStringTokenizer(string(out[k:j])).Scan()
		return typ == ast.ID || typ == ast.INTEGRAL
	}
	c := out[j-1]
	return c == ')' || c == '?' || c == '`' || c == '"' || c == '\''
}

// trimBlanks is the length of out without its trailing blanks.
func trimBlanks(out []byte) int {
	j := len(out)
	for j > 0 && (out[j-1] == ' ' || out[j-1] == '\t' || out[j-1] == '\n' || out[j-1] == '\r') {
		j--
	}
	return j
}

// adjacentString reports whether another string literal follows (after
// blanks): MySQL concatenates 'a' 'b' into one literal, which two lifted
// literals would not be.
func adjacentString(rest string) bool {
	i := 0
	for i < len(rest) && (rest[i] == ' ' || rest[i] == '\t' || rest[i] == '\n' || rest[i] == '\r') {
		i++
	}
	return i < len(rest) && (rest[i] == '\'' || rest[i] == '"')
}

// isDigitsIdent reports whether the run of digits at i continues into
// letters (an identifier such as 1t), rather than into a number's '.',
// exponent or hex digits, which the scanner refuses.
func isDigitsIdent(q string, i int) bool {
	j := i
	for j < len(q) && q[j] >= '0' && q[j] <= '9' {
		j++
	}
	if j >= len(q) || q[j] == '.' {
		return false
	}
	c := q[j]
	if (c == 'e' || c == 'E') && j+1 < len(q) && (q[j+1] >= '0' && q[j+1] <= '9' || q[j+1] == '-' || q[j+1] == '+') {
		return false
	}
	if (c == 'x' || c == 'b') && j == i+1 && q[i] == '0' {
		return false
	}
	return true
}

// introducer reports whether the last word written is a character set
// introducer (_utf8mb4 'x' may have a space before its string).
func introducer(out []byte) bool {
	j := trimBlanks(out)
	k := j
	for k > 0 && identByte(out[k-1]) {
		k--
	}
	return k < j && out[k] == '_'
}
