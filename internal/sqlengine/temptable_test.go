package sqlengine

import (
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/lockstepdb/lockstep/internal/mysqlerr"
)

// TestTemporaryTables: a temporary table is the session's own, hides a
// table of the same name, keeps its keys unique, rolls back with the
// statement, savepoint or transaction that changed it, goes with DROP or
// the session, and never reaches the binlog.
func TestTemporaryTables(t *testing.T) {
	fs := vfs.NewCrashableMem()
	h := openHarness(t, fs)
	c := h.conn()
	c.exec("CREATE DATABASE d")
	c.exec("USE d")
	c.exec("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))")
	c.exec("INSERT INTO t VALUES (1, 'perm')")
	c.exec("CREATE TEMPORARY TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(10), u INT, UNIQUE KEY uu (u), KEY vv (v))")

	// The session sees its temporary table (the fast path's point read
	// too); another session sees the permanent one.
	other := h.conn()
	other.exec("USE d")
	if got := c.rows("SELECT * FROM t WHERE id = 1"); got != "" {
		t.Fatalf("the temporary table starts with rows: %s", got)
	}
	c.exec("INSERT INTO t (v, u) VALUES ('a', 1), ('b', 2)")
	perm := "1,perm"
	check := func(want string) {
		t.Helper()
		if got := c.rows("SELECT id, v, u FROM t"); got != want {
			t.Fatalf("temporary table: %s, want %s", got, want)
		}
		if got := other.rows("SELECT * FROM t"); got != perm {
			t.Fatalf("another session reads %s, want the permanent table", got)
		}
	}
	check("1,a,1;2,b,2")

	// Unique keys, and a failed statement changes nothing.
	for q, code := range map[string]int{
		"INSERT INTO t (id, v, u) VALUES (1, 'x', 9)":    1062,
		"INSERT INTO t (v, u) VALUES ('c', 3), ('d', 1)": 1062,
		"UPDATE t SET u = 1 WHERE id = 2":                1062,
	} {
		_, err := c.query(q)
		if err != nil {
			err = mysqlerr.Restore(sql.CastSQLError(err))
		}
		if errno(err) != code {
			t.Fatalf("%s: %v, want %d", q, err, code)
		}
		check("1,a,1;2,b,2")
	}
	c.exec("INSERT INTO t (v, u) VALUES ('z', 1) ON DUPLICATE KEY UPDATE v = 'dup'")
	c.exec("REPLACE INTO t (id, v, u) VALUES (2, 'rep', 2)")
	check("1,dup,1;2,rep,2")

	// Transactions and savepoints.
	c.exec("BEGIN")
	c.exec("INSERT INTO t (id, v, u) VALUES (5, 'c', 5)")
	c.exec("UPDATE t SET v = 'B' WHERE id = 2")
	c.exec("DELETE FROM t WHERE id = 1")
	c.exec("ROLLBACK")
	check("1,dup,1;2,rep,2")
	c.exec("BEGIN")
	c.exec("INSERT INTO t (id, v, u) VALUES (6, 's1', 6)")
	c.exec("SAVEPOINT sp")
	c.exec("INSERT INTO t (id, v, u) VALUES (7, 's2', 7)")
	c.exec("DELETE FROM t WHERE id = 1")
	c.exec("ROLLBACK TO SAVEPOINT sp")
	c.exec("COMMIT")
	check("1,dup,1;2,rep,2;6,s1,6")
	// A transaction over both kinds of table rolls both back.
	c.exec("BEGIN")
	c.exec("INSERT INTO t (id, v, u) VALUES (8, 'x', 8)")
	other.exec("INSERT INTO t VALUES (2, 'perm2')")
	perm = "1,perm;2,perm2"
	c.exec("DELETE FROM d.t WHERE id = 6")
	c.exec("ROLLBACK")
	check("1,dup,1;2,rep,2;6,s1,6")

	if got := c.rows("SHOW CREATE TABLE t"); got != "t,CREATE TEMPORARY TABLE `t` (\n  `id` int NOT NULL AUTO_INCREMENT,\n  `v` varchar(10),\n  `u` int,\n  PRIMARY KEY (`id`),\n  UNIQUE KEY `uu` (`u`),\n  KEY `vv` (`v`)\n) ENGINE=InnoDB AUTO_INCREMENT=9 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci" {
		t.Fatalf("SHOW CREATE TABLE: %q", got)
	}
	if got := c.rows("SHOW TABLES"); got != "t" {
		t.Fatalf("SHOW TABLES: %s", got)
	}

	// CREATE TEMPORARY TABLE ... SELECT and LIKE.
	c.exec("CREATE TEMPORARY TABLE cp SELECT id, v FROM t WHERE id < 3")
	if got := c.rows("SELECT * FROM cp ORDER BY id"); got != "1,dup;2,rep" {
		t.Fatalf("CREATE TEMPORARY TABLE ... SELECT: %s", got)
	}
	if _, err := other.query("SELECT * FROM cp"); err == nil {
		t.Fatal("another session reads the temporary table")
	}

	// DROP drops the temporary table first; the permanent one is back.
	c.exec("DROP TEMPORARY TABLE t")
	if _, err := c.query("DROP TEMPORARY TABLE t"); errno(err) != 1051 {
		t.Fatalf("DROP TEMPORARY TABLE of a permanent table: %v, want 1051", err)
	}
	// IF EXISTS passes over it with a note, and drops nothing.
	c.exec("DROP TEMPORARY TABLE IF EXISTS t")
	if got := c.rows("SHOW WARNINGS"); got != "Note,1051,Unknown table 't'" {
		t.Fatalf("DROP TEMPORARY TABLE IF EXISTS of a permanent table: %s", got)
	}
	if got := c.rows("SELECT * FROM t ORDER BY id"); got != "1,perm;2,perm2" {
		t.Fatalf("after DROP TEMPORARY TABLE: %s", got)
	}

	// Nothing of the temporary tables is in the binlog: a server rebuilt
	// from it has the permanent table alone.
	h.close()
	r := replayFromBinlog(t, fs, "d")
	if got := r.rows("SHOW TABLES"); got != "t" {
		t.Fatalf("tables rebuilt from the binlog: %s", got)
	}
	if got := r.rows("SELECT * FROM t ORDER BY id"); got != "1,perm;2,perm2" {
		t.Fatalf("rows rebuilt from the binlog: %s", got)
	}
}

