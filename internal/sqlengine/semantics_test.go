package sqlengine

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/lockstepdb/lockstep/internal/binlog"
	"github.com/lockstepdb/lockstep/internal/storage"
)

// errno is the MySQL error number a client would see for err.
func errno(err error) int {
	if err == nil {
		return 0
	}
	se := sql.CastSQLError(err)
	// Restore numbers GMS folded into 1105 (as the server's handler does).
	if m := strings.LastIndex(se.Message, "(errno "); se.Num == mysql.ERUnknownError && m >= 0 {
		var n int
		fmt.Sscanf(se.Message[m:], "(errno %d)", &n)
		return n
	}
	return int(se.Num)
}

func setupKV(t *testing.T) (*harness, *conn) {
	h := newHarness(t)
	c := h.conn()
	c.exec("CREATE DATABASE d")
	c.exec("USE d")
	c.exec("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL, u VARCHAR(20), UNIQUE KEY u_1 (u))")
	c.exec("INSERT INTO t VALUES (1, 0, 'a'), (2, 0, 'b'), (3, 0, 'c')")
	return h, c
}

func (h *harness) session(db string) *conn {
	c := h.conn()
	c.exec("USE " + db)
	return c
}

func TestNoLostUpdatesSQL(t *testing.T) {
	h, c := setupKV(t)
	const n = 150
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := h.session("d")
			for range n {
				if _, err := s.query("UPDATE t SET v=v+1 WHERE id=1"); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	// Read-modify-write under SELECT ... FOR UPDATE inside transactions.
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := h.session("d")
			for range n {
				s.exec("BEGIN")
				rs, err := s.query("SELECT v FROM t WHERE id=2 FOR UPDATE")
				if err != nil {
					t.Error(err)
					return
				}
				s.exec(fmt.Sprintf("UPDATE t SET v=%d WHERE id=2", rs[0][0].(int32)+1))
				s.exec("COMMIT")
			}
		}()
	}
	wg.Wait()
	if got := c.rows("SELECT v FROM t WHERE id IN (1, 2) ORDER BY id"); got != fmt.Sprintf("%d;%d", 2*n, 2*n) {
		t.Fatalf("v = %s, want %d;%d", got, 2*n, 2*n)
	}
}

func TestLockWaitTimeoutAndDeadlock(t *testing.T) {
	h, _ := setupKV(t)
	a, b := h.session("d"), h.session("d")
	a.exec("SET innodb_lock_wait_timeout = 1")
	b.exec("SET innodb_lock_wait_timeout = 60")
	a.exec("BEGIN")
	b.exec("BEGIN")
	a.exec("UPDATE t SET v = 10 WHERE id = 1")
	b.exec("UPDATE t SET v = 20 WHERE id = 2")
	// a waits for b's row and times out: 1205, only the statement is undone.
	start := time.Now()
	_, err := a.query("SELECT * FROM t WHERE id = 2 FOR UPDATE")
	if errno(err) != mysql.ERLockWaitTimeout {
		t.Fatalf("expected 1205, got %v", err)
	}
	// Not before a's own timeout, and a's (1 s), not b's (a minute).
	if d := time.Since(start); d < 900*time.Millisecond || d > 30*time.Second {
		t.Fatalf("timed out after %v, want a's 1 s", d)
	}
	// Now a deadlock: a waits for row 2 (held by b), b asks for row 1.
	done := make(chan error, 1)
	go func() {
		a.exec("SET innodb_lock_wait_timeout = 5")
		_, err := a.query("UPDATE t SET v = 11 WHERE id = 2")
		done <- err
	}()
	// Wait until a is really waiting, so b is the one that closes the cycle.
	for deadline := time.Now().Add(10 * time.Second); h.e.locks.Stats.Current.Load() < 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a never started waiting")
		}
	}
	_, err = b.query("UPDATE t SET v = 21 WHERE id = 1")
	if errno(err) != mysql.ERLockDeadlock {
		t.Fatalf("expected 1213, got %v", err)
	}
	// The victim's whole transaction is rolled back, so a proceeds.
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	b.exec("COMMIT")
	a.exec("COMMIT")
	c := h.session("d")
	if got := c.rows("SELECT id, v FROM t ORDER BY id"); got != "1,10;2,11;3,0" {
		t.Fatalf("after deadlock: %s", got)
	}
}

