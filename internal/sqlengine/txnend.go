package sqlengine

// COMMIT and ROLLBACK with AND CHAIN or RELEASE. MySQL's AND CHAIN starts
// a new transaction with the same isolation level and access mode as the
// one that ended, and RELEASE closes the connection after it; the parser
// go-mysql-server uses reads both and drops them, so the statement would
// be a plain COMMIT or ROLLBACK: a client that asked for a chained
// transaction would run the rest of its work in autocommit. Both are
// refused with 1235 instead, on every path (the fast path leaves such a
// statement to the parser that refuses it). AND NO CHAIN and NO RELEASE,
// which say what a plain COMMIT does, are taken.

import (
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

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

// checkTxnEnd refuses a COMMIT or ROLLBACK with AND CHAIN or RELEASE.
func checkTxnEnd(st ast.Statement, query string) error {
	if clause := chainOrRelease(st, query); clause != "" {
		return mysql.NewSQLError(mysql.ERNotSupportedYet, "42000",
			"This version of Lockstep doesn't yet support 'COMMIT or ROLLBACK %s': end the transaction, then start the next with START TRANSACTION", clause)
	}
	return nil
}
