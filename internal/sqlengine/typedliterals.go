package sqlengine

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// Typed temporal literals: DATE '2020-01-02', TIME '10:00:00' and
// TIMESTAMP '2020-01-02 10:00:00' are values of type DATE, TIME and
// DATETIME in MySQL. The vitess parser keeps only their strings, so they
// were strings here: DATE '2020-01-02' + 0 was 2020 (the number the
// string starts with) where MySQL gives 20200102, and a client read
// SELECT DATE '2020-01-02' as text, not as a date.
//
// The parse tree does not say which strings were typed, so the text is
// scanned for the keyword followed by a string, and each such string is
// found in the tree by its value: when every string of the statement
// with that value is typed, with one type, they become casts to it. A
// statement that has the same text both as a typed literal and as a
// plain string (or under two types) is left as the parser made it. An
// invalid literal fails the statement with 1525, as in MySQL.

// typedLiteral is one typed literal of a statement's text.
type typedLiteral struct {
	kind  int // ast.DATE, ast.TIME or ast.TIMESTAMP
	value string
}

// scanTypedLiterals lists the typed temporal literals of query.
func scanTypedLiterals(query string) []typedLiteral {
	if !containsFold(query, "date") && !containsFold(query, "time") {
		return nil
	}
	var out []typedLiteral
	tkn := ast.NewStringTokenizer(query)
	prev := 0
	for {
		typ, val := tkn.Scan()
		if typ == 0 || typ == ast.LEX_ERROR {
			return out
		}
		if typ == ast.STRING && (prev == ast.DATE || prev == ast.TIME || prev == ast.TIMESTAMP) {
			out = append(out, typedLiteral{kind: prev, value: string(val)})
		}
		prev = typ
	}
}

// rewriteTypedLiterals turns st's typed temporal literals (found in its
// text, query) into casts to their types; an invalid one is 1525.
func rewriteTypedLiterals(st ast.SQLNode, query string) error {
	lits := scanTypedLiterals(query)
	if st == nil || len(lits) == 0 {
		return nil
	}
	kinds := map[string]int{} // value -> its one type, or -1 for two
	typed := map[string]int{} // value -> typed occurrences
	for _, l := range lits {
		if k, ok := kinds[l.value]; ok && k != l.kind {
			kinds[l.value] = -1
		} else if !ok {
			kinds[l.value] = l.kind
		}
		typed[l.value]++
	}
	strs := map[string]int{}           // value -> string literals in the tree
	constant := map[*ast.SQLVal]bool{} // NAME_CONST's arguments, which must stay literals
	_ = ast.Walk(func(n ast.SQLNode) (bool, error) {
		switch x := n.(type) {
		case *ast.SQLVal:
			if x.Type == ast.StrVal {
				strs[string(x.Val)]++
			}
		case *ast.FuncExpr:
			if x.Name.EqualString("name_const") {
				for _, a := range x.Exprs {
					if ae, ok := a.(*ast.AliasedExpr); ok {
						if v, ok := ae.Expr.(*ast.SQLVal); ok {
							constant[v] = true
						}
					}
				}
			}
		}
		return true, nil
	}, st)
	for v, k := range kinds {
		if k < 0 || strs[v] != typed[v] {
			delete(kinds, v)
			continue
		}
		if err := checkTypedLiteral(k, v); err != nil {
			return err
		}
	}
	if len(kinds) == 0 {
		return nil
	}
	rewriteExprs(st, func(e ast.Expr) ast.Expr {
		v, ok := e.(*ast.SQLVal)
		if !ok || v.Type != ast.StrVal || constant[v] {
			return nil
		}
		k, ok := kinds[string(v.Val)]
		if !ok {
			return nil
		}
		return &ast.ConvertExpr{Name: "CAST", Expr: v, Type: typedLiteralType(k, string(v.Val))}
	})
	return nil
}

// typedLiteralType is the type of a literal of kind k with text v: DATE,
// or TIME or DATETIME with as many fractional digits as v has.
func typedLiteralType(k int, v string) *ast.ConvertType {
	switch k {
	case ast.DATE:
		return &ast.ConvertType{Type: "date"}
	case ast.TIME:
		return &ast.ConvertType{Type: "time", Length: fractionDigits(v)}
	default:
		return &ast.ConvertType{Type: "datetime", Length: fractionDigits(v)}
	}
}

// fractionDigits is the precision a literal's fraction asks for (nil
// for none): the digits after its last '.'.
func fractionDigits(v string) *ast.SQLVal {
	i := strings.LastIndexByte(v, '.')
	if i < 0 {
		return nil
	}
	n := 0
	for _, c := range v[i+1:] {
		if c < '0' || c > '9' {
			break
		}
		n++
	}
	if n == 0 {
		return nil
	}
	return ast.NewIntVal([]byte{byte('0' + min(n, 6))})
}

// checkTypedLiteral refuses a typed literal MySQL refuses: 1525
// "Incorrect DATE value: 'x'" (TIME, DATETIME for the others). The
// conversion depends on no session setting.
func checkTypedLiteral(k int, v string) error {
	var typ sql.Type
	name := "DATE"
	switch k {
	case ast.DATE:
		typ = types.Date
	case ast.TIME:
		typ, name = types.Time, "TIME"
	default:
		typ, name = types.DatetimeMaxPrecision, "DATETIME"
	}
	if strings.Trim(v, "0-: .") == "" {
		return nil // the zero value, as sql_mode allows or refuses it when stored
	}
	if _, _, err := typ.Convert(sql.NewEmptyContext(), v); err != nil {
		return mysql.NewSQLError(erWrongValue, "HY000", "Incorrect %s value: '%s'", name, v)
	}
	return nil
}

// erWrongValue is ER_WRONG_VALUE.
const erWrongValue = 1525