func TestDuplicatesAndStatementAtomicity(t *testing.T) {
	_, c := setupKV(t)
	_, err := c.query("INSERT INTO t VALUES (4, 0, 'd'), (1, 0, 'e'), (5, 0, 'f')")
	if errno(err) != mysql.ERDupEntry {
		t.Fatalf("duplicate primary key: %v", err)
	}
	_, err = c.query("INSERT INTO t VALUES (6, 0, 'a')")
	if errno(err) != mysql.ERDupEntry {
		t.Fatalf("duplicate unique key: %v", err)
	}
	if got := c.rows("SELECT COUNT(*) FROM t"); got != "3" {
		t.Fatalf("a failed multi-row INSERT left rows behind: %s rows", got)
	}
	c.exec("BEGIN")
	c.exec("INSERT INTO t VALUES (7, 7, 'g')")
	if _, err := c.query("UPDATE t SET u = 'a' WHERE id = 7"); errno(err) != mysql.ERDupEntry {
		t.Fatalf("update into a unique key: %v", err)
	}
	c.exec("SAVEPOINT s1")
	c.exec("INSERT INTO t VALUES (8, 8, 'h')")
	c.exec("ROLLBACK TO SAVEPOINT s1")
	c.exec("COMMIT")
	if got := c.rows("SELECT id, u FROM t WHERE id > 3 ORDER BY id"); got != "7,g" {
		t.Fatalf("after savepoint rollback: %s", got)
	}
	c.exec("REPLACE INTO t VALUES (1, 100, 'a2')")
	c.exec("INSERT INTO t VALUES (2, 0, 'b') ON DUPLICATE KEY UPDATE v = v + 5")
	if got := c.rows("SELECT id, v, u FROM t WHERE id <= 2 ORDER BY id"); got != "1,100,a2;2,5,b" {
		t.Fatalf("REPLACE / ON DUPLICATE KEY UPDATE: %s", got)
	}
	// The freed unique value is reusable.
	c.exec("INSERT INTO t VALUES (9, 0, 'a')")
}

func TestIsolationLevels(t *testing.T) {
	h, _ := setupKV(t)
	rr, rc, w := h.session("d"), h.session("d"), h.session("d")
	rc.exec("SET SESSION transaction_isolation = 'READ-COMMITTED'")
	rr.exec("BEGIN")
	rc.exec("BEGIN")
	rr.rows("SELECT v FROM t WHERE id = 1")
	rc.rows("SELECT v FROM t WHERE id = 1")
	w.exec("UPDATE t SET v = 42 WHERE id = 1")
	w.exec("INSERT INTO t VALUES (4, 0, 'd')")
	if got := rr.rows("SELECT v FROM t WHERE id = 1"); got != "0" {
		t.Fatalf("REPEATABLE READ saw a later commit: %s", got)
	}
	if got := rr.rows("SELECT COUNT(*) FROM t"); got != "3" {
		t.Fatalf("REPEATABLE READ saw a later insert: %s", got)
	}
	// A locking read sees the latest committed row, as in InnoDB.
	if got := rr.rows("SELECT v FROM t WHERE id = 1 FOR UPDATE"); got != "42" {
		t.Fatalf("locking read under REPEATABLE READ: %s", got)
	}
	if got := rc.rows("SELECT v FROM t WHERE id = 1"); got != "42" {
		t.Fatalf("READ COMMITTED did not see the commit: %s", got)
	}
	rr.exec("COMMIT")
	rc.exec("COMMIT")
}

