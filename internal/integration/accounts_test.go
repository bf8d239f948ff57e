package integration

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// grantsOf returns SHOW GRANTS for an account, one grant a line.
func grantsOf(t *testing.T, db *sql.DB, account string) string {
	t.Helper()
	rows, err := db.Query("SHOW GRANTS FOR " + account)
	if err != nil {
		t.Fatalf("SHOW GRANTS FOR %s: %v", account, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			t.Fatal(err)
		}
		out = append(out, g)
	}
	return strings.Join(out, "\n")
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestAccountsReplicate: account statements on a Lockstep source reach a
// Lockstep replica and a MariaDB replica through the binlog, with password
// hashes and never the passwords; the replicas' accounts log in with the
// passwords set on the source.
func TestAccountsReplicate(t *testing.T) {
	mport := fixedPort(t)
	p := startServer(t, t.TempDir(), "--mariadb-port", strconv.Itoa(mport))
	pdb := p.db("")
	r := startServer(t, t.TempDir(), "--server-id=2", "--source-host=127.0.0.1", fmt.Sprintf("--source-port=%d", p.port),
		"--source-user=root")
	m := startMariaDB(t, 3)
	mdb := m.db()
	followLockstep(t, mdb, mport)

	for _, q := range []string{
		"CREATE USER app@'%' IDENTIFIED BY 'app-secret-1'",
		"CREATE USER gone@'%' IDENTIFIED BY 'gone-secret'",
		"CREATE DATABASE shop",
		"GRANT SELECT, INSERT ON shop.* TO app@'%'",
		"SET PASSWORD FOR app@'%' = 'app-secret-2'",
		"DROP USER gone@'%'",
	} {
		mustExec(t, pdb, q)
	}
	// Dynamic privileges and caching_sha2_password are MySQL 8's: the
	// MariaDB replica is stopped before them.
	var executed string
	pdb.QueryRow("SELECT @@global.gtid_executed").Scan(&executed)
	want := "0-1-" + executed[strings.LastIndex(executed, "-")+1:]
	mustExec(t, pdb, "GRANT CONNECTION_ADMIN ON *.* TO app@'%'")
	mustExec(t, pdb, "CREATE USER sha@'%' IDENTIFIED WITH caching_sha2_password BY 'sha-secret-1'")
	mustExec(t, pdb, "ALTER USER sha@'%' IDENTIFIED WITH caching_sha2_password BY 'sha-secret-2'")

	rdb := r.db("")
	waitCaughtUp(t, pdb, rdb, 30*time.Second)
	for _, c := range []struct {
		user, pw string
		want     uint16
	}{
		{"app", "app-secret-2", 0},
		{"app", "app-secret-1", 1045},
		{"sha", "sha-secret-2", 0},
		{"sha", "sha-secret-1", 1045},
		{"gone", "gone-secret", 1045},
	} {
		if err := r.login(t, c.user, c.pw, ""); errNumber(err) != c.want || (c.want == 0 && err != nil) {
			t.Errorf("replica login %s/%s: %v, want error %d", c.user, c.pw, err, c.want)
		}
	}
	if pg, rg := grantsOf(t, pdb, "app@'%'"), grantsOf(t, rdb, "app@'%'"); pg != rg || !strings.Contains(pg, "CONNECTION_ADMIN") {
		t.Fatalf("grants differ:\nsource  %s\nreplica %s", pg, rg)
	}

	// The binlog holds hashes, not passwords.
	for _, dir := range []string{p.dir, r.dir} {
		names, _ := filepath.Glob(filepath.Join(dir, "data", "binlog.0*"))
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			for _, secret := range []string{"app-secret", "sha-secret", "gone-secret"} {
				if strings.Contains(string(b), secret) {
					t.Errorf("%s holds the password %q", n, secret)
				}
			}
		}
	}

	// The MariaDB replica: app logs in with the source's password.
	waitFor(t, "the MariaDB replica", 60*time.Second, func() bool {
		var pos string
		mdb.QueryRow("SELECT @@gtid_slave_pos").Scan(&pos)
		return pos == want || strings.Contains(slaveErrors(mdb), "Error")
	})
	app, err := sql.Open("mysql", fmt.Sprintf("app:app-secret-2@tcp(127.0.0.1:%d)/shop", m.port))
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if err := app.Ping(); err != nil {
		t.Fatalf("app on the MariaDB replica: %v (replica: %s)", err, slaveErrors(mdb))
	}
	var gone int
	mdb.QueryRow("SELECT COUNT(*) FROM mysql.user WHERE user = 'gone'").Scan(&gone)
	if gone != 0 {
		t.Fatal("the dropped account exists on the MariaDB replica")
	}

	// A restart of the replica keeps its accounts (they are committed, not
	// cached).
	r.stop()
	r.start()
	if err := r.login(t, "app", "app-secret-2", ""); err != nil {
		t.Fatalf("app on the restarted replica: %v", err)
	}
}

