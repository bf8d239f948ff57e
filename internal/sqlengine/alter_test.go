package sqlengine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/dolthub/vitess/go/mysql"
)

// TestColumnChanges runs ALTER TABLE column changes on a table with data and
// secondary indexes, checking rows, indexes and errors after each, then
// replays the binlog into an empty store and checks that replay made the
// same table.
func TestColumnChanges(t *testing.T) {
	fs := vfs.NewCrashableMem()
	h := openHarness(t, fs)
	c := h.conn()
	for _, q := range []string{
		"CREATE DATABASE d", "USE d",
		// Both inline indexes must exist (each CreateIndex starts from
		// the definition the previous one committed).
		"CREATE TABLE t (id INT PRIMARY KEY, v INT, s VARCHAR(5), KEY iv (v), UNIQUE KEY us (s))",
		"INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b'), (3, NULL, NULL)",
	} {
		c.exec(q)
	}
	if got := c.rows("SELECT index_name FROM information_schema.statistics WHERE table_name = 't' ORDER BY 1"); got != "iv;PRIMARY;us" {
		t.Fatalf("indexes after CREATE TABLE: %s", got)
	}
	steps := []struct{ q, check, want string }{
		{"ALTER TABLE t ADD COLUMN w VARCHAR(5) NOT NULL DEFAULT 'z' AFTER id",
			"SELECT id, w, v, s FROM t ORDER BY id", "1,z,10,a;2,z,20,b;3,z,<nil>,<nil>"},
		{"ALTER TABLE t ADD COLUMN n INT FIRST",
			"SELECT n, id, w FROM t ORDER BY id", "<nil>,1,z;<nil>,2,z;<nil>,3,z"},
		// Widening keeps every stored value.
		{"ALTER TABLE t MODIFY COLUMN v BIGINT",
			"SELECT id FROM t WHERE v = 20", "2"},
		{"ALTER TABLE t MODIFY COLUMN s VARCHAR(20)",
			"SELECT id FROM t WHERE s = 'b'", "2"},
		{"ALTER TABLE t RENAME COLUMN v TO v2",
			"SELECT id, v2 FROM t WHERE v2 >= 10 ORDER BY v2", "1,10;2,20"},
		{"ALTER TABLE t CHANGE COLUMN s s2 VARCHAR(20) AFTER w",
			"SELECT id, s2 FROM t WHERE s2 = 'a'", "1,a"},
		{"ALTER TABLE t ALTER COLUMN w SET DEFAULT 'q'",
			"SELECT COUNT(*) FROM t WHERE w = 'z'", "3"},
		{"ALTER TABLE t DROP COLUMN n",
			"SELECT * FROM t ORDER BY id", "1,z,a,10;2,z,b,20;3,z,<nil>,<nil>"},
		{"INSERT INTO t (id, s2, v2) VALUES (4, 'd', 40)",
			"SELECT id, w FROM t WHERE id = 4", "4,q"},
	}
	for _, s := range steps {
		c.exec(s.q)
		if got := c.rows(s.check); got != s.want {
			t.Fatalf("after %s:\n%s\n got %s\nwant %s", s.q, s.check, got, s.want)
		}
	}
	// The unique index still holds after the rewrites.
	if _, err := c.query("INSERT INTO t (id, s2) VALUES (5, 'a')"); errno(err) != mysql.ERDupEntry {
		t.Fatalf("unique index after rewrites: %v", err)
	}

	// Refused changes leave the table as it was.
	for _, f := range []struct {
		q    string
		code int
	}{
		{"ALTER TABLE t ADD COLUMN u VARCHAR(40) DEFAULT (UUID())", mysql.ERNotSupportedYet},
		{"ALTER TABLE t DROP COLUMN id", mysql.ERNotSupportedYet},
		{"ALTER TABLE t MODIFY COLUMN id BIGINT", mysql.ERNotSupportedYet},
		{"ALTER TABLE t MODIFY COLUMN s2 INT", 0}, // GMS refuses the conversion itself
		{"ALTER TABLE t MODIFY COLUMN v2 INT NOT NULL", 0},
		// GMS would commit each part on its own: refused whole.
		{"ALTER TABLE t ADD COLUMN e1 INT, ADD COLUMN e2 INT, DROP COLUMN w", mysql.ERNotSupportedYet},
		{"ALTER TABLE t ADD INDEX iw (w), ADD COLUMN e3 INT", mysql.ERNotSupportedYet},
	} {
		_, err := c.query(f.q)
		if err == nil || (f.code != 0 && errno(err) != f.code) {
			t.Fatalf("%s: err %v (errno %d), want an error (%d)", f.q, err, errno(err), f.code)
		}
	}
	if got := c.rows("SELECT * FROM t ORDER BY id"); got != "1,z,a,10;2,z,b,20;3,z,<nil>,<nil>;4,q,d,40" {
		t.Fatalf("a refused change altered the table: %s", got)
	}

	// An expression default survives reopening the table.
	c.exec("CREATE TABLE x (id INT PRIMARY KEY, u VARCHAR(40) DEFAULT (UUID()), ts TIMESTAMP DEFAULT CURRENT_TIMESTAMP)")
	c.exec("INSERT INTO x (id) VALUES (1)")
	if got := c.rows("SELECT id, LENGTH(u), ts IS NOT NULL FROM x"); got != "1,36,true" {
		t.Fatalf("expression defaults: %s", got)
	}

	queries := []string{
		"SELECT * FROM t ORDER BY id",
		"SELECT id FROM t WHERE v2 = 40",
		"SELECT id FROM t WHERE s2 = 'b'",
		"SHOW CREATE TABLE t",
		"SHOW INDEX FROM t",
		"SELECT id, LENGTH(u) FROM x",
	}
	want := map[string]string{}
	for _, q := range queries {
		want[q] = c.rows(q)
	}
	if !strings.Contains(want["SHOW CREATE TABLE t"], "`w` varchar(5) NOT NULL DEFAULT 'q'") {
		t.Fatalf("SHOW CREATE TABLE: %s", want["SHOW CREATE TABLE t"])
	}
	h.close()

	// Replay from the binlog alone must make the same tables.
	c2 := replayFromBinlog(t, fs, "d")
	for _, q := range queries {
		if got := c2.rows(q); got != want[q] {
			t.Fatalf("%s after replay:\n got %s\nwant %s", q, got, want[q])
		}
	}
	if _, err := c2.query("INSERT INTO t (id, s2) VALUES (6, 'b')"); errno(err) != mysql.ERDupEntry {
		t.Fatalf("unique index after replay: %v", err)
	}
}

