package sqlengine

import (
	"errors"
	"testing"

	"github.com/dolthub/vitess/go/mysql"
	"github.com/lockstepdb/lockstep/internal/mysqlerr"
)

// TestTimeCasts: CAST to TIME rounds to whole seconds half away from
// zero, as MySQL 8 does; TIME(6) keeps the microseconds; TIME(1) to
// TIME(5) are refused (1235) rather than answered with six digits, and
// a precision past 6 is 1426.
func TestTimeCasts(t *testing.T) {
	h := newHarness(t)
	defer h.close()
	c := h.conn()
	for expr, want := range map[string]string{
		"CAST('10:11:12.5' AS TIME)":                       "10:11:13",
		"CAST('10:11:12.4' AS TIME)":                       "10:11:12",
		"CAST('-10:11:12.5' AS TIME)":                      "-10:11:13",
		"CAST('10:11:12.5' AS TIME(0))":                    "10:11:13",
		"CONVERT('23:59:59.7', TIME)":                      "24:00:00",
		"CAST('838:59:59.9' AS TIME)":                      "838:59:59",
		"CAST('10:11:12.123456' AS TIME(6))":               "10:11:12.123456",
		"CAST(NULL AS TIME)":                               "<nil>",
		"CAST('2020-01-02 03:04:05.6' AS TIME)":            "03:04:06",
		"CAST('nonsense' AS TIME)":                         "<nil>",
		"CAST(101112.5 AS TIME)":                           "10:11:13",
		"CAST(TIMESTAMP('2020-01-02 03:04:05.6') AS TIME)": "03:04:06",
	} {
		if got := c.rows("SELECT " + expr); got != want {
			t.Errorf("%s = %s, want %s", expr, got, want)
		}
	}
	for expr, want := range map[string]uint16{
		"CAST('10:11:12.5' AS TIME(3))": mysql.ERNotSupportedYet,
		"CAST('10:11:12.5' AS TIME(7))": mysqlerr.TooBigPrecision,
	} {
		_, err := c.query("SELECT " + expr)
		var se *mysql.SQLError
		if !errors.As(mysqlerr.Restore(err), &se) || se.Num != int(want) {
			t.Errorf("%s: %v, want %d", expr, err, want)
		}
	}
}