// TestAccountsFromMariaDBSource: the account statements MariaDB writes in
// its binlog (cleartext IDENTIFIED BY, SET PASSWORD with a hash, IDENTIFIED
// VIA ... USING PASSWORD, roles, SET DEFAULT ROLE, IDENTIFIED BY PASSWORD, RENAME and DROP USER)
// are applied by a Lockstep replica with their meaning.
func TestAccountsFromMariaDBSource(t *testing.T) {
	m := startMariaDB(t, 1, "--log-bin=mysql-bin", "--binlog-format=ROW")
	mdb := m.db()
	mustExec(t, mdb, "SET sql_log_bin = 0")
	mustExec(t, mdb, "CREATE USER repl@'%' IDENTIFIED BY 'replpw'")
	mustExec(t, mdb, "GRANT ALL ON *.* TO repl@'%'")
	mustExec(t, mdb, "SET sql_log_bin = 1")
	r := startServer(t, t.TempDir(), "--server-id=2", "--source-host=127.0.0.1", fmt.Sprintf("--source-port=%d", m.port),
		"--source-user=repl", "--source-password=replpw")
	for _, q := range []string{
		"CREATE DATABASE shop",
		"CREATE USER a@'%' IDENTIFIED BY 'a-pw-1'",
		"ALTER USER a@'%' IDENTIFIED BY 'a-pw-2'",
		"SET PASSWORD FOR a@'%' = PASSWORD('a-pw-3')",
		"CREATE USER b@'%' IDENTIFIED VIA mysql_native_password USING PASSWORD('b-pw')",
		"CREATE USER c@'%' IDENTIFIED BY PASSWORD '*D0F0FF97D55500939E8A3C1C66AB30D5F3D4ACCB'", // 'c-pw'
		"CREATE USER d@'%' IDENTIFIED BY 'd-pw'",
		"CREATE ROLE shopper",
		"GRANT SELECT ON shop.* TO shopper",
		"GRANT shopper TO a@'%'",
		"SET DEFAULT ROLE shopper FOR a@'%'",
		"GRANT INSERT ON shop.* TO b@'%'",
		"RENAME USER b@'%' TO b2@'%'",
		"DROP USER d@'%'",
	} {
		mustExec(t, mdb, q)
	}
	var pos string
	mdb.QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos)
	rdb := r.db("")
	var res int
	if err := rdb.QueryRow("SELECT MASTER_GTID_WAIT(?, 30)", pos).Scan(&res); err != nil || res != 0 {
		t.Fatalf("MASTER_GTID_WAIT(%s): %d %v; replica: %v", pos, res, err, replicaStatus(t, rdb))
	}
	for _, c := range []struct {
		user, pw string
		want     uint16
	}{
		{"a", "a-pw-3", 0},
		{"a", "a-pw-2", 1045},
		{"b2", "b-pw", 0},
		{"b", "b-pw", 1045},
		{"c", "c-pw", 0},
		{"d", "d-pw", 1045},
	} {
		if err := r.login(t, c.user, c.pw, ""); errNumber(err) != c.want || (c.want == 0 && err != nil) {
			t.Errorf("login %s/%s: %v, want error %d", c.user, c.pw, err, c.want)
		}
	}
	if g := grantsOf(t, rdb, "b2@'%'"); !strings.Contains(g, "GRANT INSERT ON `shop`.* TO `b2`@`%`") {
		t.Errorf("b2's grants: %s", g)
	}
	if g := grantsOf(t, rdb, "a@'%'"); !strings.Contains(g, "GRANT `shopper`@`%` TO `a`@`%`") {
		t.Errorf("a's grants: %s", g)
	}
	// The role's privilege is a's (every granted role is active).
	mustExec(t, mdb, "CREATE TABLE shop.t (id INT PRIMARY KEY)")
	mdb.QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos)
	if err := rdb.QueryRow("SELECT MASTER_GTID_WAIT(?, 30)", pos).Scan(&res); err != nil || res != 0 {
		t.Fatalf("MASTER_GTID_WAIT(%s): %d %v", pos, res, err)
	}
	a := r.as(t, "a", "a-pw-3")
	if _, err := a.Exec("SELECT * FROM shop.t"); err != nil {
		t.Errorf("a reads shop.t through its role: %v", err)
	}
	if st := replicaStatus(t, rdb); st["Last_SQL_Errno"] != "0" {
		t.Fatalf("replica error: %s %s", st["Last_SQL_Errno"], st["Last_SQL_Error"])
	}
}

