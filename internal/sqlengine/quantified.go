package sqlengine

// Quantified comparisons with a subquery: `x = ANY (SELECT ...)`, its
// synonym `= SOME`, and `x <> ALL (SELECT ...)`. MySQL defines IN as an
// alias for = ANY and NOT IN for <> ALL, NULLs included (a NULL in the
// subquery makes a non-match NULL; an empty subquery makes = ANY false
// and <> ALL true), and go-mysql-server's parser knows neither form, so
// both are read as IN and NOT IN before parsing. Only the operator and
// the quantifier change; the subquery's text stays where it was.
//
// The other quantified comparisons (> ANY, <= ALL, = ALL, <> ANY, ...)
// are refused with 1235 naming the form, where they were a syntax error.
// A quantifier before a list of values is MySQL's syntax error too and
// is left to the parser.

import (
	"strings"

	"github.com/dolthub/vitess/go/mysql"
)

// rewriteQuantified returns query with = ANY / = SOME read as IN and
// <> ALL / != ALL as NOT IN, or 1235 for another quantified comparison.
func rewriteQuantified(query string) (string, error) {
	if !containsFold(query, "any") && !containsFold(query, "some") && !containsFold(query, "all") {
		return query, nil
	}
	toks := lexTokens(query)
	var b strings.Builder
	last := 0
	for i, t := range toks {
		if !t.is("any") && !t.is("some") && !t.is("all") {
			continue
		}
		op, opStart := comparisonBefore(query, toks, i)
		if op == "" || !subqueryAt(query, toks, i+1) {
			continue
		}
		var with string
		switch {
		case op == "=" && !t.is("all"):
			with = " IN "
		case (op == "<>" || op == "!=") && t.is("all"):
			with = " NOT IN "
		default:
			return "", mysql.NewSQLError(mysql.ERNotSupportedYet, "42000",
				"This version of Lockstep doesn't yet support '%s %s (subquery)': use IN, NOT IN or EXISTS", op, strings.ToUpper(t.word))
		}
		b.WriteString(query[last:opStart])
		b.WriteString(with)
		last = t.end
	}
	if last == 0 {
		return query, nil
	}
	b.WriteString(query[last:])
	return b.String(), nil
}

// comparisonBefore returns the comparison operator written just before
// token i (its punctuation adjacent), and where it starts; "" if none.
func comparisonBefore(query string, toks []token, i int) (string, int) {
	end := i - 1
	if end < 0 || toks[end].kind != tokOther {
		return "", 0
	}
	// The longest operator of up to three adjacent characters.
	first := end
	for first > 0 && end-first < 2 && toks[first-1].kind == tokOther && toks[first-1].end == toks[first].start {
		first--
	}
	for ; first <= end; first++ {
		switch op := query[toks[first].start:toks[end].end]; op {
		case "=", "<>", "!=", "<", ">", "<=", ">=", "<=>":
			return op, toks[first].start
		}
	}
	return "", 0
}

// subqueryAt says whether the tokens from i open a parenthesized
// subquery: "(" then SELECT, WITH or TABLE.
func subqueryAt(query string, toks []token, i int) bool {
	if i+1 >= len(toks) || toks[i].kind != tokOther || query[toks[i].start] != '(' {
		return false
	}
	next := toks[i+1]
	return next.is("select") || next.is("with") || next.is("table")
}
