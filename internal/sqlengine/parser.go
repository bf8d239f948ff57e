package sqlengine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// safeParser is go-mysql-server's parser with its panics turned into
// MySQL's syntax error (1064). The vitess parser panics on some inputs
// (SELECT ” under ANSI_QUOTES, found by fuzzing); the protocol layer
// recovers, but only by dropping the client's connection.
type safeParser struct{ sql.Parser }

func parserPanic(r any) error {
	return mysql.NewSQLError(mysql.ERParseError, mysql.SSClientError, "You have an error in your SQL syntax; the parser failed on this statement (%v)", r)
}

func (p safeParser) ParseSimple(query string) (st ast.Statement, err error) {
	defer func() {
		if r := recover(); r != nil {
			st, err = nil, parserPanic(r)
		}
	}()
	return p.Parser.ParseSimple(query)
}

func (p safeParser) Parse(ctx *sql.Context, query string, multi bool) (st ast.Statement, q, rest string, err error) {
	defer func() {
		if r := recover(); r != nil {
			st, q, rest, err = nil, "", "", parserPanic(r)
		}
	}()
	return p.Parser.Parse(ctx, query, multi)
}

func (p safeParser) ParseWithOptions(ctx context.Context, query string, delimiter rune, multi bool, options ast.ParserOptions) (st ast.Statement, q, rest string, err error) {
	defer func() {
		if r := recover(); r != nil {
			st, q, rest, err = nil, "", "", parserPanic(r)
		}
	}()
	return p.Parser.ParseWithOptions(ctx, query, delimiter, multi, options)
}

func (p safeParser) ParseOneWithOptions(ctx context.Context, query string, options ast.ParserOptions) (st ast.Statement, n int, err error) {
	defer func() {
		if r := recover(); r != nil {
			st, n, err = nil, 0, parserPanic(r)
		}
	}()
	return p.Parser.ParseOneWithOptions(ctx, query, options)
}

// ParseOne is ast.ParseOneWithOptions with its panics turned into errors,
// for the statements Lockstep parses itself.
func ParseOne(ctx context.Context, query string, options ast.ParserOptions) (st ast.Statement, n int, err error) {
	defer func() {
		if r := recover(); r != nil {
			st, n, err = nil, 0, fmt.Errorf("parser: %v", r)
		}
	}()
	return ast.ParseOneWithOptions(ctx, query, options)
}

// MaxPreparedParams is the most placeholders a prepared statement may
// have, MySQL's: vitess counts them in 16 bits, and past 65,535 the
// count would wrap around. (From 65,529 on, the protocol layer reads
// executions itself: protocol/manyparams.go.)
const MaxPreparedParams = 65535

// CheckPrepare returns the text vitess is to parse for connection
// connID's COM_STMT_PREPARE of query, or the error to answer it with; do
// says the statement is a DO, given as the SELECT of its expressions
// (do.go): the server prepares it with no result columns and answers
// each execution with an OK.
//
// vitess parses prepared statements itself before Lockstep's parser sees
// them, so the text rewrites its parser cannot do without (string
// literals read as MySQL reads them, quoted non-ASCII identifiers,
// quantified comparisons read as IN and NOT IN) are made here. The text
// is then parsed as vitess will (with the session's sql_mode), and
// refused if it does not parse (1064, which vitess would answer as
// 1105), if the parser panics (vitess parses outside any recover, so the
// panic would drop the connection), if it has a RETURNING clause (1064,
// as in MySQL) or if the statement has more placeholders than vitess
// handles (1390).
func (e *Engine) CheckPrepare(connID uint32, query string) (text string, do bool, err error) {
	text, _ = e.ClientText(connID, query) // clienttext.go
	text, do = rewriteDo(text)
	text = QuoteNonASCIIIdents(text)
	if text, err = rewriteQuantified(text); err != nil {
		return "", false, err
	}
	ctx, ok := e.SessionContext(connID)
	if !ok {
		return text, do, nil
	}
	defer func() {
		if r := recover(); r != nil {
			text, do, err = "", false, parserPanic(r)
		}
	}()
	st, perr := ast.ParseWithOptions(ctx, text, ParserOptions(ctx))
	if m := forShare.FindStringSubmatch(text); perr != nil && m != nil {
		// MySQL 8's FOR SHARE, which the grammar lacks: vitess keeps the
		// text it parses as the statement, so it is given LOCK IN SHARE
		// MODE, which cannot carry NOWAIT or SKIP LOCKED.
		if m[1] != "" {
			return "", false, mysql.NewSQLError(mysql.ERNotSupportedYet, "42000",
				"This version of Lockstep doesn't yet support 'FOR SHARE %s' in a statement prepared with the binary protocol: use FOR UPDATE %[1]s, or send the statement as text", strings.ToUpper(strings.Join(strings.Fields(m[1]), " ")))
		}
		shared := forShare.ReplaceAllString(text, " LOCK IN SHARE MODE")
		if st2, err2 := ast.ParseWithOptions(ctx, shared, ParserOptions(ctx)); err2 == nil {
			text, st, perr = shared, st2, nil
		}
	}
	if perr != nil && !errors.Is(perr, ast.ErrEmpty) {
		// vitess would answer its own parse's error as 1105.
		return "", false, syntaxError(perr)
	}
	if perr != nil || st == nil {
		return text, do, nil
	}
	if err := refuseReturning(st, text); err != nil { // returning.go
		return "", false, err
	}
	n := 0
	_ = ast.Walk(func(node ast.SQLNode) (bool, error) {
		if v, ok := node.(*ast.SQLVal); ok && len(v.Val) >= 2 && v.Val[0] == ':' && v.Val[1] == 'v' {
			n++
		}
		return true, nil
	}, st)
	if n > MaxPreparedParams {
		return "", false, mysql.NewSQLError(erPSManyParam, "HY000", "Prepared statement contains too many placeholders (%d; at most %d)", n, MaxPreparedParams)
	}
	return text, do, nil
}

// erPSManyParam is ER_PS_MANY_PARAM.
const erPSManyParam = 1390
