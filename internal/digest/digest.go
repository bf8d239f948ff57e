// Package digest turns statements into digests and keeps the summary of
// the statements run per digest, as MySQL's performance_schema does in
// events_statements_summary_by_digest (what PMM's query analytics and
// mysqld_exporter's perf_schema.eventsstatements collectors read).
//
// A statement's digest text is its tokens with every literal replaced by
// ?, lists of literals by (...), repeated rows of literals by (...) /* ,
// ... */, identifiers quoted with backquotes, keywords in capitals, one
// space between tokens and no comments: SELECT `c` FROM `t` WHERE `id` =
// ?. Its digest is the hex SHA-256 of that text (MySQL hashes its token
// array instead: the texts match MySQL's in form, the hashes are
// Lockstep's own, stable across servers and restarts).
//
// The package knows nothing of how statements run: the server times them
// and hands the figures to Summary.Record.
package digest

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// operators are the tokens of more than one character the tokenizer
// returns without their text.
var operators = map[int]string{
	ast.LE: "<=", ast.GE: ">=", ast.NE: "!=", ast.NULL_SAFE_EQUAL: "<=>",
	ast.SHIFT_LEFT: "<<", ast.SHIFT_RIGHT: ">>", ast.ASSIGNMENT_OP: ":=",
	ast.JSON_EXTRACT_OP: "->", ast.JSON_UNQUOTE_EXTRACT_OP: "->>",
	ast.OR: "OR", ast.AND: "AND",
}

// Of returns the digest text of query, cut at maxLen bytes ("..." marks
// a cut), and its digest.
func Of(query string, maxLen int) (text, digest string) {
	toks := tokens(query)
	var b strings.Builder
	for i, t := range toks {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t)
		if maxLen > 0 && b.Len() > maxLen {
			break
		}
	}
	text = b.String()
	if maxLen > 0 && len(text) > maxLen {
		text = text[:maxLen] + "..."
	}
	sum := sha256.Sum256([]byte(text))
	return text, hex.EncodeToString(sum[:])
}

// tokens are query's tokens as the digest text writes them, with lists
// of literals folded.
func tokens(query string) []string {
	tkn := ast.NewStringTokenizer(query)
	var out []string
	prev := 0 // the previous token's type
	for {
		typ, val := tkn.Scan()
		switch typ {
		case 0, ast.LEX_ERROR:
			return out
		case ast.COMMENT:
			continue
		case ';':
			if len(out) > 0 {
				out = append(out, ";")
			}
			prev = typ
			continue
		}
		var t string
		switch {
		case isLiteral(typ, prev):
			t = "?"
		case typ == ast.ID && len(val) > 0 && val[0] == '@':
			t = string(val) // a variable
		case typ == ast.ID:
			t = "`" + strings.ReplaceAll(string(val), "`", "``") + "`"
		case typ < 256:
			t = string(rune(typ))
		case operators[typ] != "":
			t = operators[typ]
		case len(val) > 0:
			t = strings.ToUpper(string(val))
		default:
			t = strings.ToUpper(ast.KeywordString(typ))
		}
		out = append(out, t)
		out = fold(out)
		prev = typ
	}
}

// isLiteral says whether a token of type typ, after one of type prev, is
// a value the digest replaces by ?: NULL is one but after IS (IS NULL,
// IS NOT NULL), as in MySQL.
func isLiteral(typ, prev int) bool {
	switch typ {
	case ast.STRING, ast.INTEGRAL, ast.FLOAT, ast.HEX, ast.HEXNUM, ast.BIT_LITERAL,
		ast.VALUE_ARG, ast.LIST_ARG, ast.TRUE, ast.FALSE:
		return true
	case ast.NULL:
		return prev != ast.IS && prev != ast.NOT
	}
	return false
}

// fold folds the end of toks: ( ? , ? ... ) into (...), and a row of
// values following another, "(...) , (...)", into (...) /* , ... */. A
// sign before a number is part of the literal: "- ?" after an operator
// or a comma is ?.
func fold(toks []string) []string {
	n := len(toks)
	if n >= 2 && toks[n-1] == "?" && (toks[n-2] == "-" || toks[n-2] == "+") && (n == 2 || takesValue(toks[n-3])) {
		return append(toks[:n-2], "?")
	}
	if toks[n-1] != ")" {
		return toks
	}
	// Find the matching "(" with only values and commas between.
	i := n - 2
	values := 0
	for ; i >= 0 && toks[i] != "("; i-- {
		switch toks[i] {
		case "?", "(?)", "(...)":
			values++
		case ",":
		default:
			return toks
		}
	}
	if i < 0 || values == 0 {
		return toks
	}
	row := "(...)"
	if values == 1 && n-i == 3 && toks[i+1] == "?" {
		row = "(?)"
	}
	toks = append(toks[:i], row)
	// "(...) , (...)" are rows of values.
	if m := len(toks); m >= 3 && toks[m-2] == "," && strings.TrimSuffix(toks[m-3], rowsMark) == row {
		toks = append(toks[:m-3], row+rowsMark)
	}
	return toks
}

// rowsMark follows the first of several rows of values.
const rowsMark = " /* , ... */"

// takesValue says whether a value may follow token t (so that a sign
// after it is a literal's).
func takesValue(t string) bool {
	switch t {
	case "(", ",", "=", "<", ">", "<=", ">=", "!=", "<>", "<=>", "+", "-", "*", "/", "%",
		"AND", "OR", "NOT", "IN", "BETWEEN", "LIKE", "SELECT", "WHERE", "VALUES", "SET",
		"THEN", "ELSE", "WHEN", "LIMIT", "OFFSET", "RETURN", "IS", "DIV", "MOD":
		return true
	}
	return false
}
