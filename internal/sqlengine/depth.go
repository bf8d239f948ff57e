package sqlengine

import (
	"errors"

	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

// maxStatementDepth bounds how deeply a statement's syntax tree may nest.
// go-mysql-server's analysis takes time quadratic in the depth of a chain
// such as 1+1+...+1 (measured: 10,000 terms take about 5 s of CPU,
// 100,000 terms over two minutes and most of a gigabyte), so one statement
// could hold a server's CPU. MySQL answers a statement too deep for its
// stack with 1436; so does Lockstep past this depth, which is far beyond
// what applications write (an ORM's OR chain of 5,000 terms is half of it).
const maxStatementDepth = 10000

const erStackOverrun = 1436 // ER_STACK_OVERRUN_NEED_MORE

var errTooDeep = errors.New("too deep")

// checkDepth refuses a statement whose syntax tree nests deeper than
// maxStatementDepth. Each level takes at least one byte of text (~~~1), so
// only a statement longer than the limit can exceed it: shorter ones, all
// the usual ones, are not walked (the walk costs about a third of a
// parse). It stops walking as soon as it knows.
func checkDepth(st ast.Statement, queryLen int) error {
	if st != nil && queryLen > maxStatementDepth && depthExceeds(st, 0) {
		return mysql.NewSQLError(erStackOverrun, "HY000", "Thread stack overrun: the statement's expressions nest more than %d levels deep", maxStatementDepth)
	}
	return nil
}

// depthExceeds reports whether the tree under n, at depth d, goes deeper
// than maxStatementDepth.
func depthExceeds(n ast.SQLNode, d int) bool {
	if d > maxStatementDepth {
		return true
	}
	self := true
	err := ast.Walk(func(c ast.SQLNode) (bool, error) {
		if self { // Walk visits n itself first: go on to its children
			self = false
			return true, nil
		}
		if depthExceeds(c, d+1) {
			return false, errTooDeep
		}
		return false, nil // c's subtree was measured by the call above
	}, n)
	return err != nil
}
