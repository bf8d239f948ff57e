package sqlengine

// COMMIT and ROLLBACK with AND CHAIN or RELEASE, and completion_type.
//
// MySQL's AND CHAIN starts a new transaction as soon as the one that
// ended, with its access mode (READ ONLY or READ WRITE); RELEASE closes
// the connection once the client has the OK; completion_type CHAIN or
// RELEASE makes a plain COMMIT or ROLLBACK do the same (AND NO CHAIN and
// NO RELEASE say not to). The parser go-mysql-server uses reads the
// clauses and drops them, so the server answers these statements itself
// (TxnEndStatement, from its interceptors, before the fast path and
// go-mysql-server): the COMMIT or ROLLBACK runs as go-mysql-server runs
// it, then START TRANSACTION with the ended transaction's access mode;
// the server closes the connection for RELEASE. A prepared COMMIT or
// ROLLBACK reaches go-mysql-server's path, where one that would chain or
// release is refused (1235) rather than run as a plain one.
//
// The isolation level is the session's (SET TRANSACTION ISOLATION LEVEL
// without SESSION sets it for the session here), so the chained
// transaction has the ended one's.

import (
	"context"
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// completion_type's values.
const (
	completeNoChain = iota
	completeChain
	completeRelease
)

// completionType is the session's completion_type, read once until it is
// set again.
func (s *Session) completionType(ctx *sql.Context) int {
	if !s.completionKnown {
		s.completion, s.completionKnown = completeNoChain, true
		v, err := s.BaseSession.GetSessionVariable(ctx, "completion_type")
		if err == nil {
			switch strings.ToUpper(fmt.Sprint(v)) {
			case "CHAIN", "1":
				s.completion = completeChain
			case "RELEASE", "2":
				s.completion = completeRelease
			}
		}
	}
	return s.completion
}

// txnEnd is a COMMIT or ROLLBACK statement read from its words: which,
// and its AND [NO] CHAIN and [NO] RELEASE clauses (+1 yes, -1 no, 0 not
// given).
type txnEnd struct {
	rollback       bool
	chain, release int
}

// parseTxnEnd reads query as COMMIT or ROLLBACK [WORK] [AND [NO] CHAIN]
// [[NO] RELEASE]; ok is false for anything else (ROLLBACK TO SAVEPOINT,
// say).
func parseTxnEnd(query string) (e txnEnd, ok bool) {
	toks := lexTokens(query)
	for len(toks) > 0 && toks[len(toks)-1].text(query) == ";" {
		toks = toks[:len(toks)-1]
	}
	if len(toks) == 0 {
		return e, false
	}
	switch {
	case toks[0].is("commit"):
	case toks[0].is("rollback"):
		e.rollback = true
	default:
		return e, false
	}
	toks = toks[1:]
	if len(toks) > 0 && toks[0].is("work") {
		toks = toks[1:]
	}
	if len(toks) > 0 && toks[0].is("and") {
		e.chain = 1
		toks = toks[1:]
		if len(toks) > 0 && toks[0].is("no") {
			e.chain = -1
			toks = toks[1:]
		}
		if len(toks) == 0 || !toks[0].is("chain") {
			return e, false
		}
		toks = toks[1:]
	}
	if len(toks) > 0 {
		e.release = 1
		if toks[0].is("no") {
			e.release = -1
			toks = toks[1:]
		}
		if len(toks) == 0 || !toks[0].is("release") {
			return e, false
		}
		toks = toks[1:]
	}
	return e, len(toks) == 0
}

// MaybeTxnEnd is a cheap test that query may be a COMMIT or ROLLBACK.
func MaybeTxnEnd(query string) bool {
	return len(query) >= 6 && (strings.EqualFold(query[:6], "commit") || len(query) >= 8 && strings.EqualFold(query[:8], "rollback"))
}

// TxnEndStatement answers a COMMIT or ROLLBACK that chains a transaction
// or releases the connection (see above): handled is false for any other
// statement, a plain one under completion_type NO_CHAIN included;
// release asks the server to close the connection once the OK is sent.
func (e *Engine) TxnEndStatement(connID uint32, query string) (handled, release bool, err error) {
	v, ok := e.sessions.Load(connID)
	if !ok {
		return false, false, nil
	}
	s := v.(*Session)
	if q := strings.TrimRight(query, " \t\r\n;"); s.completionKnown && s.completion == completeNoChain &&
		(strings.EqualFold(q, "commit") || strings.EqualFold(q, "rollback")) {
		return false, false, nil // most COMMITs: no clause, nothing to chain
	}
	end, ok := parseTxnEnd(query)
	if !ok {
		return false, false, nil
	}
	ctx := sql.NewContext(context.Background(), sql.WithSession(s))
	if end.chain == 1 && end.release == 1 {
		// MySQL's grammar refuses it.
		return true, false, mysql.NewSQLError(mysql.ERParseError, "42000", "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near '%s'", query)
	}
	ct := s.completionType(ctx)
	chain := end.chain == 1 || ct == completeChain && end.chain != -1
	release = end.release == 1 || ct == completeRelease && end.release != -1
	if !chain && !release {
		return false, false, nil
	}
	readOnly := s.defaultReadOnly(ctx)
	if t, ok := ctx.GetTransaction().(*Transaction); ok && t != nil {
		readOnly = t.readOnly
	}
	// Said in full, so that go-mysql-server's path (checkTxnEnd) takes it
	// as the plain statement it is.
	stmt := "COMMIT AND NO CHAIN NO RELEASE"
	if end.rollback {
		stmt = "ROLLBACK AND NO CHAIN NO RELEASE"
	}
	if err := e.run(ctx, stmt); err != nil {
		return true, false, err
	}
	if release {
		return true, true, nil
	}
	next := "START TRANSACTION READ WRITE"
	if readOnly {
		next = "START TRANSACTION READ ONLY"
	}
	return true, false, e.run(ctx, next)
}

// run runs q, a statement with no result set, in ctx's session as
// go-mysql-server runs a client's.
func (e *Engine) run(ctx *sql.Context, q string) error {
	_, iter, _, err := e.GMS.Query(ctx.WithQuery(q), q)
	if err != nil {
		return err
	}
	_, err = sql.RowIterToRows(ctx, iter)
	return err
}

// chainOrRelease returns the clause ("AND CHAIN" or "RELEASE") that a
// COMMIT or ROLLBACK statement st, parsed from query, asks for, or "".
func chainOrRelease(st ast.Statement, query string) string {
	switch st.(type) {
	case *ast.Commit, *ast.Rollback:
	default:
		return ""
	}
	if !containsFold(query, "chain") && !containsFold(query, "release") {
		return ""
	}
	toks := lexTokens(query)
	for i, t := range toks {
		if !t.is("chain") && !t.is("release") {
			continue
		}
		if i > 0 && toks[i-1].is("no") {
			continue
		}
		if t.is("chain") {
			return "AND CHAIN"
		}
		return "RELEASE"
	}
	return ""
}

// checkTxnEnd refuses, on go-mysql-server's path (which a COMMIT or
// ROLLBACK that chains or releases reaches only prepared), one that would:
// it would run as a plain one.
func checkTxnEnd(ctx context.Context, st ast.Statement, query string) error {
	switch st.(type) {
	case *ast.Commit, *ast.Rollback:
	default:
		return nil
	}
	end, ok := parseTxnEnd(query)
	ct := completeNoChain
	if sctx, isSQL := ctx.(*sql.Context); isSQL {
		if s := sessionOf(sctx); s != nil {
			ct = s.completionType(sctx)
		}
	}
	var clause string
	switch {
	case !ok:
		clause = chainOrRelease(st, query) // a form parseTxnEnd does not read
	case end.chain == 1:
		clause = "AND CHAIN"
	case end.release == 1:
		clause = "RELEASE"
	case ct == completeChain && end.chain != -1, ct == completeRelease && end.release != -1:
		clause = "under completion_type " + [...]string{"NO_CHAIN", "CHAIN", "RELEASE"}[ct]
	}
	if clause != "" {
		return mysql.NewSQLError(mysql.ERNotSupportedYet, "42000",
			"This version of Lockstep doesn't yet support 'a prepared COMMIT or ROLLBACK %s': send it as text", clause)
	}
	return nil
}
