package routine

import (
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// render prints statement st with each reference to a variable of scope
// f (an unqualified name that resolves to one) replaced by its value as
// a literal. The target of an assignment in UPDATE ... SET prints as
// the column it is (AssignmentExpr does not print it through the
// formatter), as MySQL reads it.
func render(f *frame, st ast.SQLNode) string { return renderBound(f, nil, st) }

// renderBound is render with the placeholders of a prepared statement
// (:v1, ...) replaced by their values in binds too.
func renderBound(f *frame, binds map[string]sqltypes.Value, st ast.SQLNode) string {
	if f == nil && binds == nil {
		return ast.String(st)
	}
	// The select lists' own expressions (a function's arguments are
	// AliasedExprs too).
	columns := map[*ast.AliasedExpr]bool{}
	_ = ast.Walk(func(n ast.SQLNode) (bool, error) {
		if sel, ok := n.(*ast.Select); ok {
			for _, e := range sel.SelectExprs {
				if a, ok := e.(*ast.AliasedExpr); ok {
					columns[a] = true
				}
			}
		}
		return true, nil
	}, st)
	inLimit, inOrder := false, false
	buf := ast.NewTrackedBuffer(func(buf *ast.TrackedBuffer, node ast.SQLNode) {
		switch n := node.(type) {
		case *ast.Limit:
			inLimit = true
			n.Format(buf)
			inLimit = false
			return
		case *ast.Order, ast.GroupBy:
			inOrder = true
			node.Format(buf)
			inOrder = false
			return
		case *ast.SQLVal:
			if v, ok := binds[strings.TrimPrefix(string(n.Val), ":")]; ok && n.Type == ast.ValArg {
				if inLimit {
					plainLiteral(v).Format(buf)
				} else {
					literal(v).Format(buf)
				}
				return
			}
		case *ast.ColName:
			if n.Qualifier.IsEmpty() {
				if v := f.lookup(n.Name.String()); v != nil {
					switch {
					case inLimit:
						plainLiteral(v.val).Format(buf)
					case inOrder:
						valueOf(v.val).Format(buf)
					default:
						literal(v.val).Format(buf)
					}
					return
				}
			}
		case *ast.AliasedExpr:
			// A result column keeps the name of the expression as
			// written (MySQL's), not of the values put in it.
			if columns[n] && n.As.IsEmpty() && refersToVariable(f, n.Expr) {
				name := n.InputExpression
				if name == "" {
					name = ast.String(n.Expr)
				}
				buf.Myprintf("%v as %s", n.Expr, "`"+strings.ReplaceAll(name, "`", "``")+"`")
				return
			}
		}
		node.Format(buf)
	})
	buf.Myprintf("%v", st)
	return buf.String()
}

// refersToVariable reports whether expression e names a variable of
// scope f.
func refersToVariable(f *frame, e ast.Expr) bool {
	found := false
	_ = ast.Walk(func(n ast.SQLNode) (bool, error) {
		if c, ok := n.(*ast.ColName); ok && c.Qualifier.IsEmpty() && f.lookup(c.Name.String()) != nil {
			found = true
		}
		return !found, nil
	}, e)
	return found
}

// literal is v as a SQL literal of its kind: a number, a string, a
// hexadecimal literal for binary strings, NULL. A number is
// parenthesized: as an expression, not the position of a column
// (valueOf, in ORDER BY and GROUP BY), and a negative one not read as
// a comment after a minus sign (- -5, not --5). LIMIT takes plain
// numbers (plainLiteral).
func literal(v sqltypes.Value) ast.Expr {
	e := plainLiteral(v)
	if n, ok := e.(*ast.SQLVal); ok && (n.Type == ast.IntVal || n.Type == ast.FloatVal) {
		return &ast.ParenExpr{Expr: n}
	}
	return e
}

// valueOf is literal for ORDER BY and GROUP BY, where a number, even
// parenthesized, names a column by its position: a number is added to
// 0, an expression of the same value.
func valueOf(v sqltypes.Value) ast.Expr {
	e := plainLiteral(v)
	if n, ok := e.(*ast.SQLVal); ok && (n.Type == ast.IntVal || n.Type == ast.FloatVal) {
		return &ast.ParenExpr{Expr: &ast.BinaryExpr{Operator: ast.PlusStr, Left: &ast.ParenExpr{Expr: n}, Right: ast.NewIntVal([]byte("0"))}}
	}
	return e
}

func plainLiteral(v sqltypes.Value) ast.Expr {
	switch {
	case v.IsNull():
		return &ast.NullVal{}
	case v.IsIntegral():
		return ast.NewIntVal([]byte(v.ToString()))
	case v.Type() == sqltypes.Decimal:
		return ast.NewFloatVal([]byte(v.ToString()))
	case v.IsFloat():
		s := v.ToString()
		if !strings.ContainsAny(s, "eE") {
			s += "e0" // a DOUBLE literal, not a DECIMAL one
		}
		return ast.NewFloatVal([]byte(s))
	case v.Type() == sqltypes.Bit:
		var n uint64
		for _, b := range v.Raw() {
			n = n<<8 | uint64(b)
		}
		return ast.NewIntVal([]byte(strconv.FormatUint(n, 10)))
	case v.Type() == sqltypes.Date || v.Type() == sqltypes.Time || v.Type() == sqltypes.Datetime || v.Type() == sqltypes.Timestamp:
		// Typed, so that arithmetic on it is a temporal value's
		// (a DATE + 0 is 20240228, the string's 2024).
		typ := map[querypb.Type]string{sqltypes.Date: "date", sqltypes.Time: "time", sqltypes.Datetime: "datetime", sqltypes.Timestamp: "datetime"}[v.Type()]
		ct := &ast.ConvertType{Type: typ}
		if typ != "date" && strings.Contains(v.ToString(), ".") {
			ct.Length = ast.NewIntVal([]byte("6"))
		}
		return &ast.ConvertExpr{Name: "CAST", Expr: ast.NewStrVal(v.Raw()), Type: ct}
	case v.IsBinary():
		if len(v.Raw()) == 0 {
			return &ast.ConvertExpr{Name: "CONVERT", Expr: ast.NewStrVal(nil), Type: &ast.ConvertType{Type: "binary"}}
		}
		return ast.NewHexVal([]byte(hex.EncodeToString(v.Raw())))
	default:
		return ast.NewStrVal(v.Raw())
	}
}

// AfterKeyword is statement stmt from just after its first token kw
// (the name and body of CREATE ... PROCEDURE, whatever precedes it).
func AfterKeyword(stmt string, kw int) (string, bool) {
	tkn := ast.NewStringTokenizer(stmt)
	for {
		typ, _ := tkn.Scan()
		if typ == 0 || typ == ast.LEX_ERROR {
			return "", false
		}
		if typ == kw {
			pos := tkn.Position - 1 // the tokenizer counts from 1
			if pos < 0 || pos > len(stmt) {
				return "", false
			}
			return strings.TrimSpace(stmt[pos:]), true
		}
	}
}

// Check refuses, when a procedure is made, what Run does not do: a
// handler for SQLWARNING or an UNDO handler, RETURN (functions only), a
// LEAVE or ITERATE of a label not around it, a routine created in the
// body.
func Check(spec *ast.ProcedureSpec) error {
	c := checker{}
	return c.stmt(spec.Body, nil)
}

type checker struct{}

// notSupported is mysqlerr.NotSupported, which this package, on
// mysqlerr's layer, cannot import.
func notSupported(what string) error {
	return mysql.NewSQLError(mysql.ERNotSupportedYet, "42000", "This version of Lockstep doesn't yet support '%s'", what)
}

// labels are the labels around a statement: loop labels true, block
// labels false.
func (c checker) stmt(st ast.Statement, labels map[string]bool) error {
	with := func(label string, loop bool) map[string]bool {
		if label == "" {
			return labels
		}
		m := make(map[string]bool, len(labels)+1)
		for k, v := range labels {
			m[k] = v
		}
		m[strings.ToLower(label)] = loop
		return m
	}
	list := func(sts ast.Statements, labels map[string]bool) error {
		for _, s := range sts {
			if err := c.stmt(s, labels); err != nil {
				return err
			}
		}
		return nil
	}
	switch s := st.(type) {
	case *ast.BeginEndBlock:
		return list(s.Statements, with(s.Label, false))
	case *ast.IfStatement:
		for _, cond := range s.Conditions {
			if err := list(cond.Statements, labels); err != nil {
				return err
			}
		}
		return list(s.Else, labels)
	case *ast.CaseStatement:
		for _, cs := range s.Cases {
			if err := list(cs.Statements, labels); err != nil {
				return err
			}
		}
		return list(s.Else, labels)
	case *ast.While:
		return list(s.Statements, with(s.Label, true))
	case *ast.Repeat:
		return list(s.Statements, with(s.Label, true))
	case *ast.Loop:
		return list(s.Statements, with(s.Label, true))
	case *ast.Leave:
		if _, ok := labels[strings.ToLower(s.Label)]; !ok {
			return mysql.NewSQLError(1308, "42000", "LEAVE with no matching label: %s", s.Label) // ER_SP_LILABEL_MISMATCH
		}
	case *ast.Iterate:
		if loop, ok := labels[strings.ToLower(s.Label)]; !ok || !loop {
			return mysql.NewSQLError(1308, "42000", "ITERATE with no matching label: %s", s.Label)
		}
	case *ast.Declare:
		if h := s.Handler; h != nil {
			if h.Action == ast.DeclareHandlerAction_Undo {
				return notSupported("DECLARE UNDO HANDLER")
			}
			for _, cv := range h.ConditionValues {
				if cv.ValueType == ast.DeclareHandlerCondition_SqlWarning {
					return notSupported("DECLARE ... HANDLER FOR SQLWARNING")
				}
			}
			return c.stmt(h.Statement, labels)
		}
	case *ast.Return:
		return mysql.NewSQLError(1313, "42000", "RETURN is only allowed in a FUNCTION") // ER_SP_BADRETURN
	case *ast.DDL:
		if s.ProcedureSpec != nil || s.TriggerSpec != nil || s.EventSpec != nil {
			return mysql.NewSQLError(1303, "2F003", "Can't create a %s from within another stored routine", strings.ToUpper(s.Action)) // ER_SP_NO_RECURSIVE_CREATE
		}
	}
	return nil
}
