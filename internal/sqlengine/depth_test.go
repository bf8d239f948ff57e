package sqlengine

import (
	"strings"
	"testing"

	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
)

func TestStatementDepthLimit(t *testing.T) {
	check := func(q string) error {
		t.Helper()
		st, err := ast.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		return checkDepth(st, len(q))
	}
	chain := func(n int, op string) string { return "SELECT 1" + strings.Repeat(op+"1", n) }
	for _, q := range []string{
		chain(5000, "+"),
		"SELECT * FROM t WHERE a = 0" + strings.Repeat(" OR a = 1", 4000),
		"SELECT * FROM t WHERE a IN (" + strings.Repeat("1,", 50000) + "1)", // wide, not deep
	} {
		if err := check(q); err != nil {
			t.Fatalf("%.60s...: %v", q, err)
		}
	}
	// One byte a level: ~~~...~1.
	for _, q := range []string{chain(maxStatementDepth+10, "+"), "SELECT " + strings.Repeat("~", maxStatementDepth+10) + "1"} {
		err := check(q)
		var se *mysql.SQLError
		if !asSQLError(err, &se) || se.Num != erStackOverrun {
			t.Fatalf("%.30s... deeper than the limit: %v", q, err)
		}
	}
}

func asSQLError(err error, se **mysql.SQLError) bool {
	e, ok := err.(*mysql.SQLError)
	*se = e
	return ok
}
