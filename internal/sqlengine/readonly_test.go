package sqlengine

import (
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
)

// TestReadOnlyTransactions: START TRANSACTION READ ONLY and the session's
// transaction_read_only refuse writes and DDL with 1792; READ WRITE, or
// the default, allow them.
func TestReadOnlyTransactions(t *testing.T) {
	h := newHarness(t)
	c := h.conn()
	c.exec("CREATE DATABASE d")
	c.exec("USE d")
	c.exec("CREATE TABLE t (id INT PRIMARY KEY)")
	refused := func(q string) {
		t.Helper()
		if _, err := c.query(q); sqlErrNum(sql.CastSQLError(err)) != 1792 {
			t.Errorf("%s: %v, want 1792", q, err)
		}
	}
	c.exec("START TRANSACTION READ ONLY")
	refused("INSERT INTO t VALUES (1)")
	refused("UPDATE t SET id = 2")
	refused("DELETE FROM t")
	if got := c.rows("SELECT COUNT(*) FROM t"); got != "0" {
		t.Fatalf("reads in a READ ONLY transaction: %s", got)
	}
	c.exec("COMMIT")
	c.exec("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
	refused("INSERT INTO t VALUES (1)")
	c.exec("ROLLBACK")

	c.exec("SET SESSION TRANSACTION READ ONLY")
	refused("INSERT INTO t VALUES (1)")
	refused("DROP TABLE t")
	refused("CREATE TABLE u (id INT PRIMARY KEY)")
	c.exec("BEGIN")
	refused("INSERT INTO t VALUES (1)")
	c.exec("COMMIT")
	c.exec("START TRANSACTION READ WRITE")
	c.exec("INSERT INTO t VALUES (1)")
	c.exec("COMMIT")
	c.exec("SET SESSION TRANSACTION READ WRITE")
	c.exec("INSERT INTO t VALUES (2)")
	c.exec("BEGIN")
	c.exec("INSERT INTO t VALUES (3)")
	c.exec("COMMIT")
	if got := c.rows("SELECT COUNT(*) FROM t"); got != "3" {
		t.Fatalf("rows: %s", got)
	}
	// DDL commits the READ ONLY transaction first, as in MySQL.
	c.exec("START TRANSACTION READ ONLY")
	c.exec("CREATE TABLE v (id INT PRIMARY KEY)")
}
