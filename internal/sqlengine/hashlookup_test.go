package sqlengine

import "testing"

// A hash join whose right side stops early (WHERE EXISTS over a derived
// table: LIMIT 1 over cached results) leaves no rows cache behind, run
// after run, and answers as before.
func TestHashJoinLeavesNoCache(t *testing.T) {
	h := newHarness(t)
	c := h.conn()
	c.exec("CREATE DATABASE d")
	c.exec("USE d")
	c.exec("CREATE TABLE mytable (i INT PRIMARY KEY, s VARCHAR(20))")
	c.exec("CREATE TABLE emptytable (i INT PRIMARY KEY, s VARCHAR(20))")
	c.exec("INSERT INTO mytable VALUES (1, 'a'), (2, 'b')")
	for _, q := range []string{
		"SELECT i FROM mytable WHERE EXISTS (SELECT * FROM (SELECT count(*) AS u, 123 AS v FROM emptytable) uv) ORDER BY i",
		"SELECT i FROM mytable WHERE EXISTS (SELECT * FROM (SELECT count(*) AS u FROM mytable WHERE i > 0) uv) ORDER BY i",
	} {
		before := c.ctx.Memory.NumCaches()
		for range 20 {
			if got := c.rows(q); got != "1;2" {
				t.Fatalf("%s: %s", q, got)
			}
		}
		if n := c.ctx.Memory.NumCaches() - before; n != 0 {
			t.Fatalf("%s: %d caches left open after 20 runs", q, n)
		}
	}
}
