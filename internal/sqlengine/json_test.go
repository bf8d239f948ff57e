package sqlengine

import (
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/lockstepdb/lockstep/internal/mysqlerr"
)

// TestJSONColumns: JSON columns store documents in MySQL's binary form
// and give them back to every path that reads them: the query engine and
// its JSON functions, updates that rewrite them, and replay from the
// binlog. SQL NULL and JSON null stay apart; a JSON column cannot be a key.
func TestJSONColumns(t *testing.T) {
	fs := vfs.NewCrashableMem()
	h := openHarness(t, fs)
	c := h.conn()
	c.exec("CREATE DATABASE d")
	c.exec("USE d")
	c.exec("CREATE TABLE j (id INT PRIMARY KEY, doc JSON, name VARCHAR(20) AS (doc->>'$.name'), KEY (name))")
	c.exec(`INSERT INTO j (id, doc) VALUES
		(1, '{"name": "ann", "tags": ["a", "b"], "n": {"x": 1.5, "y": -7, "z": null}}'),
		(2, '[1, 2, 3]'),
		(3, 'null'),
		(4, NULL),
		(5, '"just a string"'),
		(6, JSON_OBJECT('name', 'bob', 'age', 42, 'ok', TRUE))`)
	want := map[string]string{
		"SELECT id, doc FROM j ORDER BY id": `1,{"n": {"x": 1.5, "y": -7, "z": null}, "name": "ann", "tags": ["a", "b"]};` +
			`2,[1, 2, 3];3,null;4,<nil>;5,"just a string";6,{"ok": true, "age": 42, "name": "bob"}`,
		"SELECT id FROM j WHERE doc IS NULL":                         "4",
		"SELECT id, JSON_TYPE(doc) FROM j WHERE id IN (1, 2, 5)":     "1,OBJECT;2,ARRAY;5,STRING",
		"SELECT doc->'$.n.y', doc->>'$.tags[1]' FROM j WHERE id = 1": "-7,b",
		"SELECT id FROM j WHERE name = 'bob'":                        "6",
		"SELECT JSON_LENGTH(doc) FROM j WHERE id = 2":                "3",
	}
	check := func(c *conn, when string) {
		t.Helper()
		for q, w := range want {
			if got := c.rows(q); got != w {
				t.Fatalf("%s: %s:\n got %s\nwant %s", when, q, got, w)
			}
		}
	}
	check(c, "after the inserts")
	c.exec(`UPDATE j SET doc = JSON_SET(doc, '$.tags[2]', 'c', '$.n.z', 'zz') WHERE id = 1`)
	c.exec(`UPDATE j SET doc = JSON_ARRAY_APPEND(doc, '$', 4) WHERE id = 2`)
	want["SELECT id, doc FROM j ORDER BY id"] = `1,{"n": {"x": 1.5, "y": -7, "z": "zz"}, "name": "ann", "tags": ["a", "b", "c"]};` +
		`2,[1, 2, 3, 4];3,null;4,<nil>;5,"just a string";6,{"ok": true, "age": 42, "name": "bob"}`
	want["SELECT JSON_LENGTH(doc) FROM j WHERE id = 2"] = "4"
	check(c, "after the updates")
	h.close()
	c = replayFromBinlog(t, fs, "d")
	check(c, "replayed from the binlog")

	for _, f := range []struct {
		q    string
		code int
	}{
		{"CREATE TABLE k1 (doc JSON PRIMARY KEY)", 3152},
		{"CREATE TABLE k2 (id INT PRIMARY KEY, doc JSON, KEY (doc))", 3152},
		{"ALTER TABLE j ADD INDEX (doc)", 3152},
		{"CREATE TABLE p (id INT PRIMARY KEY, doc JSON)", 0},
		{"INSERT INTO p VALUES (9, '{bad')", 3140},
		{"INSERT INTO p VALUES (9, '" + strings.Repeat("[", 101) + strings.Repeat("]", 101) + "')", 3157},
	} {
		_, err := c.query(f.q)
		if f.code == 0 && strings.HasPrefix(f.q, "CREATE") {
			if err != nil {
				t.Fatalf("%s: %v", f.q, err)
			}
			continue
		}
		if err != nil {
			err = mysqlerr.Restore(sql.CastSQLError(err)) // as the server answers it
		}
		if err == nil || f.code != 0 && errno(err) != f.code {
			t.Fatalf("%s: %v (errno %d), want error %d", f.q, err, errno(err), f.code)
		}
	}
	if got := c.rows("SELECT COUNT(*) FROM j"); got != "6" {
		t.Fatalf("refused statements changed the table: %s rows", got)
	}
}