func TestSchemaAndDataSurviveRestart(t *testing.T) {
	fs := vfs.NewMem()
	h := openHarness(t, fs)
	c := h.conn()
	c.exec("CREATE DATABASE d")
	c.exec("USE d")
	c.exec("CREATE TABLE t (id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, name VARCHAR(30) NOT NULL DEFAULT 'x', amount DECIMAL(10,2), at DATETIME(3), KEY name_1 (name)) COMMENT 'hello'")
	c.exec("INSERT INTO t (name, amount, at) VALUES ('Bob', 12.5, '2026-01-02 03:04:05.678'), ('alice', NULL, NULL)")
	c.exec("INSERT INTO t (amount) VALUES (1)")
	want := c.rows("SELECT * FROM t ORDER BY id")
	h.close()

	h2 := openHarness(t, fs)
	c2 := h2.conn()
	c2.exec("USE d")
	if got := c2.rows("SELECT * FROM t ORDER BY id"); got != want {
		t.Fatalf("after restart:\n got %s\nwant %s", got, want)
	}
	// Collation-aware index lookup and the default survive too.
	if got := c2.rows("SELECT id FROM t WHERE name = 'BOB'"); got != "1" {
		t.Fatalf("case-insensitive lookup: %s", got)
	}
	c2.exec("INSERT INTO t (amount) VALUES (2)")
	if got := c2.rows("SELECT name FROM t WHERE id = 4"); got != "x" {
		t.Fatalf("default after restart: %s", got)
	}
	ct := c2.rows("SHOW CREATE TABLE t")
	for _, s := range []string{"DECIMAL(10,2)", "datetime(3)", "COMMENT='hello'", "KEY `name_1`"} {
		if !strings.Contains(strings.ToLower(ct), strings.ToLower(s)) {
			t.Fatalf("SHOW CREATE TABLE lacks %s:\n%s", s, ct)
		}
	}
}

