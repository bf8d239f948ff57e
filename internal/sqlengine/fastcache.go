package sqlengine

import (
	"context"
	"strconv"
	"sync"

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

// PlanCache maps query shapes to fast plans (nil: not a fast shape). A
// hit costs no allocation: the shape is scanned into a buffer on the
// stack and looked up as bytes.
type PlanCache struct {
	mu     sync.RWMutex
	shapes [2]map[string]*FastPlan // with ANSI_QUOTES off, on
	n      int
}

// Plan returns the fast plan for a text query and the bind variables its
// literals became. ok is false when the query is not of a fast shape (or
// does not parse): run it through GMS.
func (c *PlanCache) Plan(ctx context.Context, query string, opts ast.ParserOptions) (p *FastPlan, binds map[string]*querypb.BindVariable, ok bool) {
	var shapeBuf [512]byte
	var litBuf [8]literal
	shape, lits, norm := normalize(shapeBuf[:0], litBuf[:0], query, opts.AnsiQuotes)
	if !norm {
		return planText(ctx, query, opts)
	}
	quotes := 0
	if opts.AnsiQuotes {
		quotes = 1
	}
	c.mu.RLock()
	p, hit := c.shapes[quotes][string(shape)]
	c.mu.RUnlock()
	if !hit {
		key := string(shape)
		p, _, _ = planText(ctx, key, opts)
		if len(key) <= planCacheShape {
			c.mu.Lock()
			if _, there := c.shapes[quotes][key]; !there && c.n < planCacheSize {
				if c.shapes[quotes] == nil {
					c.shapes[quotes] = map[string]*FastPlan{}
				}
				c.shapes[quotes][key] = p
				c.n++
			}
			c.mu.Unlock()
		}
	}
	if p == nil {
		return nil, nil, false
	}
	return p, bindLiterals(lits), true
}

// A literal lifted out of a query: a string's contents or an integer.
type literal struct {
	typ  querypb.Type // VARCHAR, INT64 or UINT64
	text string       // VARCHAR: the contents, in the query's text
	i    int64
	u    uint64
}

// bindLiterals turns lifted literals into the bind variables v1, v2, ...
// that the client-side form of the statement would send. Their values
// share one buffer and the variables one array, so binding costs three
// allocations however many literals there are.
func bindLiterals(lits []literal) map[string]*querypb.BindVariable {
	if len(lits) == 0 {
		return nil
	}
	size := 0
	for _, l := range lits {
		if l.typ == querypb.Type_VARCHAR {
			size += len(l.text)
		} else {
			size += 20 // the longest 64-bit integer
		}
	}
	buf := make([]byte, 0, size)
	vars := make([]querypb.BindVariable, len(lits))
	binds := make(map[string]*querypb.BindVariable, len(lits))
	for i, l := range lits {
		start := len(buf)
		switch l.typ {
		case querypb.Type_INT64:
			buf = strconv.AppendInt(buf, l.i, 10)
		case querypb.Type_UINT64:
			buf = strconv.AppendUint(buf, l.u, 10)
		default:
			buf = append(buf, l.text...)
		}
		vars[i].Type = l.typ
		vars[i].Value = buf[start:len(buf):len(buf)]
		binds[bindName(i)] = &vars[i]
	}
	return binds
}

// bindNames are the names of the first bind variables, made once.
var bindNames = func() (n [32]string) {
	for i := range n {
		n[i] = "v" + strconv.Itoa(i+1)
	}
	return n
}()

// bindName is the name of the i-th (from 0) lifted literal: v1, v2, ...
func bindName(i int) string {
	if i < len(bindNames) {
		return bindNames[i]
	}
	return "v" + strconv.Itoa(i+1)
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
	if chainOrRelease(st, query) != "" {
		return nil, nil, false // refused on GMS's path (txnend.go)
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

// normalize appends to out the shape of q (its integer and string
// literals replaced with ?) and to lits those literals. ok is false when
// q holds something the scanner does not handle (see the file comment).
func normalize(out []byte, lits []literal, q string, ansiQuotes bool) (shape []byte, _ []literal, ok bool) {
	for i := 0; i < len(q); {
		b := q[i]
		switch {
		case b == '\\' || b == '?' || b == ':' || b == '#' || b == 0:
			// NUL: the parser ends a statement at a NUL after a string
			// but not after a number, so a lifted literal would change
			// whether the text parses.
			return nil, nil, false
		case b == '-' && i+1 < len(q) && q[i+1] == '-':
			return nil, nil, false
		case b == '/' && i+1 < len(q) && q[i+1] == '*':
			return nil, nil, false
		case b == '`' || (b == '"' && ansiQuotes):
			// A quoted identifier, copied as is.
			j := i + 1
			for j < len(q) && q[j] != b {
				j++
			}
			if j+1 < len(q) && q[j+1] == b || j >= len(q) {
				return nil, nil, false // a doubled quote, or unterminated
			}
			out = append(out, q[i:j+1]...)
			i = j + 1
		case b == '\'' || b == '"':
			if i > 0 && identByte(q[i-1]) || introducer(out) {
				return nil, nil, false // _utf8mb4'x', _latin1 'x', X'ab', N'x', b'01'
			}
			if endsWithOperand(out) {
				return nil, nil, false // an alias (SELECT c 'name'), not a value
			}
			j := i + 1
			for j < len(q) && q[j] != b {
				if q[j] == '\\' {
					return nil, nil, false // an escape sequence
				}
				j++
			}
			if j >= len(q) || j+1 < len(q) && q[j+1] == b || adjacentString(q[j+1:]) {
				return nil, nil, false // unterminated, doubled quote, or 'a' 'b'
			}
			lits = append(lits, literal{typ: querypb.Type_VARCHAR, text: q[i+1 : j]})
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
				return nil, nil, false // 1.5, 1e3, 0x1f
			}
			if unaryPlus(out) {
				return nil, nil, false // +5: the parser folds it, +? it does not
			}
			lit := q[i:j]
			if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
				lits = append(lits, literal{typ: querypb.Type_INT64, i: n})
			} else if u, err := strconv.ParseUint(lit, 10, 64); err == nil {
				lits = append(lits, literal{typ: querypb.Type_UINT64, u: u})
			} else {
				return nil, nil, false
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
	return out, lits, true
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