// TestAccountLocking: ACCOUNT LOCK refuses logins (3118) on the server and
// on its replica; FAILED_LOGIN_ATTEMPTS with PASSWORD_LOCK_TIME UNBOUNDED
// blocks an account after that many wrong passwords (3955, the right
// password too) until ACCOUNT UNLOCK; CREATE USER with the options is
// refused rather than ignored.
func TestAccountLocking(t *testing.T) {
	p := startServer(t, t.TempDir())
	pdb := p.db("")
	r := startServer(t, t.TempDir(), "--server-id=2", "--source-host=127.0.0.1", fmt.Sprintf("--source-port=%d", p.port),
		"--source-user=root")
	mustExec(t, pdb, "CREATE USER u@'%' IDENTIFIED BY 'right'")
	mustExec(t, pdb, "CREATE USER s@'%' IDENTIFIED WITH caching_sha2_password BY 'right'")
	mustExec(t, pdb, "ALTER USER u@'%' ACCOUNT LOCK")
	waitCaughtUp(t, pdb, r.db(""), 30*time.Second)
	for _, s := range []*server{p, r} {
		if err := s.login(t, "u", "right", ""); errNumber(err) != 3118 {
			t.Fatalf("a locked account: %v, want 3118", err)
		}
	}
	mustExec(t, pdb, "ALTER USER u@'%' ACCOUNT UNLOCK")
	if err := p.login(t, "u", "right", ""); err != nil {
		t.Fatalf("after ACCOUNT UNLOCK: %v", err)
	}

	mustExec(t, pdb, "ALTER USER u@'%', s@'%' FAILED_LOGIN_ATTEMPTS 2 PASSWORD_LOCK_TIME UNBOUNDED")
	for _, name := range []string{"u", "s"} {
		if err := p.login(t, name, "wrong", ""); errNumber(err) != 1045 {
			t.Fatalf("%s: first wrong password: %v, want 1045", name, err)
		}
		if err := p.login(t, name, "right", ""); err != nil {
			t.Fatalf("%s: a success ends the run: %v", name, err)
		}
		for i, want := range []uint16{1045, 3955, 3955} {
			if err := p.login(t, name, "wrong", ""); errNumber(err) != want {
				t.Fatalf("%s: wrong password %d: %v, want %d", name, i+1, err, want)
			}
		}
		if err := p.login(t, name, "right", ""); errNumber(err) != 3955 || !strings.Contains(err.Error(), "blocked for unlimited day(s)") {
			t.Fatalf("%s: the right password while blocked: %v, want 3955", name, err)
		}
	}
	mustExec(t, pdb, "ALTER USER u@'%' ACCOUNT UNLOCK")
	if err := p.login(t, "u", "right", ""); err != nil {
		t.Fatalf("after ACCOUNT UNLOCK: %v", err)
	}
	if err := p.login(t, "s", "right", ""); errNumber(err) != 3955 {
		t.Fatalf("s is still blocked: %v", err)
	}
	for _, q := range []string{
		"CREATE USER v@'%' IDENTIFIED BY 'x' ACCOUNT LOCK",
		"CREATE USER v@'%' IDENTIFIED BY 'x' FAILED_LOGIN_ATTEMPTS 3 PASSWORD_LOCK_TIME 1",
		"ALTER USER u@'%' IDENTIFIED BY 'x' ACCOUNT LOCK",
	} {
		if _, err := pdb.Exec(q); errNumber(err) != 1235 {
			t.Errorf("%s: %v, want 1235", q, err)
		}
	}
}

