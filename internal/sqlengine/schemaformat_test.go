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
