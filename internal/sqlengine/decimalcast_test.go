package sqlengine

import (
	"errors"
	"fmt"
	"testing"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/lockstepdb/lockstep/internal/mysqlerr"
)

// TestDecimalCasts: casts to DECIMAL are DECIMAL(M,D) (M 10 and D 0
// when not given), rounded half away from zero, clipped with 1264 and
// zero with 1292 for what is no number (expected values: MariaDB
// 10.11's); a precision or a scale past their bounds are MySQL 8's
// errors (MariaDB allows a scale up to 38, MySQL 30).
func TestDecimalCasts(t *testing.T) {
	h := newHarness(t)
	defer h.close()
	c := h.conn()
	for _, tc := range []struct{ expr, typ, val, warning string }{
		{"CAST(1.5 AS DECIMAL)", "decimal(10,0)", "2", ""},
		{"CAST(-2.5 AS DECIMAL)", "decimal(10,0)", "-3", ""},
		{"CAST(1.55 AS DECIMAL(5))", "decimal(5,0)", "2", ""},
		{"CAST(1.55 AS DECIMAL(5,0))", "decimal(5,0)", "2", ""},
		{"CONVERT(2.5, DECIMAL)", "decimal(10,0)", "3", ""},
		{"CAST(NULL AS DECIMAL)", "decimal(10,0)", "<nil>", ""},
		{"CAST('abc' AS DECIMAL)", "decimal(10,0)", "0", "1292"},
		{"CAST('7.5x' AS DECIMAL)", "decimal(10,0)", "8", "1292"},
		{"CAST(12345678901 AS DECIMAL)", "decimal(10,0)", "9999999999", "1264"},
		{"CAST(-12345678901 AS DECIMAL)", "decimal(10,0)", "-9999999999", "1264"},
		{"CAST(1.55 AS DECIMAL(5,1))", "decimal(5,1)", "1.6", ""},
		{"CAST(-1.25 AS DECIMAL(5,1))", "decimal(5,1)", "-1.3", ""},
		{"CAST(1.236 AS DECIMAL(4,2))", "decimal(4,2)", "1.24", ""},
		{"CAST(123.236 AS DECIMAL(4,2))", "decimal(4,2)", "99.99", "1264"},
		{"CAST(-123.236 AS DECIMAL(4,2))", "decimal(4,2)", "-99.99", "1264"},
		{"CAST(99.996 AS DECIMAL(4,2))", "decimal(4,2)", "99.99", "1264"},
		{"CAST(0.5 AS DECIMAL(3,3))", "decimal(3,3)", "0.5", ""},
		{"CAST(1 AS DECIMAL(3,3))", "decimal(3,3)", "0.999", "1264"},
		{"CONVERT('x', DECIMAL(5,2))", "decimal(5,2)", "0", "1292"},
		{"CAST(1 AS DECIMAL(65,30))", "decimal(65,30)", "1", ""},
		{"CAST(1/3 AS DECIMAL(65,30))", "decimal(65,30)", "0.333333333", ""},
		{"CAST(1/3 AS DECIMAL(10,2))", "decimal(10,2)", "0.33", ""},
		{"CAST(1.5 AS DECIMAL(0))", "decimal(10,0)", "2", ""},
	} {
		q := "SELECT " + tc.expr
		sch, _, _, err := h.e.GMS.Query(c.ctx.WithQuery(q), q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if got := sch[0].Type.String(); got != tc.typ {
			t.Errorf("%s: type %s, want %s", tc.expr, got, tc.typ)
		}
		if sch[0].Name != tc.expr {
			t.Errorf("%s: column named %q", tc.expr, sch[0].Name)
		}
		if got := c.rows(q); got != tc.val {
			t.Errorf("%s = %s, want %s", tc.expr, got, tc.val)
		}
		ws := c.ctx.Warnings()
		switch {
		case tc.warning == "" && len(ws) > 0:
			t.Errorf("%s: warnings %v", tc.expr, ws)
		case tc.warning != "" && (len(ws) != 1 || fmt.Sprint(ws[0].Code) != tc.warning):
			t.Errorf("%s: warnings %v, want %s", tc.expr, ws, tc.warning)
		}
		c.ctx.ClearWarnings()
	}
	// A precision past 65 is MySQL's 1426, a scale past 30 1425, and a
	// scale past the precision 1427.
	for expr, want := range map[string]int{
		"CAST(1.5 AS DECIMAL(70))":    mysqlerr.TooBigPrecision,
		"CAST(1.5 AS DECIMAL(66,2))":  mysqlerr.TooBigPrecision,
		"CAST(1.5 AS DECIMAL(40,31))": mysqlerr.TooBigScale,
		"CAST(1.5 AS DECIMAL(5,6))":   mysqlerr.MBiggerThanD,
		"CONVERT(1.5, DECIMAL(0,2))":  mysqlerr.MBiggerThanD,
	} {
		_, err := c.query("SELECT " + expr)
		var se *mysql.SQLError
		if !errors.As(mysqlerr.Restore(err), &se) || se.Num != want {
			t.Errorf("%s: %v, want %d", expr, err, want)
		}
	}
	// In tables, in SUM, and in a view.
	c.exec("CREATE DATABASE d")
	c.exec("CREATE TABLE d.t (id INT PRIMARY KEY, v DECIMAL(6,2))")
	c.exec("INSERT INTO d.t VALUES (1, 1.50), (2, 2.50), (3, -0.50)")
	c.exec("CREATE VIEW d.w AS SELECT id, CAST(v AS DECIMAL) r FROM d.t")
	for q, want := range map[string]string{
		"SELECT SUM(CAST(v AS DECIMAL)) FROM d.t":         "4",
		"SELECT id FROM d.t WHERE CAST(v AS DECIMAL) = 3": "2",
		"SELECT r FROM d.w ORDER BY id":                   "2;3;-1",
	} {
		if got := c.rows(q); got != want {
			t.Errorf("%s = %s, want %s", q, got, want)
		}
	}
}