// TestJSONExactIntegers: integers in JSON text written to a JSON column
// keep every digit, past 2^53 and up to 2^64-1, on INSERT (also
// prepared, and with ON DUPLICATE KEY UPDATE) and UPDATE, and read back
// so from the store and from the binlog.
func TestJSONExactIntegers(t *testing.T) {
	fs := vfs.NewCrashableMem()
	h := openHarness(t, fs)
	c := h.conn()
	c.exec("CREATE DATABASE d")
	c.exec("USE d")
	c.exec("CREATE TABLE j (id INT PRIMARY KEY, doc JSON)")
	c.exec(`INSERT INTO j VALUES (1, '{"id": 9007199254740993, "u": 18446744073709551615, "neg": -9223372036854775808, "a": [12345678901234567, 1.5]}')`)
	c.exec(`INSERT INTO j VALUES (2, '[1]') ON DUPLICATE KEY UPDATE doc = '[2]'`)
	c.exec(`INSERT INTO j VALUES (2, '[1]') ON DUPLICATE KEY UPDATE doc = '[9007199254740995]'`)
	c.exec(`UPDATE j SET doc = JSON_SET(doc, '$.b', 1) WHERE id = 1`)
	c.exec(`INSERT INTO j VALUES (3, '{}')`)
	c.exec(`UPDATE j SET doc = '{"x": 9007199254740997}' WHERE id = 3`)
	want := `1,{"a": [12345678901234567, 1.5], "b": 1, "u": 18446744073709551615, "id": 9007199254740993, "neg": -9223372036854775808};` +
		`2,[9007199254740995];3,{"x": 9007199254740997}`
	if got := c.rows("SELECT id, doc FROM j ORDER BY id"); got != want {
		t.Fatalf("the documents:\n got %s\nwant %s", got, want)
	}
	if got := c.rows("SELECT doc->>'$.id', doc->>'$.u' FROM j WHERE id = 1"); got != "9007199254740993,18446744073709551615" {
		t.Fatalf("the stored integers as text: %s", got)
	}
	h.close()
	if got := replayFromBinlog(t, fs, "d").rows("SELECT id, doc FROM j ORDER BY id"); got != want {
		t.Fatalf("replayed from the binlog:\n got %s\nwant %s", got, want)
	}
}

// TestJSONLengthAndContains: JSON_LENGTH counts an empty array (0) and a
// JSON null (1), and JSON_CONTAINS compares numbers by value whatever
// holds them (a document made by JSON_OBJECT, or read from a column),
// as MySQL does.
func TestJSONLengthAndContains(t *testing.T) {
	h := newHarness(t)
	c := h.conn()
	c.exec("CREATE DATABASE d")
	c.exec("USE d")
	c.exec("CREATE TABLE j (id INT PRIMARY KEY, doc JSON)")
	c.exec(`INSERT INTO j VALUES (1, JSON_OBJECT('a', 1, 'b', JSON_ARRAY())), (2, '{"a": 18446744073709551615, "b": [1, [2, 3]], "c": null}')`)
	for q, want := range map[string]string{
		`SELECT JSON_LENGTH('[]'), JSON_LENGTH('null'), JSON_LENGTH('{}'), JSON_LENGTH('[1, [2, 3]]', '$[1]'), JSON_LENGTH('{"a": 1}', '$.x')`:                                                                                                                   "0,1,0,2,<nil>",
		"SELECT id, JSON_LENGTH(doc), JSON_LENGTH(doc, '$.b'), JSON_LENGTH(doc, '$.c') FROM j ORDER BY id":                                                                                                                                                       "1,2,0,<nil>;2,3,2,1",
		"SELECT id, JSON_CONTAINS(doc, '1', '$.a'), JSON_CONTAINS(doc, '18446744073709551615', '$.a'), JSON_CONTAINS(doc, '[3]', '$.b') FROM j ORDER BY id":                                                                                                      "1,true,false,false;2,false,true,true",
		`SELECT JSON_CONTAINS(JSON_OBJECT('a', 1), '1', '$.a'), JSON_CONTAINS('[1, 2, [3, 4]]', '[1, 3]'), JSON_CONTAINS('[1, 2]', '1.0'), JSON_CONTAINS('{"a": {"b": 1}}', '{"a": {}}'), JSON_CONTAINS('{"a": 1}', '1'), JSON_CONTAINS('{"a": 1}', '1', '$.b')`: "true,true,true,true,false,<nil>",
	} {
		if got := c.rows(q); got != want {
			t.Errorf("%s: %q, want %q", q, got, want)
		}
	}
	if _, err := c.query("SELECT JSON_CONTAINS('not json', '1')"); errno(err) != 3141 {
		t.Errorf("JSON_CONTAINS of bad text: %v, want 3141", err)
	}
}
