package sqlengine

import (
	"testing"

	"github.com/dolthub/vitess/go/mysql"
)

// TestReturningRefused: INSERT, REPLACE, UPDATE and DELETE with a
// RETURNING clause are MySQL's syntax error, as text, prepared by the
// protocol and with SQL PREPARE, and change nothing; a column named
// returning_x is not mistaken for one.
func TestReturningRefused(t *testing.T) {
	h := newHarness(t)
	c := h.conn()
	s := c.ctx.Session.(*Session)
	h.e.sessions.Store(s.ID(), s)
	c.exec("CREATE DATABASE d")
	c.exec("USE d")
	c.exec("CREATE TABLE r (id INT PRIMARY KEY AUTO_INCREMENT, returning_x INT)")
	for _, q := range []string{
		"INSERT INTO r (returning_x) VALUES (1) RETURNING id",
		"REPLACE INTO r VALUES (1, 2) RETURNING id",
		"INSERT INTO r (returning_x) SELECT 1 RETURNING id, returning_x",
	} {
		if _, err := c.query(q); errno(err) != mysql.ERParseError {
			t.Errorf("%s: %v, want 1064", q, err)
		}
		if _, _, err := h.e.CheckPrepare(s.ID(), q); errno(err) != mysql.ERParseError {
			t.Errorf("prepared %s: %v, want 1064", q, err)
		}
		if _, err := c.query("PREPARE p FROM '" + q + "'"); errno(err) != mysql.ERParseError {
			t.Errorf("PREPARE p FROM %s: %v, want 1064", q, err)
		}
	}
	for _, q := range []string{"UPDATE r SET returning_x = 1 RETURNING id", "DELETE FROM r RETURNING id",
		"CREATE TRIGGER tr AFTER UPDATE ON r FOR EACH ROW INSERT INTO r (returning_x) VALUES (1) RETURNING id",
		"CREATE PROCEDURE p() BEGIN IF 1 THEN DELETE FROM r RETURNING id; END IF; END"} {
		if _, err := c.query(q); errno(err) != mysql.ERParseError {
			t.Errorf("%s: %v, want 1064", q, err)
		}
	}
	c.exec("INSERT INTO r (returning_x) VALUES (7)")
	if got := c.rows("SELECT id, returning_x FROM r"); got != "1,7" {
		t.Fatalf("rows %s, want only 1,7", got)
	}
}
