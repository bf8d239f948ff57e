package sqlengine

import (
	"strings"
	"testing"
)

// TestExactSumAvg: SUM and AVG of exact values are exact DECIMALs with
// MySQL's precision and scale (the expected types and values are
// MariaDB 10.11's for the same table); of other values, DOUBLE.
func TestExactSumAvg(t *testing.T) {
	h := newHarness(t)
	defer h.close()
	c := h.conn()
	c.exec("CREATE DATABASE d")
	c.exec(`CREATE TABLE d.t (id INT PRIMARY KEY, ti TINYINT, si SMALLINT, mi MEDIUMINT, i INT, iu INT UNSIGNED,
		b BIGINT, bu BIGINT UNSIGNED, p DECIMAL(20,2), q DECIMAL(65,30), f FLOAT, dbl DOUBLE, s VARCHAR(10), y YEAR)`)
	c.exec(`INSERT INTO d.t VALUES
		(1, 1, 1, 1, 1, 1, 9007199254740993, 18446744073709551615, 1.10, 1.5, 1.5, 1.5, '1.5', 2001),
		(2, 2, 2, 2, 2, 2, 9007199254740993, 1, 2.20, 2.25, 2.5, 2.5, '2', 2002),
		(3, NULL, NULL, NULL, NULL, NULL, 1, NULL, 0.01, NULL, NULL, NULL, NULL, NULL),
		(4, -3, NULL, NULL, NULL, NULL, -1, NULL, -0.01, NULL, NULL, NULL, NULL, NULL)`)
	for _, tc := range []struct{ expr, typ, val string }{
		{"SUM(ti)", "decimal(25,0)", "0"},
		{"SUM(si)", "decimal(27,0)", "3"},
		{"SUM(mi)", "decimal(30,0)", "3"},
		{"SUM(i)", "decimal(32,0)", "3"},
		{"SUM(iu)", "decimal(32,0)", "3"},
		{"SUM(b)", "decimal(41,0)", "18014398509481986"},
		{"SUM(bu)", "decimal(42,0)", "18446744073709551616"},
		{"SUM(p)", "decimal(42,2)", "3.3"},
		{"SUM(q)", "decimal(65,30)", "3.75"},
		{"SUM(y)", "decimal(26,0)", "4003"},
		{"SUM(DISTINCT b)", "decimal(41,0)", "9007199254740993"},
		{"AVG(ti)", "decimal(7,4)", "0"},
		{"AVG(i)", "decimal(14,4)", "1.5"},
		{"AVG(b)", "decimal(23,4)", "4503599627370496.5"},
		{"AVG(bu)", "decimal(24,4)", "9223372036854775808"},
		{"AVG(p)", "decimal(24,6)", "0.825"},
		{"AVG(q)", "decimal(65,30)", "1.875"},
		{"AVG(DISTINCT b)", "decimal(23,4)", "3002399751580331"},
		{"SUM(f)", "double", "4"},
		{"SUM(dbl)", "double", "4"},
		{"SUM(s)", "double", "3.5"},
		{"AVG(dbl)", "double", "2"},
	} {
		q := "SELECT " + tc.expr + " FROM d.t"
		sch, _, _, err := h.e.GMS.Query(c.ctx.WithQuery(q), q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if got := sch[0].Type.String(); got != tc.typ {
			t.Errorf("%s: type %s, want %s", tc.expr, got, tc.typ)
		}
		if got := c.rows(q); got != tc.val {
			t.Errorf("%s = %s, want %s", tc.expr, got, tc.val)
		}
	}
	// CREATE TABLE ... SELECT creates the aggregates' columns with their
	// types (MariaDB: decimal(32,0), decimal(14,4), decimal(42,2)), and
	// keeps the values exact.
	c.exec("CREATE TABLE d.ctas AS SELECT SUM(i) s, AVG(i) a, SUM(p) sp, SUM(dbl) sd, COUNT(*) n FROM d.t")
	for col, want := range map[string]string{"s": "decimal(32,0)", "a": "decimal(14,4)", "sp": "decimal(42,2)", "sd": "double", "n": "bigint"} {
		q := "SELECT DATA_TYPE, COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'd' AND TABLE_NAME = 'ctas' AND COLUMN_NAME = '" + col + "'"
		got := c.rows(q)
		if !strings.HasSuffix(got, want) {
			t.Errorf("CREATE TABLE ... SELECT column %s: %s, want %s", col, got, want)
		}
	}
	if got, want := c.rows("SELECT s, a, sp FROM d.ctas"), "3,1.5,3.3"; got != want {
		t.Errorf("CREATE TABLE ... SELECT rows: %s, want %s", got, want)
	}
	c.exec("CREATE TABLE d.ctas2 AS SELECT id, SUM(b) sb FROM d.t GROUP BY id")
	if got := c.rows("SELECT COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'd' AND TABLE_NAME = 'ctas2' AND COLUMN_NAME = 'sb'"); got != "decimal(41,0)" {
		t.Errorf("CREATE TABLE ... SELECT ... GROUP BY: sb is %s, want decimal(41,0)", got)
	}

	// AVG rounds half away from zero at its scale.
	c.exec("CREATE TABLE d.r (id INT PRIMARY KEY, v INT)")
	c.exec("INSERT INTO d.r VALUES (1, 1), (2, 0), (3, 0), (4, 1), (5, 0), (6, 0)")
	expect := func(results map[string]string) {
		t.Helper()
		for q, want := range results {
			if got := c.rows(q); got != want {
				t.Errorf("%s = %s, want %s", q, got, want)
			}
		}
	}
	expect(map[string]string{
		"SELECT AVG(v) FROM d.r":                      "0.3333",
		"SELECT AVG(-v) FROM d.r":                     "-0.3333",
		"SELECT AVG(v) FROM d.r WHERE id IN (1,2,3)":  "0.3333",
		"SELECT AVG(v) FROM d.r WHERE id IN (1,4,2)":  "0.6667",
		"SELECT AVG(-v) FROM d.r WHERE id IN (1,4,2)": "-0.6667",
		"SELECT SUM(v) FROM d.r WHERE id > 10":        "<nil>",
		"SELECT AVG(v) FROM d.r WHERE id > 10":        "<nil>",
		// Grouped, in expressions, in HAVING and ORDER BY.
		"SELECT v, SUM(id) FROM d.r GROUP BY v ORDER BY v":              "0,16;1,5",
		"SELECT SUM(id) / 4, SUM(id) * 1.5 FROM d.r":                    "5.25,31.5",
		"SELECT v FROM d.r GROUP BY v HAVING SUM(id) > 10":              "0",
		"SELECT v, AVG(id) a FROM d.r GROUP BY v ORDER BY a DESC":       "0,4;1,2.5",
		"SELECT (SELECT SUM(id) FROM d.r) + 1":                          "22",
		"SELECT COUNT(*) FROM d.r WHERE id < (SELECT AVG(id) FROM d.r)": "3",
	})
	// Past int64: the running sum goes on as a decimal.
	c.exec("CREATE TABLE d.o (id INT PRIMARY KEY, v BIGINT)")
	c.exec("INSERT INTO d.o VALUES (1, 9223372036854775807), (2, 9223372036854775807), (3, -5), (4, -9223372036854775808)")
	expect(map[string]string{
		"SELECT SUM(v) FROM d.o WHERE id < 3":  "18446744073709551614",
		"SELECT SUM(v) FROM d.o":               "9223372036854775801",
		"SELECT AVG(v) FROM d.o WHERE id < 3":  "9223372036854775807",
		"SELECT SUM(v) FROM d.o WHERE id >= 3": "-9223372036854775813",
	})
	// Over windows too, with NULL for a frame without values (expected:
	// MariaDB 10.11's).
	c.exec("CREATE TABLE d.w (id INT PRIMARY KEY, g INT, v BIGINT, p DECIMAL(6,2))")
	c.exec("INSERT INTO d.w VALUES (1,1,9007199254740993,1.10),(2,1,9007199254740993,NULL),(3,2,NULL,2.25),(4,2,5,NULL),(5,2,NULL,NULL)")
	q := `SELECT id, SUM(v) OVER (PARTITION BY g ORDER BY id) s,
		AVG(p) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) a,
		SUM(p) OVER (PARTITION BY g ORDER BY id ROWS BETWEEN CURRENT ROW AND CURRENT ROW) c FROM d.w ORDER BY id`
	sch, _, _, err := h.e.GMS.Query(c.ctx.WithQuery(q), q)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"int", "decimal(41,0)", "decimal(10,6)", "decimal(28,2)"} {
		if got := sch[i].Type.String(); got != want {
			t.Errorf("window column %d: type %s, want %s", i, got, want)
		}
	}
	want := "1,9007199254740993,1.1,1.1;2,18014398509481986,1.1,<nil>;3,<nil>,2.25,2.25;4,5,2.25,<nil>;5,5,<nil>,<nil>"
	if got := c.rows(q); got != want {
		t.Errorf("windows:\n got %s\nwant %s", got, want)
	}
}
