package sqlengine

import (
	"fmt"
	"strings"
	"testing"
)

// TestCommentsInShowCreateTable: table, column and index comments come
// back escaped as MySQL and MariaDB write them (a quote doubled, a
// backslash doubled, a newline as \n, a double quote as it is), and
// the statement creates the same table again.
func TestCommentsInShowCreateTable(t *testing.T) {
	h := newHarness(t)
	defer h.close()
	c := h.conn()
	c.exec("CREATE DATABASE d")
	c.exec(`CREATE TABLE d.t (id INT PRIMARY KEY COMMENT 'col "q" it''s \\ x\nz', v INT, KEY kv (v) COMMENT 'idx "i" it''s') COMMENT='tab "t" it''s'`)
	show := func(table string) string {
		rows, err := c.query("SHOW CREATE TABLE d." + table)
		if err != nil || len(rows) != 1 {
			t.Fatalf("SHOW CREATE TABLE d.%s: %v %v", table, rows, err)
		}
		return fmt.Sprint(rows[0][1])
	}
	got := show("t")
	for _, want := range []string{
		`COMMENT 'col "q" it''s \\ x\nz'`,
		`KEY ` + "`kv`" + ` (` + "`v`" + `) COMMENT 'idx "i" it''s'`,
		`COMMENT='tab "t" it''s'`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("SHOW CREATE TABLE lacks %s:\n%s", want, got)
		}
	}
	c.exec(strings.Replace(got, "CREATE TABLE `t`", "CREATE TABLE d.u", 1))
	if again := strings.Replace(show("u"), "CREATE TABLE `u`", "CREATE TABLE `t`", 1); again != got {
		t.Errorf("the statement made another table:\n%s\nagainst\n%s", again, got)
	}
	if got := c.rows("SELECT COLUMN_COMMENT FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'd' AND TABLE_NAME = 'u' AND COLUMN_NAME = 'id'"); got != "col \"q\" it's \\ x\nz" {
		t.Errorf("the column comment read back as %q", got)
	}
}

// TestEnumAndSetDefaultsInShowCreateTable: the default of an ENUM or SET
// column is written as its members' names (go-mysql-server wrote the
// stored number, a default the statement then refused), and the
// statement creates the same table again.
func TestEnumAndSetDefaultsInShowCreateTable(t *testing.T) {
	h := newHarness(t)
	defer h.close()
	c := h.conn()
	c.exec("CREATE DATABASE d")
	c.exec(`CREATE TABLE d.t (id INT PRIMARY KEY, k ENUM('x','y') DEFAULT 'y', n ENUM('p','q') NOT NULL DEFAULT 'p',
		s SET('a','b','c') DEFAULT 'a,c', e SET('a') DEFAULT '', q ENUM('it''s','1') DEFAULT 'it''s', d ENUM('2','1') DEFAULT '1')`)
	rows, err := c.query("SHOW CREATE TABLE d.t")
	if err != nil || len(rows) != 1 {
		t.Fatalf("SHOW CREATE TABLE: %v %v", rows, err)
	}
	got := fmt.Sprint(rows[0][1])
	for _, want := range []string{
		"`k` enum('x','y') DEFAULT 'y'", "`n` enum('p','q') NOT NULL DEFAULT 'p'", "`s` set('a','b','c') DEFAULT 'a,c'",
		"`e` set('a') DEFAULT ''", "`q` enum('it''s','1') DEFAULT 'it''s'", "`d` enum('2','1') DEFAULT '1'",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("SHOW CREATE TABLE lacks %s:\n%s", want, got)
		}
	}
	c.exec(strings.Replace(got, "CREATE TABLE `t`", "CREATE TABLE d.u", 1))
	c.exec("INSERT INTO d.u (id) VALUES (1)")
	if got := c.rows("SELECT CONCAT_WS('|', k, n, s, e, q, d) FROM d.u"); got != "y|p|a,c||it's|1" {
		t.Errorf("the defaults of the table made again: %q", got)
	}
}