// TestAlterUserKeepsPassword: an ALTER USER without IDENTIFIED (alone, or
// with MAX_* limits at their defaults) changes nothing, on the server and
// on its replica: go-mysql-server took it as an empty IDENTIFIED BY and emptied
// the password, so an account could make itself, or an administrator make
// root, log in without one. MAX_* limits that would be ignored are
// refused (1235) with IDENTIFIED or without, and an explicit empty
// IDENTIFIED BY still empties a password.
func TestAlterUserKeepsPassword(t *testing.T) {
	p := startServer(t, t.TempDir())
	pdb := p.db("")
	r := startServer(t, t.TempDir(), "--server-id=2", "--source-host=127.0.0.1", fmt.Sprintf("--source-port=%d", p.port),
		"--source-user=root")
	mustExec(t, pdb, "CREATE USER z@'%' IDENTIFIED BY 'pw'")
	mustExec(t, pdb, "CREATE USER c@'%' IDENTIFIED WITH caching_sha2_password BY 'pw2'")
	mustExec(t, pdb, "GRANT SELECT ON *.* TO z@'%'")
	z := p.as(t, "z", "pw")
	for _, q := range []string{"ALTER USER z@'%' WITH MAX_USER_CONNECTIONS 0", "ALTER USER z WITH MAX_QUERIES_PER_HOUR 0 MAX_UPDATES_PER_HOUR 0", "ALTER USER z@'%'"} {
		if _, err := z.Exec(q); err != nil {
			t.Fatalf("%s (its own account): %v", q, err)
		}
	}
	mustExec(t, pdb, "ALTER USER c@'%' WITH MAX_CONNECTIONS_PER_HOUR 0")
	mustExec(t, pdb, "ALTER USER IF EXISTS nobody@'%' WITH MAX_USER_CONNECTIONS 0")
	for _, q := range []string{"ALTER USER z@'%' WITH MAX_USER_CONNECTIONS 5", "ALTER USER z@'%' IDENTIFIED BY 'other' WITH MAX_QUERIES_PER_HOUR 3"} {
		if _, err := pdb.Exec(q); errNumber(err) != 1235 {
			t.Fatalf("%s: %v, want 1235", q, err)
		}
	}
	waitCaughtUp(t, pdb, r.db(""), 30*time.Second)
	for _, s := range []*server{p, r} {
		if err := s.login(t, "z", "", ""); errNumber(err) != 1045 {
			t.Fatalf("z without its password after ALTER USER without IDENTIFIED: %v, want 1045", err)
		}
		if err := s.login(t, "z", "pw", ""); err != nil {
			t.Fatalf("z with its password: %v", err)
		}
		if err := s.login(t, "c", "pw2", ""); err != nil {
			t.Fatalf("c (caching_sha2_password) with its password: %v", err)
		}
	}
	mustExec(t, pdb, "ALTER USER z@'%' IDENTIFIED BY ''")
	if err := p.login(t, "z", "", ""); err != nil {
		t.Fatalf("z after IDENTIFIED BY '': %v", err)
	}
}

