package sqlengine

import (
	"strings"
	"testing"
)

// TestSQLLogBin: sql_log_bin shows 1, and turning it off is refused in
// every spelling (the binlog is the only log: it would be ignored); so is
// turning off explicit_defaults_for_timestamp.
func TestSQLLogBin(t *testing.T) {
	h := newHarness(t)
	c := h.conn()
	if got := c.rows("SELECT @@sql_log_bin, @@session.sql_log_bin"); got != "1,1" {
		t.Fatalf("@@sql_log_bin: %s", got)
	}
	for _, q := range []string{"SET sql_log_bin = 0", "SET SESSION sql_log_bin = OFF", "SET @@session.sql_log_bin = 'OFF'", "SET sql_log_bin = false", "SET GLOBAL sql_log_bin = 0"} {
		if _, err := c.query(q); sqlErrNum(err) != 1235 || !strings.Contains(err.Error(), "sql_log_bin = 0") {
			t.Errorf("%s: %v, want 1235", q, err)
		}
	}
	for _, q := range []string{"SET explicit_defaults_for_timestamp = 0", "SET GLOBAL explicit_defaults_for_timestamp = OFF"} {
		if _, err := c.query(q); sqlErrNum(err) != 1235 {
			t.Errorf("%s: %v, want 1235", q, err)
		}
	}
	if got := c.rows("SELECT @@explicit_defaults_for_timestamp"); got != "1" {
		t.Fatalf("@@explicit_defaults_for_timestamp: %s", got)
	}
	c.exec("SET explicit_defaults_for_timestamp = 1")
	c.exec("SET sql_log_bin = 1")
	c.exec("SET sql_log_bin = ON")
	if got := c.rows("SELECT @@sql_log_bin"); got != "1" {
		t.Fatalf("@@sql_log_bin after the refusals: %s", got)
	}
}
