package mysqlerr

import (
	"strings"
	"testing"

	"github.com/dolthub/vitess/go/mysql"
)

func TestRestoreError(t *testing.T) {
	err := Restore(errFromText("You have an error in your SQL syntax; near 'x' (errno 1064) (sqlstate 42000)"))
	if !strings.Contains(err.Error(), "1064") || strings.Contains(err.Error(), "1105") {
		t.Fatalf("restored %v", err)
	}
	if err := Restore(errFromText("context canceled")); !strings.Contains(err.Error(), "1317") {
		t.Fatalf("cancelled statement: %v", err)
	}
	if err := Restore(errFromText("number of values does not match number of columns provided")); !strings.Contains(err.Error(), "1136") {
		t.Fatalf("column count mismatch: %v", err)
	}
	if err := Restore(errFromText("no database selected")); !strings.Contains(err.Error(), "1046") {
		t.Fatalf("no database selected: %v", err)
	}
	for _, c := range []struct {
		in   error
		want string
	}{
		{mysql.NewSQLError(mysql.ERDupEntry, "HY000", "Duplicate entry '1' for key 't.PRIMARY'"), "(errno 1062) (sqlstate 23000)"},
		{mysql.NewSQLError(mysql.ERNoSuchTable, "HY000", "table not found: t"), "(errno 1146) (sqlstate 42S02)"},
		{errFromText("table with name t already exists"), "table with name t already exists (errno 1050) (sqlstate 42S01)"},
		{errFromText(`column "x" could not be found in any table in scope`), "(errno 1054) (sqlstate 42S22)"},
		{errFromText(`column "x" is ambiguous`), "(errno 1105) (sqlstate HY000)"},
		{errFromText(`table "t" does not have column "x"`), "Unknown column 'x' in 't' (errno 1054) (sqlstate 42S22)"},
		{mysql.NewSQLError(mysql.ERBadFieldError, "42S22", `column "x" could not be found in any table in scope`), "Unknown column 'x' in 'field list' (errno 1054) (sqlstate 42S22)"},
		{mysql.NewSQLError(mysql.ERCantDropFieldOrKey, "42000", "error: can't drop 'k'; check that column/key exists"), "Can't DROP 'k'; check that column/key exists (errno 1091) (sqlstate 42000)"},
		{errFromText("cannot drop table `p` as it is referenced in foreign key `fk`"), "(errno 3730) (sqlstate HY000)"},
		{errFromText("duplicate foreign key constraint name `fk`"), "(errno 1826) (sqlstate HY000)"},
		{errFromText("cannot add or update a child row - Foreign key violation on fk: `fk`, table: `c`, referenced table: `p`, key: `[1]` (errno 1452) (sqlstate HY000)"), "(errno 1452) (sqlstate 23000)"},
		{errFromText("database does not support temporary tables"), "doesn't yet support 'temporary tables' (errno 1235) (sqlstate 42000)"},
		{errFromText(`Incorrect string value: '\xE9t\xE9' for column 's' at row 1`), `Incorrect string value: '\xE9t\xE9' for column 's' at row 1 (errno 1366) (sqlstate HY000)`},
		{errFromText("TIME length not yet supported"), "doesn't yet support 'TIME with fractional seconds (TIME(n))' (errno 1235) (sqlstate 42000)"},
		{mysql.NewSQLError(mysql.ERLockWaitTimeout, "HY000", "Lock wait timeout exceeded"), "(errno 1205) (sqlstate HY000)"},
		{errFromText("300 out of range for tinyint"), "Out of range value for column: 300 does not fit in tinyint (errno 1264) (sqlstate 22003)"},
		{errFromText("-1 out of range for int unsigned"), "(errno 1264) (sqlstate 22003)"},
		{errFromText("subquery field index out of range for expression x: only 1 columns available"), "(errno 1105) (sqlstate HY000)"},
		{errFromText(`ambiguous column name "id", it's present in all these tables: [p a]`), "Column 'id' is ambiguous (errno 1052) (sqlstate 23000)"},
		{errFromText("duplicate column name: `x`"), "Duplicate column name 'x' (errno 1060) (sqlstate 42S21)"},
		{errFromText("invalid identifier: `" + strings.Repeat("a", 65) + "`"), "Identifier name '" + strings.Repeat("a", 65) + "' is too long (errno 1059) (sqlstate 42000)"},
		{errFromText(`Column "n" already exists`), "Duplicate column name 'n' (errno 1060) (sqlstate 42S21)"},
		{errFromText("Data truncated for column 'e' at row 1"), "Data truncated for column 'e' at row 1 (errno 1265) (sqlstate 01000)"},
		{errFromText("Incorrect datetime value: '2020-13-45'"), "(errno 1292) (sqlstate 22007)"},
		{errFromText("incompatible type for default value: Truncated incorrect int value: abc"), "(errno 1067) (sqlstate 42000)"},
		{mysql.NewSQLError(1242, "HY000", "the subquery returned more than 1 row"), "Subquery returns more than 1 row (errno 1242) (sqlstate 21000)"},
	} {
		if got := Restore(c.in).Error(); !strings.HasSuffix(got, c.want) {
			t.Errorf("%v restored as %q, want ...%q", c.in, got, c.want)
		}
	}
	plain := errFromText("something else")
	if Restore(plain) != plain {
		t.Fatal("an ordinary 1105 was changed")
	}
	dup := mysql.NewSQLError(mysql.ERDupEntry, "HY000", "duplicate unique key given: Duplicate entry '1' for key 't.u'")
	if got := Restore(dup).Error(); got != "Duplicate entry '1' for key 't.u' (errno 1062) (sqlstate 23000)" {
		t.Fatalf("duplicate key: %q", got)
	}
	// A numbered error with go-mysql-server's SQLSTATE and wording.
	ro := mysql.NewSQLError(ReadOnlyTransaction, "HY000", "cannot execute statement in a READ ONLY transaction")
	if got := Restore(ro).Error(); got != "Cannot execute statement in a READ ONLY transaction. (errno 1792) (sqlstate 25006)" {
		t.Fatalf("read-only transaction: %q", got)
	}
}

// errFromText is a generic 1105 error carrying msg.
func errFromText(msg string) error {
	return mysql.NewSQLError(mysql.ERUnknownError, "HY000", "%s", msg)
}