// TestMostSpecificAccount: a login is the most specific account that fits
// its user and host (MySQL's order), whichever was made first, and the
// session then has that account's privileges, on go-mysql-server's path
// and on the fast path. GRANT, REVOKE and SHOW GRANTS name accounts
// exactly: a missing one is MySQL's error, not another account that
// matches it, and one go-mysql-server cannot tell from another is refused.
func TestMostSpecificAccount(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.db("")
	mustExec(t, root, "CREATE DATABASE wide")
	mustExec(t, root, "CREATE DATABASE narrow")
	mustExec(t, root, "CREATE TABLE wide.t (id INT PRIMARY KEY)")
	mustExec(t, root, "CREATE TABLE narrow.t (id INT PRIMARY KEY)")
	mustExec(t, root, "INSERT INTO wide.t VALUES (1)")
	mustExec(t, root, "INSERT INTO narrow.t VALUES (1)")
	// The wildcard accounts first: go-mysql-server took the first made.
	mustExec(t, root, "CREATE USER pat@'%' IDENTIFIED BY 'wild'")
	mustExec(t, root, "GRANT SELECT ON wide.* TO pat@'%'")
	mustExec(t, root, "CREATE USER pat@'127.0.%' IDENTIFIED BY 'pattern'")
	mustExec(t, root, "GRANT SELECT ON narrow.* TO pat@'127.0.%'")
	// An account for 127.0.0.1 beside a wildcard one of the same name.
	mustExec(t, root, "CREATE USER ip@'127.0.0.1' IDENTIFIED BY 'exact'")
	mustExec(t, root, "GRANT SELECT ON narrow.* TO ip@'127.0.0.1'")
	mustExec(t, root, "CREATE USER ip@'%' IDENTIFIED BY 'wild'")
	mustExec(t, root, "GRANT SELECT ON wide.* TO ip@'%'")
	mustExec(t, root, "CREATE ROLE rl")
	// After a restart the accounts are loaded in key order ('%' before
	// '127.0.0.1'), the order in which go-mysql-server's lookup of ip from
	// 127.0.0.1 takes ip@'%'.
	s.stop()
	s.start()
	root = s.db("")

	for _, u := range []string{"pat", "ip"} {
		if err := s.login(t, u, "wild", ""); errNumber(err) != 1045 {
			t.Fatalf("%s with the wildcard account's password from 127.0.0.1: %v, want 1045", u, err)
		}
	}
	if err := s.login(t, "rl", "", ""); errNumber(err) != 3118 {
		t.Fatalf("a login as a role (a locked account, as in MySQL): %v, want 3118", err)
	}
	for _, c := range []struct{ user, password, account string }{{"pat", "pattern", "pat@127.0.%"}, {"ip", "exact", "ip@127.0.0.1"}} {
		db := s.as(t, c.user, c.password)
		var who string
		if err := db.QueryRow("SELECT CURRENT_USER()").Scan(&who); err != nil || who != c.account {
			t.Fatalf("CURRENT_USER() = %q, %v; want %s", who, err, c.account)
		}
		var n int
		for _, q := range []string{"SELECT id FROM narrow.t WHERE id = 1", "SELECT COUNT(*) FROM narrow.t"} {
			if err := db.QueryRow(q).Scan(&n); err != nil {
				t.Fatalf("%s as %s (granted): %v", q, c.account, err)
			}
		}
		for _, q := range []string{"SELECT id FROM wide.t WHERE id = 1", "SELECT COUNT(*) FROM wide.t"} {
			if err := db.QueryRow(q).Scan(&n); errNumber(err) != 1142 && errNumber(err) != 1044 {
				t.Fatalf("%s as %s (the other account's grant): %v, want 1142", q, c.account, err)
			}
		}
	}

	for q, want := range map[string]uint16{
		"GRANT SELECT ON wide.* TO pat@'10.9.9.9'":      1410,
		"REVOKE SELECT ON wide.* FROM pat@'10.9.9.9'":   1141,
		"SHOW GRANTS FOR pat@'10.9.9.9'":                1141,
		"GRANT rl TO pat@'10.9.9.9'":                    1410,
		"GRANT SELECT ON wide.* TO ip@'127.0.0.1'":      1235,
		"SHOW GRANTS FOR ip@'127.0.0.1'":                1235,
		"REVOKE SELECT ON narrow.* FROM ip@'127.0.0.1'": 1235,
	} {
		if _, err := root.Exec(q); errNumber(err) != want {
			t.Fatalf("%s: %v, want %d", q, err, want)
		}
	}
	// The wildcard account still has only its own grant.
	var g string
	if err := root.QueryRow("SHOW GRANTS FOR pat@'%'").Scan(&g); err != nil {
		t.Fatal(err)
	}
	rows, err := root.Query("SHOW GRANTS FOR pat@'%'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		rows.Scan(&g)
		if strings.Contains(g, "narrow") {
			t.Fatalf("pat@'%%' was given another account's grant: %s", g)
		}
	}
}

