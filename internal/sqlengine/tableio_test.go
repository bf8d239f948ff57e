package sqlengine

import "testing"

// TestTableIO: performance_schema's table I/O summaries count a fetch per
// row read under the index it was read by (none for a whole-table scan
// or a table without a primary key), and each row written; TRUNCATE
// TABLE starts them again.
func TestTableIO(t *testing.T) {
	h := newHarness(t)
	h.e.EnableTableIO()
	c := h.conn()
	c.exec("CREATE DATABASE io")
	c.exec("CREATE TABLE io.t (id INT PRIMARY KEY, k INT, v VARCHAR(10), KEY kk (k))")
	c.exec("CREATE TABLE io.n (a INT)")
	// Each statement ends as the server ends it (Engine.StatementEnd).
	s := sessionOf(c.ctx)
	run := func(q string) {
		c.rows(q)
		s.flushIO()
		s.flushTableUse()
	}
	run("INSERT INTO io.t VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 3, 'c')")
	run("INSERT INTO io.n VALUES (1), (2)")
	run("SELECT * FROM io.t WHERE id = 2")            // 1 by PRIMARY
	run("SELECT * FROM io.t WHERE k BETWEEN 1 AND 2") // 2 by kk
	run("SELECT * FROM io.t")                         // 3, no index
	run("SELECT * FROM io.n")                         // 2, no index
	run("UPDATE io.t SET v = 'z' WHERE id = 1")       // 1 by PRIMARY, 1 update
	run("DELETE FROM io.t WHERE id = 3")              // 1 by PRIMARY, 1 delete
	byTable := "SELECT OBJECT_TYPE, OBJECT_NAME, COUNT_STAR, COUNT_READ, COUNT_WRITE, COUNT_FETCH, COUNT_INSERT, COUNT_UPDATE, COUNT_DELETE, SUM_TIMER_WAIT, MAX_TIMER_FETCH FROM performance_schema.table_io_waits_summary_by_table WHERE OBJECT_SCHEMA = 'io' ORDER BY OBJECT_NAME"
	if got, want := c.rows(byTable), "TABLE,n,4,2,2,2,2,0,0,0,0;TABLE,t,13,8,5,8,3,1,1,0,0"; got != want {
		t.Errorf("by table:\n%s\nwant\n%s", got, want)
	}
	byIndex := "SELECT OBJECT_NAME, INDEX_NAME, COUNT_FETCH, COUNT_INSERT, COUNT_UPDATE, COUNT_DELETE FROM performance_schema.table_io_waits_summary_by_index_usage WHERE OBJECT_SCHEMA = 'io' ORDER BY OBJECT_NAME, INDEX_NAME"
	if got, want := c.rows(byIndex), "n,<nil>,2,2,0,0;t,<nil>,3,3,1,1;t,PRIMARY,3,0,0,0;t,kk,2,0,0,0"; got != want {
		t.Errorf("by index:\n%s\nwant\n%s", got, want)
	}
	// Table locks: one per statement and table, a write lock for a
	// statement that wrote it. t: the insert, the update and the delete
	// wrote it, the point select, the range and the scan read it; n: one
	// insert, one scan.
	byLock := "SELECT OBJECT_NAME, COUNT_STAR, COUNT_READ, COUNT_WRITE, COUNT_READ_EXTERNAL, COUNT_WRITE_EXTERNAL, COUNT_READ_NORMAL, SUM_TIMER_WAIT FROM performance_schema.table_lock_waits_summary_by_table WHERE OBJECT_SCHEMA = 'io' ORDER BY OBJECT_NAME"
	if got, want := c.rows(byLock), "n,2,1,1,1,1,0,0;t,6,3,3,3,3,0,0"; got != want {
		t.Errorf("table locks: %s, want %s", got, want)
	}
	c.exec("TRUNCATE TABLE performance_schema.table_io_waits_summary_by_index_usage")
	if got, want := c.rows("SELECT SUM(COUNT_STAR) FROM performance_schema.table_io_waits_summary_by_table WHERE OBJECT_SCHEMA = 'io'"), "0"; got != want {
		t.Errorf("after TRUNCATE TABLE: %s rows counted, want %s", got, want)
	}
}
