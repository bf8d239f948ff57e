package sqlengine

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/dolthub/vitess/go/mysql"
)

// Tables without a primary key: duplicates, every column type through a
// delete by image, indexes, errors, replay from the binlog.
func TestKeylessTables(t *testing.T) {
	fs := vfs.NewCrashableMem()
	h := openHarness(t, fs)
	c := h.conn()
	c.exec("CREATE DATABASE d")
	c.exec("USE d")
	c.exec(`CREATE TABLE k (i INT, s VARCHAR(20), ch CHAR(5), dec1 DECIMAL(10,2), f DOUBLE, fl FLOAT,
		dt DATETIME(3), ts TIMESTAMP NULL, da DATE, tm TIME, y YEAR, b BLOB, tx TEXT, e ENUM('a','b'), st SET('x','y'),
		bi BIGINT UNSIGNED, vb VARBINARY(10), u TINYINT, KEY i_1 (i))`)
	if got := c.rows("SHOW CREATE TABLE k"); strings.Contains(got, "PRIMARY") {
		t.Fatalf("SHOW CREATE TABLE of a keyless table: %s", got)
	}
	row := `(1, 'a', 'ab  ', 12.50, 1.5, 2.25, '2024-01-02 03:04:05.678', '2024-01-02 03:04:05', '2024-01-02', '-12:00:01', 2024,
		x'00ff', 'text', 'b', 'x,y', 18446744073709551615, x'0102', -5)`
	for range 3 {
		c.exec("INSERT INTO k VALUES " + row)
	}
	c.exec("INSERT INTO k (i, s) VALUES (2, 'b'), (2, 'b'), (NULL, NULL)")
	if got := c.rows("SELECT COUNT(*), COUNT(DISTINCT i, s) FROM k"); got != "6,2" {
		t.Fatalf("counts: %s", got)
	}
	// Each DELETE ... LIMIT 1 removes one of the identical rows, found by
	// its image, whatever its column types.
	c.exec("DELETE FROM k WHERE i = 1 LIMIT 1")
	if got := c.rows("SELECT COUNT(*) FROM k WHERE i = 1"); got != "2" {
		t.Fatalf("after deleting one copy: %s", got)
	}
	c.exec("UPDATE k SET u = u + 1 WHERE i = 1 LIMIT 1")
	if got := c.rows("SELECT u, COUNT(*) FROM k WHERE i = 1 GROUP BY u ORDER BY u"); got != "-5,1;-4,1" {
		t.Fatalf("after updating one copy: %s", got)
	}
	c.exec("UPDATE k SET s = 'c' WHERE i = 2")
	if got := c.rows("SELECT s, COUNT(*) FROM k WHERE i = 2 GROUP BY s"); got != "c,2" {
		t.Fatalf("after updating both copies: %s", got)
	}
	// Through the secondary index and by scan.
	if a, b := c.rows("SELECT i, s, u FROM k WHERE i >= 1 ORDER BY i, s, u"), c.rows("SELECT i, s, u FROM k IGNORE INDEX (i_1) WHERE i >= 1 ORDER BY i, s, u"); a != b || a != "1,a,-5;1,a,-4;2,c,<nil>;2,c,<nil>" {
		t.Fatalf("index read %q, scan %q", a, b)
	}
	// A unique index still refuses a second identical row, and cannot be
	// built over duplicates.
	if _, err := c.query("CREATE UNIQUE INDEX s_u ON k (s)"); errno(err) != mysql.ERDupEntry {
		t.Fatalf("unique index over duplicates: %v", err)
	}
	c.exec("CREATE TABLE ku (a INT, b INT, UNIQUE KEY a_u (a))")
	c.exec("INSERT INTO ku VALUES (1, 1), (NULL, 1), (NULL, 1)")
	if _, err := c.query("INSERT INTO ku VALUES (1, 1)"); errno(err) != mysql.ERDupEntry {
		t.Fatalf("identical row under a unique key: %v", err)
	}
	c.exec("INSERT INTO ku VALUES (1, 2) ON DUPLICATE KEY UPDATE b = b + 10")
	c.exec("REPLACE INTO ku VALUES (2, 5)")
	c.exec("REPLACE INTO ku VALUES (2, 6)")
	if got := c.rows("SELECT a, b FROM ku ORDER BY a, b"); got != "<nil>,1;<nil>,1;1,11;2,6" {
		t.Fatalf("ku: %s", got)
	}
	// Transactions: rollback, savepoints, a failed statement.
	c.exec("BEGIN")
	c.exec("INSERT INTO ku VALUES (3, 3)")
	c.exec("SAVEPOINT sp")
	c.exec("DELETE FROM ku WHERE a IS NULL LIMIT 1")
	c.exec("ROLLBACK TO SAVEPOINT sp")
	if _, err := c.query("INSERT INTO ku VALUES (4, 4), (3, 3)"); errno(err) != mysql.ERDupEntry {
		t.Fatalf("duplicate in a multi-row insert: %v", err)
	}
	c.exec("COMMIT")
	if got := c.rows("SELECT a, b FROM ku ORDER BY a, b"); got != "<nil>,1;<nil>,1;1,11;2,6;3,3" {
		t.Fatalf("ku after the transaction: %s", got)
	}
	// Column changes: each row keeps its hidden key, the image index is
	// rebuilt for the new images, and later changes find the rows by them.
	c.exec("ALTER TABLE ku ADD COLUMN c INT NOT NULL DEFAULT 7")
	c.exec("ALTER TABLE ku RENAME COLUMN c TO c2")
	c.exec("ALTER TABLE ku MODIFY COLUMN c2 BIGINT")
	c.exec("UPDATE ku SET c2 = 8 WHERE a IS NULL LIMIT 1")
	if got := c.rows("SELECT a, b, c2 FROM ku ORDER BY a, b, c2"); got != "<nil>,1,7;<nil>,1,8;1,11,7;2,6,7;3,3,7" {
		t.Fatalf("ku after column changes: %s", got)
	}
	c.exec("CREATE INDEX b_1 ON ku (b)")
	c.exec("DELETE FROM ku WHERE b = 1")
	// Dropping the column that told rows apart leaves identical rows,
	// each one changed on its own.
	c.exec("CREATE TABLE kd (a INT, b INT)")
	c.exec("INSERT INTO kd VALUES (1, 1), (1, 2), (1, 2), (2, 3)")
	c.exec("ALTER TABLE kd DROP COLUMN b")
	c.exec("DELETE FROM kd WHERE a = 1 LIMIT 1")
	c.exec("UPDATE kd SET a = 5 WHERE a = 1 LIMIT 1")
	if got := c.rows("SELECT a FROM kd ORDER BY a"); got != "1;2;5" {
		t.Fatalf("kd after dropping a column: %s", got)
	}
	// A change storage cannot redo from the stored values is refused,
	// with nothing changed.
	for _, q := range []string{"MODIFY COLUMN a DOUBLE", "MODIFY COLUMN a VARCHAR(10)", "ADD COLUMN r DOUBLE DEFAULT (RAND())"} {
		if _, err := c.query("ALTER TABLE kd " + q); errno(err) != mysql.ERNotSupportedYet {
			t.Fatalf("ALTER TABLE kd %s: %v", q, err)
		}
	}
	if got := c.rows("SELECT * FROM kd ORDER BY a"); got != "1;2;5" {
		t.Fatalf("kd after refused changes: %s", got)
	}
	want := map[string]string{
		"SELECT i, s, ch, dec1, f, fl, dt, ts, da, tm, y, HEX(b), tx, e, st, bi, HEX(vb), u FROM k ORDER BY i, s, u": "",
		"SELECT a, b FROM ku ORDER BY a":                             "",
		"SELECT a, b, c2 FROM ku ORDER BY a":                         "",
		"SELECT a FROM kd ORDER BY a":                                "",
		"SELECT a FROM ku WHERE b > 5 ORDER BY a":                    "",
		"SELECT COUNT(*) FROM k WHERE i = 1":                         "",
		"SELECT COUNT(*) FROM k WHERE dec1 = 12.5 AND tx = 'text'":   "",
		"SELECT COUNT(*) FROM information_schema.tables WHERE 0 = 1": "",
	}
	for q := range want {
		want[q] = c.rows(q)
	}
	// Everything again from the binlog alone.
	r := replayFromBinlog(t, fs, "d")
	for q, w := range want {
		if got := r.rows(q); got != w {
			t.Fatalf("after replay %s:\n got %s\nwant %s", q, got, w)
		}
	}
	// And the replayed store keeps working: its image index is right.
	r.exec("DELETE FROM k WHERE i = 1")
	r.exec("UPDATE ku SET b = 7 WHERE a = 3")
	r.exec("DELETE FROM kd WHERE a = 1")
	if got := r.rows("SELECT COUNT(*) FROM k WHERE i = 1") + "|" + r.rows("SELECT a, b FROM ku ORDER BY a") + "|" + r.rows("SELECT a FROM kd ORDER BY a"); got != "0|1,11;2,6;3,7|2;5" {
		t.Fatalf("after replay, changes: %s", got)
	}
}

