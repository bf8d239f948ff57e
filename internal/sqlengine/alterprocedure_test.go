package sqlengine

import "testing"

// TestProcedureParts: where a CREATE PROCEDURE's characteristics and body
// begin, and what its characteristics are, whatever its parameters and
// body hold.
func TestProcedureParts(t *testing.T) {
	for _, c := range []struct {
		stmt, chars, body string
	}{
		{"CREATE DEFINER=`a`@`%` PROCEDURE p() SELECT 1", "", "SELECT 1"},
		{"CREATE DEFINER=`a`@`%` PROCEDURE `p (x)`(IN d DECIMAL(10,2), OUT s VARCHAR(5)) COMMENT 'begin (' DETERMINISTIC READS SQL DATA BEGIN SELECT d; END",
			"\n    READS SQL DATA\n    DETERMINISTIC\n    COMMENT 'begin ('", "BEGIN SELECT d; END"},
		{"CREATE DEFINER=`a`@`%` PROCEDURE db.p(x INT) LANGUAGE SQL NOT DETERMINISTIC SQL SECURITY INVOKER NO SQL lbl: BEGIN END lbl",
			"\n    NO SQL\n    SQL SECURITY INVOKER", "lbl: BEGIN END lbl"},
		{"CREATE DEFINER=`a`@`%` PROCEDURE p() CONTAINS SQL MODIFIES SQL DATA COMMENT 'it''s' UPDATE t SET c = 1",
			"\n    MODIFIES SQL DATA\n    COMMENT 'it\\'s'", "UPDATE t SET c = 1"},
	} {
		params, body, chars, ok := procedureParts(c.stmt)
		if !ok || chars.text() != c.chars || c.stmt[body:] != c.body || c.stmt[params-1] != ')' {
			t.Errorf("%s: ok %v, characteristics %q, body %q, params end %d", c.stmt, ok, chars.text(), c.stmt[body:], params)
		}
	}
	if _, _, _, ok := procedureParts("CREATE PROCEDURE p("); ok {
		t.Error("a statement without its body was read")
	}
}
