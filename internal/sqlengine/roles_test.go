package sqlengine

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/dolthub/vitess/go/mysql"
)

// accountStatement runs q as the server does for the account statements
// go-mysql-server lacks; it fails the test if q is not one.
func (c *conn) accountStatement(q string) error {
	c.h.t.Helper()
	handled, err := c.h.e.AccountStatement(c.ctx, q, func([]string) bool { return true })
	if !handled {
		c.h.t.Fatalf("%s: not handled", q)
	}
	return err
}

func sqlErrNum(err error) int {
	var se *mysql.SQLError
	if errors.As(err, &se) {
		return se.Num
	}
	return 0
}

// TestRoleStatements: SET ROLE accepts what leaves every granted role
// active and refuses a narrowing one; SET DEFAULT ROLE checks the roles
// are granted and who may set them, and is logged.
func TestRoleStatements(t *testing.T) {
	fs := vfs.NewCrashableMem()
	h := openHarness(t, fs)
	loadAccounts(t, h)
	root := h.conn()
	for _, q := range []string{
		"CREATE USER u@'localhost' IDENTIFIED BY 'pw'",
		"CREATE USER other@'%'",
		"CREATE ROLE r1, r2, r3",
		"GRANT r1, r2 TO u@'localhost'",
	} {
		root.exec(q)
	}
	u := h.connAs("u", "localhost")
	for _, c := range []struct {
		q    string
		want int
	}{
		{"SET ROLE ALL", 0},
		{"SET ROLE r1, r2", 0},
		{"SET ROLE `r2`@`%`, 'r1'", 0},
		{"SET ROLE ALL EXCEPT r3", 0},
		{"SET ROLE r1", 1235},
		{"SET ROLE NONE", 1235},
		{"SET ROLE DEFAULT", 1235},
		{"SET ROLE ALL EXCEPT r1", 1235},
		{"SET ROLE r3", 3530},
		{"SET ROLE", 1064},
		{"SET DEFAULT ROLE r1 TO u@'localhost'", 0},
		{"SET DEFAULT ROLE r1, r2 TO u@localhost", 0},
		{"SET DEFAULT ROLE NONE TO u@'localhost'", 0},
		{"SET DEFAULT ROLE ALL TO u@'localhost'", 0},
		{"SET DEFAULT ROLE r1", 0}, // MariaDB: one's own
		{"SET DEFAULT ROLE r3 TO u@'localhost'", 3530},
		{"SET DEFAULT ROLE NONE TO other@'%'", 1227},
		{"SET DEFAULT ROLE NONE FOR ghost@'%'", 1227},
	} {
		if got := sqlErrNum(u.accountStatement(c.q)); got != c.want {
			t.Errorf("%s: error %d, want %d", c.q, got, c.want)
		}
	}
	if got := sqlErrNum(root.accountStatement("SET DEFAULT ROLE NONE FOR ghost@'%'")); got != 1396 {
		t.Errorf("SET DEFAULT ROLE for a missing account: %d, want 1396", got)
	}
	if err := root.accountStatement("SET DEFAULT ROLE r2 FOR 'u'@'localhost'"); err != nil {
		t.Fatal(err)
	}
	if err := root.accountStatement("SET ROLE NONE"); err != nil { // root has no roles
		t.Fatal(err)
	}
	if !bytes.Contains(binlogBytes(t, fs), []byte("SET DEFAULT ROLE r2 FOR 'u'@'localhost'")) {
		t.Fatal("SET DEFAULT ROLE is not in the binlog")
	}
	// Statements that are not role statements are left to the parser.
	for _, q := range []string{"SET @role = 1", "SELECT 'SET ROLE ALL'", "SET DEFAULT_ROLE = 1"} {
		if handled, _ := h.e.RoleStatement(root.ctx, q); handled {
			t.Errorf("%s was taken for a role statement", q)
		}
	}
}

// TestRenameUser: RENAME USER keeps the password, privileges and role
// grants, renames every pair or none, and needs CREATE USER.
func TestRenameUser(t *testing.T) {
	h := newHarness(t)
	loadAccounts(t, h)
	root := h.conn()
	for _, q := range []string{
		"CREATE DATABASE d",
		"CREATE USER a@'%' IDENTIFIED BY 'pw'",
		"CREATE USER b@'%'",
		"CREATE ROLE r",
		"GRANT SELECT ON d.* TO r",
		"GRANT r TO a@'%'",
		"GRANT INSERT ON d.* TO a@'%'",
	} {
		root.exec(q)
	}
	hash := h.user("a", "%").AuthString
	if got := sqlErrNum(root.accountStatement("RENAME USER a@'%' TO a2@'%', missing@'%' TO m2@'%'")); got != 1396 {
		t.Fatalf("a pair that fails: %d, want 1396", got)
	}
	if h.user("a", "%") == nil || h.user("a2", "%") != nil {
		t.Fatal("a failing RENAME USER renamed some accounts")
	}
	if got := sqlErrNum(root.accountStatement("RENAME USER a@'%' TO b@'%'")); got != 1396 {
		t.Fatalf("rename onto an existing account: %d, want 1396", got)
	}
	b := h.connAs("b", "%")
	if got := sqlErrNum(b.accountStatement("RENAME USER a@'%' TO x@'%'")); got != 1227 {
		t.Fatalf("RENAME USER without CREATE USER: %d, want 1227", got)
	}
	if err := root.accountStatement("RENAME USER a@'%' TO a2@'%', r TO r2"); err != nil {
		t.Fatal(err)
	}
	a2 := h.user("a2", "%")
	if a2 == nil || a2.AuthString != hash || h.user("a", "%") != nil {
		t.Fatalf("a2 after the rename: %+v", a2)
	}
	grants := root.rows("SHOW GRANTS FOR a2@'%'")
	for _, want := range []string{"GRANT INSERT ON `d`.* TO `a2`@`%`", "GRANT `r2`@`%` TO `a2`@`%`"} {
		if !strings.Contains(grants, want) {
			t.Errorf("grants of a2 lack %q: %s", want, grants)
		}
	}
	if g := root.rows("SHOW GRANTS FOR r2"); !strings.Contains(g, "GRANT SELECT ON `d`.* TO `r2`@`%`") {
		t.Errorf("grants of r2: %s", g)
	}
}