// TestMultiPartIndexAlterIsAllOrNothing: an ALTER TABLE of several index
// changes whose later part must fail (a UNIQUE index over duplicates, a
// name taken, an index that is not there) changes nothing; one that can
// succeed applies every part.
func TestMultiPartIndexAlterIsAllOrNothing(t *testing.T) {
	h := newHarness(t)
	c := h.conn()
	c.exec("CREATE DATABASE d")
	c.exec("USE d")
	c.exec("CREATE TABLE t (id INT PRIMARY KEY, v INT, w INT, KEY old (w))")
	c.exec("INSERT INTO t VALUES (1, 1, 1), (2, 1, 2), (3, NULL, 3)")
	indexes := func() string {
		rs, err := c.query("SHOW INDEX FROM t")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range rs {
			if n := fmt.Sprint(r[2]); len(names) == 0 || names[len(names)-1] != n {
				names = append(names, n)
			}
		}
		return strings.Join(names, ",")
	}
	for q, want := range map[string]uint16{
		"ALTER TABLE t ADD INDEX a (v), ADD UNIQUE INDEX b (v)":         mysql.ERDupEntry,
		"ALTER TABLE t ADD INDEX a (v), ADD INDEX old (v)":              mysql.ERDupKeyName,
		"ALTER TABLE t ADD INDEX a (v), ADD INDEX a (w)":                mysql.ERDupKeyName,
		"ALTER TABLE t DROP INDEX old, DROP INDEX nope":                 mysql.ERCantDropFieldOrKey,
		"ALTER TABLE t ADD INDEX a (v), DROP INDEX old, DROP INDEX old": mysql.ERCantDropFieldOrKey,
	} {
		if _, err := c.query(q); errno(err) != int(want) {
			t.Errorf("%s: %v, want error %d", q, err, want)
		}
		if got := indexes(); got != "PRIMARY,old" {
			t.Fatalf("%s left the indexes %s", q, got)
		}
	}
	c.exec("ALTER TABLE t ADD UNIQUE INDEX u (w), DROP INDEX old, ADD INDEX old (v, w)")
	if got := indexes(); got != "PRIMARY,u,old" {
		t.Fatalf("indexes after a valid multi-part ALTER: %s", got)
	}
	if got := c.rows("SELECT id FROM t WHERE w = 2"); got != "2" {
		t.Fatalf("lookup through the new unique index: %s", got)
	}
}