// TestPasswordValidationComponent: INSTALL COMPONENT
// 'file://component_validate_password' turns MySQL's password policy on
// (1819 for a weak cleartext password in CREATE USER, ALTER USER and SET
// PASSWORD, including one's own), survives a restart with its variables
// back at their defaults, and is local to the server: a replica with the
// policy applies its source's accounts as they come. UNINSTALL turns it
// off and its variables go away.
func TestPasswordValidationComponent(t *testing.T) {
	p := startServer(t, t.TempDir())
	pdb := p.db("")
	r := startServer(t, t.TempDir(), "--server-id=2", "--source-host=127.0.0.1", fmt.Sprintf("--source-port=%d", p.port),
		"--source-user=root")
	rdb := r.db("")
	const install = "INSTALL COMPONENT 'file://component_validate_password'"
	mustExec(t, rdb, install)
	mustExec(t, pdb, "CREATE USER weak@'%' IDENTIFIED BY 'x'") // the source has no policy
	waitCaughtUp(t, pdb, rdb, 30*time.Second)
	if err := r.login(t, "weak", "x", ""); err != nil {
		t.Fatalf("an account from the source on a replica with the policy: %v", err)
	}

	var v string
	if err := pdb.QueryRow("SELECT @@validate_password.policy").Scan(&v); errNumber(err) != 1193 {
		t.Fatalf("validate_password.policy before INSTALL: %q %v, want 1193", v, err)
	}
	mustExec(t, pdb, install)
	if _, err := pdb.Exec(install); errNumber(err) != 3529 {
		t.Fatalf("a second INSTALL: %v, want 3529", err)
	}
	if err := pdb.QueryRow("SELECT @@validate_password.policy").Scan(&v); err != nil || v != "MEDIUM" {
		t.Fatalf("validate_password.policy: %q %v, want MEDIUM", v, err)
	}
	weak := []string{"CREATE USER w2@'%' IDENTIFIED BY 'x'", "CREATE USER w3@'%'", "ALTER USER weak@'%' IDENTIFIED BY 'abcdefgh'"}
	for _, q := range weak {
		if _, err := pdb.Exec(q); errNumber(err) != 1819 {
			t.Fatalf("%s: %v, want 1819", q, err)
		}
	}
	mustExec(t, pdb, "CREATE USER walter@'%' IDENTIFIED BY 'Str0ng!pass'")
	walter := conn(t, p.as(t, "walter", "Str0ng!pass"))
	ctx := context.Background()
	if _, err := walter.ExecContext(ctx, "SET PASSWORD = 'weakpass'"); errNumber(err) != 1819 {
		t.Fatalf("SET PASSWORD of one's own to a weak password: %v, want 1819", err)
	}
	mustExec(t, pdb, "SET GLOBAL validate_password.policy = LOW")
	mustExec(t, pdb, "SET GLOBAL validate_password.length = 4")
	for _, pw := range []string{"walter", "retlaw"} {
		if _, err := walter.ExecContext(ctx, "SET PASSWORD = '"+pw+"'"); errNumber(err) != 1819 {
			t.Fatalf("SET PASSWORD = %q by walter: %v, want 1819 (check_user_name)", pw, err)
		}
	}
	if _, err := walter.ExecContext(ctx, "SET PASSWORD = 'walter22'"); err != nil {
		t.Fatalf("a password LOW accepts: %v", err)
	}
	if err := p.login(t, "walter", "walter22", ""); err != nil {
		t.Fatal(err)
	}

	p.stop()
	p.start()
	pdb = p.db("")
	if err := pdb.QueryRow("SELECT @@validate_password.policy").Scan(&v); err != nil || v != "MEDIUM" {
		t.Fatalf("validate_password.policy after a restart: %q %v, want MEDIUM", v, err)
	}
	for _, q := range weak {
		if _, err := pdb.Exec(q); errNumber(err) != 1819 {
			t.Fatalf("after a restart: %s: %v, want 1819", q, err)
		}
	}
	mustExec(t, pdb, "UNINSTALL COMPONENT 'file://component_validate_password'")
	if _, err := pdb.Exec("UNINSTALL COMPONENT 'file://component_validate_password'"); errNumber(err) != 3537 {
		t.Fatalf("a second UNINSTALL: %v, want 3537", err)
	}
	if _, err := pdb.Exec("SET GLOBAL validate_password.length = 4"); errNumber(err) != 1193 {
		t.Fatalf("SET GLOBAL validate_password.length after UNINSTALL: %v, want 1193", err)
	}
	mustExec(t, pdb, weak[0])
}

