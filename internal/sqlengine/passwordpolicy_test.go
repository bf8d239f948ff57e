package sqlengine

import (
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
)

// TestPasswordPolicy checks passwords against the policy's levels, as
// MySQL's component does, with its default settings and others.
func TestPasswordPolicy(t *testing.T) {
	def := passwordPolicy{policy: 1, length: 8, numbers: 1, mixedCase: 1, specials: 1, checkUserName: true}
	for _, c := range []struct {
		p        passwordPolicy
		pw       string
		low, med bool
	}{
		{def, "", false, false},
		{def, "short", false, false},
		{def, "abcdefgh", true, false},
		{def, "Abcdefg1", true, false}, // no special character
		{def, "Abcdef1!", true, true},
		{def, "ÄbcdéF1!", true, true},  // characters, not bytes; letters beyond ASCII
		{def, "abcdef1!", true, false}, // no upper case
		{passwordPolicy{length: 4, numbers: 2, mixedCase: 1, specials: 1}, "Ab1!", false, false}, // counts ask for 6
		{passwordPolicy{length: 4, numbers: 2, mixedCase: 1, specials: 1}, "Ab12!x", true, true},
		{passwordPolicy{length: 0}, "", true, true},
	} {
		if got := c.p.meets(c.pw, 0); got != c.low {
			t.Errorf("%+v: %q LOW: %v, want %v", c.p, c.pw, got, c.low)
		}
		if got := c.p.meets(c.pw, 1); got != c.med {
			t.Errorf("%+v: %q MEDIUM: %v, want %v", c.p, c.pw, got, c.med)
		}
	}
	for _, c := range []struct {
		pw, user string
		want     bool
	}{
		{"walter", "walter", true},
		{"retlaw", "walter", true},
		{"Walter", "walter", false},
		{"walter1", "walter", false},
		{"", "", false},
	} {
		if got := namesUser(c.pw, c.user); got != c.want {
			t.Errorf("namesUser(%q, %q) = %v, want %v", c.pw, c.user, got, c.want)
		}
	}
}

// TestPasswordComponent: without the component its variables do not
// exist and VALIDATE_PASSWORD_STRENGTH is 0; with it, weak passwords are
// refused with 1819 in CREATE USER, ALTER USER and SET PASSWORD, hashes
// are not checked, and uninstalling forgets the settings.
func TestPasswordComponent(t *testing.T) {
	h := newHarness(t)
	loadAccounts(t, h)
	c := h.conn()
	t.Cleanup(func() { SetPasswordValidation(false) })
	if _, err := c.query("SELECT @@validate_password.length"); err == nil {
		t.Fatal("validate_password.length exists without the component")
	}
	if rows, err := c.query("SELECT VALIDATE_PASSWORD_STRENGTH('Abcdef1!xyz')"); err != nil || len(rows) != 1 || rows[0][0] != int32(0) {
		t.Fatalf("strength without the component: %v %v, want 0", rows, err)
	}
	c.exec("CREATE USER weak1 IDENTIFIED BY 'x'")

	SetPasswordValidation(true)
	for _, q := range []string{
		"CREATE USER weak2 IDENTIFIED BY 'x'",
		"CREATE USER weak3",
		"CREATE USER weak4 IDENTIFIED WITH caching_sha2_password BY 'abcdefgh'",
		"ALTER USER weak1 IDENTIFIED BY 'abcdefgh'",
		"SET PASSWORD FOR weak1 = 'abc'",
	} {
		if _, err := c.query(q); errno(err) != 1819 {
			t.Errorf("%s: %v, want 1819", q, err)
		}
	}
	c.exec("CREATE USER strong IDENTIFIED BY 'Abcdef1!'")
	c.exec("ALTER USER weak1 IDENTIFIED BY 'Abcdef1!'")
	// A hash cannot be checked.
	c.exec("CREATE USER hashed IDENTIFIED WITH mysql_native_password AS '*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19'")

	c.exec("SET GLOBAL validate_password.policy = LOW")
	c.exec("CREATE USER low IDENTIFIED BY 'abcdefgh'")
	c.exec("SET GLOBAL validate_password.number_count = 6")
	if rows, err := c.query("SELECT @@validate_password.length"); err != nil || len(rows) != 1 || rows[0][0] != int64(9) {
		t.Fatalf("length after number_count = 6: %v %v, want 9 (6 + 1 + 2)", rows, err)
	}
	if rows, err := c.query("SELECT VALIDATE_PASSWORD_STRENGTH('abc'), VALIDATE_PASSWORD_STRENGTH('abcde'), VALIDATE_PASSWORD_STRENGTH('abcdefghi'), VALIDATE_PASSWORD_STRENGTH('Ab123456!')"); err != nil || len(rows) != 1 ||
		rows[0][0] != int32(0) || rows[0][1] != int32(25) || rows[0][2] != int32(50) || rows[0][3] != int32(100) {
		t.Fatalf("strengths: %v %v, want 0 25 50 100", rows, err)
	}
	if _, err := c.query("SET GLOBAL validate_password.dictionary_file = '/usr/share/dict/words'"); errno(err) != 1235 {
		t.Fatalf("a dictionary file: %v, want 1235", err)
	}

	SetPasswordValidation(false)
	c.exec("CREATE USER weak5 IDENTIFIED BY 'x'")
	SetPasswordValidation(true)
	if _, v, _ := sql.SystemVariables.GetGlobal("validate_password.policy"); v != "MEDIUM" {
		t.Fatalf("policy after reinstalling: %v, want MEDIUM (the default)", v)
	}
}