func TestDDLOnData(t *testing.T) {
	h, c := setupKV(t)
	c.exec("CREATE INDEX v_1 ON t (v)")
	if got := c.rows("SELECT id FROM t WHERE v = 0 ORDER BY id"); got != "1;2;3" {
		t.Fatalf("new index: %s", got)
	}
	if _, err := c.query("CREATE UNIQUE INDEX v_2 ON t (v)"); errno(err) != mysql.ERDupEntry {
		t.Fatalf("unique index over duplicates: %v", err)
	}
	c.exec("DROP INDEX v_1 ON t")
	// DDL waits for an open transaction that used the table.
	o := h.session("d")
	o.exec("BEGIN")
	o.exec("UPDATE t SET v = 5 WHERE id = 3")
	ddl := make(chan error, 1)
	go func() { _, err := h.session("d").query("CREATE INDEX v_3 ON t (v)"); ddl <- err }()
	select {
	case err := <-ddl:
		t.Fatalf("DDL did not wait for the open transaction: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	o.exec("COMMIT")
	if err := <-ddl; err != nil {
		t.Fatal(err)
	}
	if got := c.rows("SELECT id FROM t WHERE v = 5"); got != "3" {
		t.Fatalf("index built before the commit it waited for: %s", got)
	}
	// A column change waits for an open transaction too, and rewrites
	// the rows that transaction committed, not the ones it read before.
	o.exec("BEGIN")
	o.exec("UPDATE t SET v = 6 WHERE id = 3")
	go func() {
		_, err := h.session("d").query("ALTER TABLE t ADD COLUMN w INT NOT NULL DEFAULT 7")
		ddl <- err
	}()
	select {
	case err := <-ddl:
		t.Fatalf("ADD COLUMN did not wait for the open transaction: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	o.exec("COMMIT")
	if err := <-ddl; err != nil {
		t.Fatal(err)
	}
	if got := c.rows("SELECT id, v, w FROM t ORDER BY id"); got != "1,0,7;2,0,7;3,6,7" {
		t.Fatalf("after ADD COLUMN: %s", got)
	}
	if got := c.rows("SELECT id FROM t WHERE v = 6"); got != "3" {
		t.Fatalf("index after ADD COLUMN: %s", got)
	}
	c.exec("ALTER TABLE t DROP COLUMN w")
	c.exec("RENAME TABLE t TO t2")
	c.exec("ALTER TABLE t2 RENAME TO t")
	if got := c.rows("SELECT COUNT(*) FROM t"); got != "3" {
		t.Fatalf("after renames: %s", got)
	}
	c.exec("TRUNCATE TABLE t")
	if got := c.rows("SELECT COUNT(*) FROM t"); got != "0" {
		t.Fatalf("truncate: %s", got)
	}
	c.exec("INSERT INTO t VALUES (1, 1, 'a')")
	c.exec("DROP TABLE t")
	if _, err := c.query("SELECT * FROM t"); errno(err) != mysql.ERNoSuchTable {
		t.Fatalf("dropped table: %v", err)
	}
	c.exec("CREATE TABLE g (id INT PRIMARY KEY, p GEOMETRY, q POINT NOT NULL, SPATIAL KEY (q))")
	c.exec("INSERT INTO g VALUES (1, ST_GeomFromText('LINESTRING(0 0,1 2)'), POINT(3, 4))")
	if got := c.rows("SELECT ST_AsText(p), ST_AsText(q), HEX(q) FROM g WHERE ST_Intersects(q, POINT(3, 4))"); got != "LINESTRING(0 0,1 2),POINT(3 4),00000000010100000000000000000008400000000000001040" {
		t.Fatalf("geometry columns: %s", got)
	}
	for _, q := range []string{"CREATE TABLE g2 (id INT PRIMARY KEY, p LINESTRING, KEY (p))", "CREATE TEMPORARY TABLE g3 (id INT PRIMARY KEY, p GEOMETRY, KEY (p))",
		"CREATE TEMPORARY TABLE g4 (p POLYGON NOT NULL PRIMARY KEY)"} {
		if _, err := c.query(q); errno(err) != 1170 {
			t.Fatalf("%s: %v, want 1170", q, err)
		}
	}
}

// TestIndexedReadsMatchScans compares random range queries through indexes
// with the same queries forced to scan.
func TestIndexedReadsMatchScans(t *testing.T) {
	h := newHarness(t)
	c := h.conn()
	c.exec("CREATE DATABASE d")
	c.exec("USE d")
	c.exec("CREATE TABLE r (a INT, b VARCHAR(10), c INT, PRIMARY KEY (a, b), KEY bc (b, c), KEY c_1 (c))")
	r := rand.New(rand.NewPCG(5, 6))
	words := []string{"x", "X", "y", "ab", "AB", "b", "", "z"}
	var vals []string
	seen := map[string]bool{}
	for range 300 {
		a, b := r.IntN(20)-5, words[r.IntN(len(words))]
		k := fmt.Sprintf("%d/%s", a, strings.ToLower(b))
		if seen[k] {
			continue
		}
		seen[k] = true
		cv := "NULL"
		if r.IntN(5) > 0 {
			cv = fmt.Sprint(r.IntN(30))
		}
		vals = append(vals, fmt.Sprintf("(%d, '%s', %s)", a, b, cv))
	}
	c.exec("INSERT INTO r VALUES " + strings.Join(vals, ","))
	// The same rows with no index on a, b, c: every query scans.
	c.exec("CREATE TABLE s (id INT AUTO_INCREMENT PRIMARY KEY, a INT, b VARCHAR(10), c INT)")
	c.exec("INSERT INTO s (a, b, c) SELECT a, b, c FROM r")
	ops := []string{"=", "<", "<=", ">", ">=", "<>"}
	for range 300 {
		var where string
		switch r.IntN(5) {
		case 0:
			where = fmt.Sprintf("a %s %d", ops[r.IntN(len(ops))], r.IntN(20)-5)
		case 1:
			where = fmt.Sprintf("a = %d AND b %s '%s'", r.IntN(20)-5, ops[r.IntN(len(ops))], words[r.IntN(len(words))])
		case 2:
			where = fmt.Sprintf("b = '%s' AND c BETWEEN %d AND %d", words[r.IntN(len(words))], r.IntN(30), r.IntN(30))
		case 3:
			where = fmt.Sprintf("c %s %d OR c IS NULL", ops[r.IntN(len(ops))], r.IntN(30))
		default:
			where = fmt.Sprintf("a IN (%d, %d, %d)", r.IntN(20)-5, r.IntN(20)-5, r.IntN(20)-5)
		}
		q := "SELECT a, b, c FROM %s WHERE " + where + " ORDER BY a, b"
		got := c.rows(fmt.Sprintf(q, "r"))
		want := c.rows(fmt.Sprintf(q, "s"))
		if got != want {
			t.Fatalf("%s\n indexed: %s\n scan:    %s", where, got, want)
		}
	}
}

// TestReplayRebuildsEverything runs DDL and DML, then recovers from a crash
// image that keeps only synced data: the store never flushed, so every
// table, index, rename, drop and row must come back by binlog replay.
func TestReplayRebuildsEverything(t *testing.T) {
	fs := vfs.NewCrashableMem()
	h := openHarness(t, fs)
	c := h.conn()
	for _, q := range []string{
		"CREATE DATABASE d", "USE d",
		"CREATE TABLE a (id INT PRIMARY KEY, k INT NOT NULL, s VARCHAR(20), KEY k_1 (k))",
		"INSERT INTO a VALUES (1, 10, 'x'), (2, 20, 'y'), (3, 30, 'z')",
		"CREATE UNIQUE INDEX s_1 ON a (s)",
		"UPDATE a SET k = k + 1 WHERE id >= 2",
		"CREATE TABLE b (id INT PRIMARY KEY, v INT)",
		"INSERT INTO b VALUES (1, 1), (2, 2)",
		"RENAME TABLE a TO a2",
		"DROP INDEX k_1 ON a2",
		"CREATE INDEX k_2 ON a2 (k)",
		"DELETE FROM a2 WHERE id = 1",
		"TRUNCATE TABLE b",
		"INSERT INTO b VALUES (3, 3)",
		"CREATE TABLE gone (id INT PRIMARY KEY)",
		"DROP TABLE gone",
		"CREATE DATABASE e", "CREATE TABLE e.t (id INT PRIMARY KEY)", "DROP DATABASE e",
	} {
		c.exec(q)
	}
	queries := []string{
		"SELECT id, k, s FROM a2 ORDER BY id",
		"SELECT id FROM a2 WHERE k = 31",
		"SELECT id FROM a2 WHERE s = 'y'",
		"SELECT * FROM b",
		"SHOW TABLES",
		"SHOW INDEX FROM a2",
	}
	want := map[string]string{}
	for _, q := range queries {
		want[q] = c.rows(q)
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	// The store itself lost everything: recovery must come from the binlog.
	st, err := storage.Open(storage.Options{FS: crashed, Dir: "/data/store"})
	if err != nil {
		t.Fatal(err)
	}
	if pos := st.Applied(); pos != (binlog.Position{}) || len(st.Databases()) != 0 {
		t.Fatalf("crash image still has store state (applied %v, %d databases)", pos, len(st.Databases()))
	}
	st.Close()
	h2 := openHarness(t, crashed)
	c2 := h2.conn()
	c2.exec("USE d")
	for _, q := range queries {
		if got := c2.rows(q); got != want[q] {
			t.Fatalf("%s after replay:\n got %s\nwant %s", q, got, want[q])
		}
	}
	if _, err := c2.query("SELECT * FROM gone"); errno(err) != mysql.ERNoSuchTable {
		t.Fatalf("dropped table came back: %v", err)
	}
	if _, err := c2.query("USE e"); err == nil {
		t.Fatal("dropped database came back")
	}
	if _, err := c2.query("INSERT INTO a2 VALUES (9, 0, 'y')"); errno(err) != mysql.ERDupEntry {
		t.Fatalf("unique index not rebuilt by replay: %v", err)
	}
}

// TestDeleteAllIsTransactional: DELETE without WHERE (which GMS may route
// to Truncate) deletes row by row inside the transaction, so ROLLBACK
// brings the rows back; TRUNCATE TABLE is DDL.
func TestDeleteAllIsTransactional(t *testing.T) {
	_, c := setupKV(t)
	c.exec("BEGIN")
	c.exec("DELETE FROM t")
	if got := c.rows("SELECT COUNT(*) FROM t"); got != "0" {
		t.Fatalf("inside the transaction: %s rows", got)
	}
	c.exec("ROLLBACK")
	if got := c.rows("SELECT COUNT(*) FROM t"); got != "3" {
		t.Fatalf("after ROLLBACK: %s rows", got)
	}
	c.exec("DELETE FROM t")
	if got := c.rows("SELECT COUNT(*) FROM t"); got != "0" {
		t.Fatalf("after DELETE: %s rows", got)
	}
}

// TestDeleteWithoutWhere: DELETE FROM db.t with no current database works
// (GMS's DELETE-to-TRUNCATE rewrite failed with "database not found"),
// counts its rows in ROW_COUNT(), and stays transactional.
func TestDeleteWithoutWhere(t *testing.T) {
	h := newHarness(t)
	c := h.conn()
	c.exec("CREATE DATABASE d")
	c.exec("CREATE TABLE d.t (id INT PRIMARY KEY)")
	c.exec("INSERT INTO d.t VALUES (1), (2), (3)")
	c.exec("DELETE FROM d.t")
	if got := c.rows("SELECT ROW_COUNT()"); got != "3" {
		t.Fatalf("ROW_COUNT() after DELETE of 3 rows: %s", got)
	}
	if got := c.rows("SELECT COUNT(*) FROM d.t"); got != "0" {
		t.Fatalf("rows left: %s", got)
	}
	c.exec("INSERT INTO d.t VALUES (1), (2)")
	c.exec("USE d")
	c.exec("BEGIN")
	c.exec("DELETE FROM t")
	c.exec("ROLLBACK")
	if got := c.rows("SELECT COUNT(*) FROM t"); got != "2" {
		t.Fatalf("a rolled-back DELETE without WHERE left %s rows", got)
	}
}

// TestHugeLimit: ORDER BY with a LIMIT far beyond the rows (MySQL's
// LIMIT offset, 18446744073709551615 idiom, or LIMIT 2^31) returns the rows
// in order. GMS's top-n heap allocated room for LIMIT rows up front: the
// idiom failed with a recovered panic, and LIMIT 2147483648 killed the
// server by running it out of memory.
func TestHugeLimit(t *testing.T) {
	h := newHarness(t)
	c := h.conn()
	c.exec("CREATE DATABASE d")
	c.exec("USE d")
	c.exec("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	c.exec("INSERT INTO t VALUES (1, 30), (2, 10), (3, 20), (4, 10)")
	for q, want := range map[string]string{
		"SELECT id FROM t ORDER BY v LIMIT 1, 18446744073709551615":                   "4;3;1",
		"SELECT id FROM t ORDER BY v DESC LIMIT 2147483648":                           "1;3;2;4",
		"SELECT id FROM t ORDER BY v LIMIT 2":                                         "2;4",
		"SELECT id FROM t ORDER BY v LIMIT 9223372036854775807":                       "2;4;3;1",
		"(SELECT id FROM t) UNION (SELECT v FROM t) ORDER BY 1 DESC LIMIT 4294967296": "30;20;10;4;3;2;1",
	} {
		if got := c.rows(q); got != want {
			t.Errorf("%s: got %s, want %s", q, got, want)
		}
	}
	c.exec("SELECT SQL_CALC_FOUND_ROWS id FROM t ORDER BY v LIMIT 1, 18446744073709551615")
	if got := c.rows("SELECT FOUND_ROWS()"); got != "4" {
		t.Errorf("FOUND_ROWS() after a huge LIMIT: %s", got)
	}
}

// TestRenameOutsideCurrentDatabase: GMS renames within the current
// database whatever the qualifiers say, so a RENAME naming another
// database is refused instead of renaming a same-named table here.
func TestRenameOutsideCurrentDatabase(t *testing.T) {
	h := newHarness(t)
	c := h.conn()
	c.exec("CREATE DATABASE x")
	c.exec("CREATE DATABASE y")
	c.exec("CREATE TABLE x.a (id INT PRIMARY KEY)")
	c.exec("CREATE TABLE y.a (id INT PRIMARY KEY)")
	if _, err := c.query("RENAME TABLE a TO b"); errno(err) != mysql.ERNoDb {
		t.Fatalf("no database selected: %v", err)
	}
	if _, err := c.query("RENAME TABLE x.a TO x.b"); errno(err) != mysql.ERNotSupportedYet {
		t.Fatalf("qualified, no database selected: %v", err)
	}
	c.exec("USE y")
	for _, q := range []string{"RENAME TABLE x.a TO x.b", "ALTER TABLE x.a RENAME TO x.b", "RENAME TABLE a TO x.b"} {
		if _, err := c.query(q); errno(err) != mysql.ERNotSupportedYet {
			t.Fatalf("%s with y selected: %v", q, err)
		}
	}
	if got := c.rows("SHOW TABLES FROM y"); got != "a" {
		t.Fatalf("y's tables after refused renames: %s", got)
	}
	c.exec("RENAME TABLE y.a TO y.b")
	c.exec("ALTER TABLE b RENAME TO c")
	c.exec("USE x")
	c.exec("RENAME TABLE a TO b")
	if got := c.rows("SHOW TABLES FROM y") + "/" + c.rows("SHOW TABLES FROM x"); got != "c/b" {
		t.Fatalf("tables after renames: %s", got)
	}
}

// TestMariaDBExecutableComments: /*M! ... */ comments are ignored, as
// MySQL does (a MariaDB dump starts with one whose body is not SQL), and
// only outside quotes; offsets into the query do not move.
func TestMariaDBExecutableComments(t *testing.T) {
	blank := func(s string) string { return strings.Repeat(" ", len(s)) }
	for in, want := range map[string]string{
		"/*M!999999 enable the sandbox mode */":       blank("/*M!999999 enable the sandbox mode */"),
		"SELECT 1 /*M!100100 , 2 */":                  "SELECT 1 " + blank("/*M!100100 , 2 */"),
		"SELECT '/*M!1 x */'":                         "SELECT '/*M!1 x */'",
		`SELECT "it\"s /*M!1 x */"`:                   `SELECT "it\"s /*M!1 x */"`,
		"SELECT 1 /* plain /*M! */ , 2":               "SELECT 1 /* plain /*M! */ , 2",
		"SELECT 1 -- /*M!1 x */\n/*M!1 y */":          "SELECT 1 -- /*M!1 x */\n" + blank("/*M!1 y */"),
		"/*!40101 SET @a=1 */ /*M!100616 SET @b=2 */": "/*!40101 SET @a=1 */ " + blank("/*M!100616 SET @b=2 */"),
	} {
		if got := blankMariaDBComments(in); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
	h := newHarness(t)
	c := h.conn()
	c.exec("/*M!999999 enable the sandbox mode */")
	c.exec("/*!40101 SET @a = 1 */ /*M!100616 SET @a = 2 */")
	if got := c.rows("SELECT @a /*M!100100 , 3 */"); got != "1" {
		t.Fatalf("@a after MariaDB comments: %s", got)
	}
}