// TestShowCreateUser: SHOW CREATE USER gives the statement that makes the
// account again (a caching_sha2_password hash as a hexadecimal literal,
// TLS and lock settings), which logs in with the old password once run
// after the account is dropped; another account needs SELECT on mysql.
func TestShowCreateUser(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.db("")
	mustExec(t, root, "CREATE USER sha@'%' IDENTIFIED WITH caching_sha2_password BY 'pw1'")
	mustExec(t, root, "CREATE USER nat@'%' IDENTIFIED WITH mysql_native_password BY 'pw2' REQUIRE SSL")
	mustExec(t, root, "ALTER USER nat@'%' FAILED_LOGIN_ATTEMPTS 3 PASSWORD_LOCK_TIME UNBOUNDED")
	// show is the result's column name and its statement, a line each.
	show := func(db *sql.DB, account string) (string, error) {
		rows, err := db.Query("SHOW CREATE USER " + account)
		if err != nil {
			return "", err
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		var stmt string
		if !rows.Next() {
			return "", fmt.Errorf("no row: %v", rows.Err())
		}
		if err := rows.Scan(&stmt); err != nil {
			return "", err
		}
		return cols[0] + "\n" + stmt, nil
	}
	sha, err := show(root, "sha")
	if err != nil || !strings.HasPrefix(sha, "CREATE USER for sha@%\nCREATE USER `sha`@`%` IDENTIFIED WITH 'caching_sha2_password' AS 0x") ||
		!strings.HasSuffix(sha, " REQUIRE NONE PASSWORD EXPIRE DEFAULT ACCOUNT UNLOCK PASSWORD HISTORY DEFAULT PASSWORD REUSE INTERVAL DEFAULT PASSWORD REQUIRE CURRENT DEFAULT") {
		t.Fatalf("SHOW CREATE USER sha: %q %v", sha, err)
	}
	nat, err := show(root, "'nat'@'%'")
	if err != nil || !strings.Contains(nat, "IDENTIFIED WITH 'mysql_native_password' AS '*") ||
		!strings.Contains(nat, " REQUIRE SSL ") || !strings.HasSuffix(nat, " FAILED_LOGIN_ATTEMPTS 3 PASSWORD_LOCK_TIME UNBOUNDED") {
		t.Fatalf("SHOW CREATE USER nat: %q %v", nat, err)
	}
	mustExec(t, root, "DROP USER sha@'%'")
	mustExec(t, root, strings.SplitN(sha, "\n", 2)[1])
	if _, err := s.as(t, "sha", "pw1").Exec("SELECT 1"); err != nil {
		t.Fatalf("the account made again from SHOW CREATE USER does not log in: %v", err)
	}
	if _, err := show(root, "nobody"); errNumber(err) != 1396 {
		t.Errorf("SHOW CREATE USER of a missing account: %v, want 1396", err)
	}
	// Its own account needs nothing; another needs SELECT on mysql.
	own := s.as(t, "sha", "pw1")
	if got, err := show(own, "CURRENT_USER()"); err != nil || !strings.Contains(got, "`sha`@`%`") {
		t.Errorf("SHOW CREATE USER CURRENT_USER(): %q %v", got, err)
	}
	if _, err := show(own, "nat"); errNumber(err) != 1044 {
		t.Errorf("SHOW CREATE USER of another account without SELECT on mysql: %v, want 1044", err)
	}
}
