package sqlengine

import "testing"

// TestUpdateChangesCase: an UPDATE that changes only a string's case or
// accents changes the row, on the fast path (by primary
// key) and through go-mysql-server (by another column, and in a
// temporary table), under a case-insensitive collation.
func TestUpdateChangesCase(t *testing.T) {
	c := newHarness(t).conn()
	c.exec("CREATE DATABASE d")
	c.exec("USE d")
	c.exec("CREATE TABLE p (id INT PRIMARY KEY, v VARCHAR(5) COLLATE utf8mb4_0900_ai_ci, w INT)")
	c.exec("INSERT INTO p VALUES (1, 'b', 1), (2, 'c', 2), (3, 'e', 3)")
	c.exec("CREATE TEMPORARY TABLE tp (id INT PRIMARY KEY, v VARCHAR(5) COLLATE utf8mb4_0900_ai_ci)")
	c.exec("INSERT INTO tp VALUES (1, 'x')")
	for _, q := range []string{
		"UPDATE p SET v = 'B' WHERE id = 1",
		"UPDATE p SET v = 'C' WHERE v = 'c'",
		"UPDATE p SET v = 'é' WHERE w = 3",
		"UPDATE p SET v = UPPER(v)",
		"UPDATE tp SET v = 'X'",
	} {
		c.exec(q)
	}
	if got := c.rows("SELECT v FROM p ORDER BY id"); got != "B;C;É" {
		t.Fatalf("after the updates: %s", got)
	}
	if got := c.rows("SELECT v FROM tp"); got != "X" {
		t.Fatalf("the temporary table after the update: %s", got)
	}
}

// TestUpdateJoinChangesCase checks that a multi-table UPDATE changing
// only case changes the rows of every table it sets, LEFT JOIN included,
// and still leaves a row updated once.
func TestUpdateJoinChangesCase(t *testing.T) {
	c := newHarness(t).conn()
	c.exec("CREATE DATABASE d")
	c.exec("USE d")
	c.exec("CREATE TABLE a (id INT PRIMARY KEY, name VARCHAR(10))")
	c.exec("CREATE TABLE b (id INT PRIMARY KEY, name VARCHAR(10))")
	c.exec("INSERT INTO a VALUES (1, 'ann'), (2, 'bob'), (3, 'cy')")
	c.exec("INSERT INTO b VALUES (1, 'Ann'), (2, 'BOB')")
	c.exec("UPDATE a JOIN b ON a.id = b.id SET a.name = b.name")
	if got := c.rows("SELECT name FROM a ORDER BY id"); got != "Ann;BOB;cy" {
		t.Fatalf("after UPDATE ... JOIN: %s", got)
	}
	c.exec("UPDATE a LEFT JOIN b ON a.id = b.id SET a.name = UPPER(a.name), b.name = LOWER(b.name)")
	if got := c.rows("SELECT name FROM a ORDER BY id"); got != "ANN;BOB;CY" {
		t.Fatalf("a after UPDATE ... LEFT JOIN: %s", got)
	}
	if got := c.rows("SELECT name FROM b ORDER BY id"); got != "ann;bob" {
		t.Fatalf("b after UPDATE ... LEFT JOIN: %s", got)
	}
}