// TestTemporaryTableGoesWithSession: a session's temporary tables are not
// another session's, even under the same name, and a new session starts
// without any.
func TestTemporaryTableGoesWithSession(t *testing.T) {
	h := newHarness(t)
	a, b := h.conn(), h.conn()
	a.exec("CREATE DATABASE d")
	for _, c := range []*conn{a, b} {
		c.exec("USE d")
		c.exec("CREATE TEMPORARY TABLE x (id INT PRIMARY KEY)")
	}
	a.exec("INSERT INTO x VALUES (1)")
	b.exec("INSERT INTO x VALUES (2), (3)")
	if ga, gb := a.rows("SELECT * FROM x"), b.rows("SELECT * FROM x"); ga != "1" || gb != "2;3" {
		t.Fatalf("sessions read %s and %s", ga, gb)
	}
	c := h.conn()
	c.exec("USE d")
	if _, err := c.query("SELECT * FROM x"); err == nil {
		t.Fatal("a new session reads another's temporary table")
	}
	// RENAME TABLE renames it in the session alone.
	a.exec("RENAME TABLE x TO y")
	if got := a.rows("SELECT * FROM y"); got != "1" {
		t.Fatalf("the renamed temporary table: %s", got)
	}
	a.exec("ALTER TABLE y RENAME TO x")
	// LOCK TABLES takes a temporary table (and locks nothing for it).
	a.exec("LOCK TABLES x WRITE")
	a.exec("INSERT INTO x VALUES (4)")
	a.exec("UNLOCK TABLES")
	// DROP TABLE (without TEMPORARY) of a temporary table with no
	// permanent one of its name.
	a.exec("DROP TABLE x")
	if _, err := a.query("SELECT * FROM x"); err == nil {
		t.Fatal("a dropped temporary table is still read")
	}
	if got := b.rows("SELECT * FROM x"); got != "2;3" {
		t.Fatalf("the other session's temporary table after the drop: %s", got)
	}
}