// No lost update on a keyless row: a session waiting for the row's lock
// finds it changed (its key stays), not gone, as InnoDB's hidden row id.
func TestKeylessNoLostUpdate(t *testing.T) {
	h := newHarness(t)
	c := h.conn()
	c.exec("CREATE DATABASE d")
	c.exec("USE d")
	c.exec("CREATE TABLE n (name VARCHAR(10), v INT)")
	c.exec("INSERT INTO n VALUES ('x', 0), ('y', 0)")
	const sessions, each = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := h.conn()
			s.exec("USE d")
			for range each {
				if _, err := s.query("UPDATE n SET v = v + 1 WHERE name = 'x'"); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := c.rows("SELECT name, v FROM n ORDER BY name"); got != fmt.Sprintf("x,%d;y,0", sessions*each) {
		t.Fatalf("after concurrent increments: %s", got)
	}
}

// A randomized test against a model (a multiset of rows): inserts of
// duplicates, deletes and updates of one copy or all, in and out of
// transactions, checked after every step and after replay.
func TestKeylessAgainstModel(t *testing.T) {
	seed := seedFromEnv(t)
	rng := rand.New(rand.NewPCG(seed, 2))
	fs := vfs.NewCrashableMem()
	h := openHarness(t, fs)
	c := h.conn()
	c.exec("CREATE DATABASE d")
	c.exec("USE d")
	c.exec("CREATE TABLE m (a INT, b VARCHAR(5), KEY a_1 (a))")
	model := map[[2]int]int{} // (a, b) -> copies
	check := func(c *conn, step int) {
		t.Helper()
		var want []string
		for k, n := range model {
			for range n {
				want = append(want, fmt.Sprintf("%d,v%d", k[0], k[1]))
			}
		}
		sort.Strings(want)
		rs, err := c.query("SELECT a, b FROM m")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rs {
			got = append(got, fmt.Sprintf("%v,%v", r[0], r[1]))
		}
		sort.Strings(got)
		if strings.Join(got, ";") != strings.Join(want, ";") {
			t.Fatalf("seed %d step %d:\n got %v\nwant %v", seed, step, got, want)
		}
	}
	for step := 0; step < 300; step++ {
		a, b := rng.IntN(4), rng.IntN(3)
		switch rng.IntN(5) {
		case 0, 1:
			c.exec(fmt.Sprintf("INSERT INTO m VALUES (%d, 'v%d')", a, b))
			model[[2]int{a, b}]++
		case 2:
			c.exec(fmt.Sprintf("DELETE FROM m WHERE a = %d AND b = 'v%d' LIMIT 1", a, b))
			if model[[2]int{a, b}] > 0 {
				model[[2]int{a, b}]--
			}
		case 3:
			nb := rng.IntN(3)
			c.exec(fmt.Sprintf("UPDATE m SET b = 'v%d' WHERE a = %d AND b = 'v%d' LIMIT 1", nb, a, b))
			if model[[2]int{a, b}] > 0 {
				model[[2]int{a, b}]--
				model[[2]int{a, nb}]++
			}
		case 4:
			c.exec("BEGIN")
			c.exec(fmt.Sprintf("UPDATE m SET a = a + 1 WHERE a = %d", a))
			c.exec(fmt.Sprintf("INSERT INTO m VALUES (%d, 'v%d')", a, b))
			if rng.IntN(3) == 0 {
				c.exec("ROLLBACK")
				break
			}
			c.exec("COMMIT")
			moved := map[[2]int]int{}
			for k, n := range model {
				if k[0] == a {
					moved[[2]int{a + 1, k[1]}] += n
					delete(model, k)
				}
			}
			for k, n := range moved {
				model[k] += n
			}
			model[[2]int{a, b}]++
		}
		check(c, step)
	}
	check(replayFromBinlog(t, fs, "d"), -1)
}
