package sqlengine

import (
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
)

// TestSystemTables: a registered system table is read through SQL, listed,
// computed on each read, and cannot be written or shadowed.
func TestSystemTables(t *testing.T) {
	h := newHarness(t)
	n := int64(0)
	h.e.AddSystemTable("performance_schema", "things", sql.Schema{{Name: "A", Type: types.Int64}}, func(*sql.Context) ([]sql.Row, error) {
		n++
		return []sql.Row{{n}, {n * 10}}, nil
	})
	c := h.conn()
	if got := c.rows("SELECT A FROM performance_schema.things ORDER BY A"); got != "1;10" {
		t.Fatalf("first read: %s", got)
	}
	if got := c.rows("SELECT SUM(A) FROM performance_schema.things"); got != "22" {
		t.Fatalf("second read: %s", got)
	}
	if got := c.rows("SHOW TABLES FROM performance_schema"); got != "things" {
		t.Fatalf("tables: %s", got)
	}
	if got := c.rows("SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = 'performance_schema'"); got != "1" {
		t.Fatalf("schemata: %s", got)
	}
	for _, q := range []string{
		"INSERT INTO performance_schema.things VALUES (5)",
		"CREATE DATABASE performance_schema",
		"CREATE TABLE performance_schema.x (id INT PRIMARY KEY)",
	} {
		if _, err := c.query(q); err == nil {
			t.Fatalf("%s: accepted", q)
		}
	}
}
