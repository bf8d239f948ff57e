package sqlengine

import (
	"bytes"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestAlterUserLocking: ACCOUNT LOCK/UNLOCK and the password-locking
// options are stored on the accounts (MySQL's attribute layout), logged,
// checked as MySQL checks them, and reset the failure count.
func TestAlterUserLocking(t *testing.T) {
	fs := vfs.NewCrashableMem()
	h := openHarness(t, fs)
	loadAccounts(t, h)
	var resets []string
	h.e.LoginFailuresReset = func(user, host string) { resets = append(resets, user+"@"+host) }
	root := h.conn()
	root.exec("CREATE USER a@'%' IDENTIFIED BY 'pw'")
	root.exec("CREATE USER `account`@'%'")
	root.exec("CREATE USER b@'localhost'")

	if err := root.accountStatement("ALTER USER a@'%', `account` ACCOUNT LOCK FAILED_LOGIN_ATTEMPTS 3 PASSWORD_LOCK_TIME UNBOUNDED"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "account"} {
		u := h.user(name, "%")
		if n, d := PasswordLocking(u); !u.Locked || n != 3 || d != -1 {
			t.Fatalf("%s: locked %v, attempts %d, days %d", name, u.Locked, n, d)
		}
	}
	if u := h.user("a", "%"); *u.Attributes != `{"Password_locking":{"failed_login_attempts":3,"password_lock_time_days":-1}}` {
		t.Fatalf("attributes: %s", *u.Attributes)
	}
	if len(resets) != 2 {
		t.Fatalf("failure counts reset: %v", resets)
	}
	resets = nil
	if err := root.accountStatement("ALTER USER a ACCOUNT UNLOCK PASSWORD_LOCK_TIME 0;"); err != nil {
		t.Fatal(err)
	}
	if u := h.user("a", "%"); u.Locked || u.Attributes == nil {
		t.Fatalf("after UNLOCK: locked %v, attributes %v", u.Locked, u.Attributes)
	}
	if err := root.accountStatement("ALTER USER a FAILED_LOGIN_ATTEMPTS 0"); err != nil {
		t.Fatal(err)
	}
	if u := h.user("a", "%"); u.Attributes != nil {
		t.Fatalf("no option left, attributes %s", *u.Attributes)
	}
	if len(resets) != 2 || resets[0] != "a@%" {
		t.Fatalf("resets: %v", resets)
	}
	if !bytes.Contains(binlogBytes(t, fs), []byte("ALTER USER a@'%', `account` ACCOUNT LOCK FAILED_LOGIN_ATTEMPTS 3 PASSWORD_LOCK_TIME UNBOUNDED")) {
		t.Fatal("the binlog lacks the ALTER USER")
	}

	for _, c := range []struct {
		q    string
		want int
	}{
		{"ALTER USER ghost ACCOUNT LOCK", 1396},
		{"ALTER USER IF EXISTS ghost ACCOUNT LOCK", 0},
		{"ALTER USER a IDENTIFIED BY 'x' ACCOUNT LOCK", 1235},
		{"ALTER USER a FAILED_LOGIN_ATTEMPTS 40000", 1064},
		{"ALTER USER a PASSWORD_LOCK_TIME forever", 1064},
		{"ALTER USER a ACCOUNT", 1064},
	} {
		handled, err := h.e.AccountStatement(root.ctx, c.q, func([]string) bool { return true })
		if !handled || sqlErrNum(err) != c.want {
			t.Errorf("%s: handled %v, %v; want %d", c.q, handled, err, c.want)
		}
	}
	// Not this form: left to go-mysql-server.
	for _, q := range []string{"ALTER USER `account` IDENTIFIED BY 'x'", "ALTER USER a IDENTIFIED BY 'account'", "ALTER TABLE t ADD COLUMN account INT"} {
		if handled, err := h.e.AccountStatement(root.ctx, q, func([]string) bool { return true }); handled {
			t.Errorf("%s was taken (%v)", q, err)
		}
	}
	b := h.connAs("b", "localhost")
	if err := b.accountStatement("ALTER USER b@'localhost' ACCOUNT LOCK"); sqlErrNum(err) != 1227 {
		t.Fatalf("ALTER USER ... ACCOUNT LOCK without CREATE USER: %v", err)
	}
}
