package integration

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestProcessListAndKill: an account without PROCESS sees only its own
// connections in SHOW PROCESSLIST and information_schema.PROCESSLIST (and
// so not other accounts' statement texts); any account may KILL its own
// statements and connections, not another's (1095) unless it holds SUPER;
// an unknown id is 1094.
func TestProcessListAndKill(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.db("")
	for _, q := range []string{
		"CREATE USER alice@'%' IDENTIFIED BY 'pw'",
		"CREATE USER bob@'%' IDENTIFIED BY 'pw'",
		"CREATE USER watcher@'%' IDENTIFIED BY 'pw'",
		"GRANT PROCESS ON *.* TO watcher@'%'",
	} {
		mustExec(t, root, q)
	}
	alice, bob, watcher := s.as(t, "alice", "pw"), s.as(t, "bob", "pw"), s.as(t, "watcher", "pw")

	// alice runs a long statement on a connection of its own.
	ctx := context.Background()
	sleeper, err := s.as(t, "alice", "pw").Conn(ctx) // a pool of its own: as() pools hold one connection
	if err != nil {
		t.Fatal(err)
	}
	var sleeperID int64
	if err := sleeper.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&sleeperID); err != nil {
		t.Fatal(err)
	}
	slept := make(chan error, 1)
	go func() {
		_, err := sleeper.ExecContext(ctx, "SELECT SLEEP(60) /* secret text */")
		slept <- err
	}()
	users := func(db *sql.DB, q string) map[string]bool {
		t.Helper()
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		seen := map[string]bool{}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			seen[vals[1].String] = true
		}
		return seen
	}
	deadline := time.Now().Add(10 * time.Second)
	for !users(watcher, "SHOW PROCESSLIST")["alice"] {
		if time.Now().After(deadline) {
			t.Fatal("watcher (PROCESS) never saw alice's connection")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, q := range []string{"SHOW PROCESSLIST", "SHOW FULL PROCESSLIST", "SELECT * FROM information_schema.PROCESSLIST"} {
		if seen := users(bob, q); len(seen) != 1 || !seen["bob"] {
			t.Errorf("bob (no PROCESS) sees %v in %s, want only bob", seen, q)
		}
	}

	if _, err := bob.Exec(fmt.Sprint("KILL QUERY ", sleeperID)); errNumber(err) != 1095 {
		t.Fatalf("bob killing alice's statement: %v, want 1095", err)
	}
	if _, err := bob.Exec("KILL 999999"); errNumber(err) != 1094 {
		t.Fatalf("KILL of an unknown id: %v, want 1094", err)
	}
	if _, err := alice.Exec(fmt.Sprint("KILL QUERY ", sleeperID)); err != nil {
		t.Fatalf("alice killing its own statement: %v", err)
	}
	select {
	case err := <-slept:
		if errNumber(err) != 1317 {
			t.Fatalf("the killed statement ended with %v, want 1317", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("KILL QUERY did not end the statement")
	}
	// root (SUPER) may end alice's connection.
	if _, err := root.Exec(fmt.Sprint("KILL CONNECTION ", sleeperID)); err != nil {
		t.Fatalf("root killing alice's connection: %v", err)
	}
	if err := sleeper.PingContext(ctx); err == nil {
		t.Fatal("the killed connection still answers")
	}
	sleeper.Close()
}

// TestGrantDynamicPrivileges: the dynamic privileges Lockstep checks can
// be granted and revoked (go-mysql-server refused them), by an account
// holding them WITH GRANT OPTION, and they take effect: CONNECTION_ADMIN
// lets an operator KILL others' connections, SYSTEM_VARIABLES_ADMIN SET
// GLOBAL, BINLOG_ADMIN PURGE BINARY LOGS.
func TestGrantDynamicPrivileges(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.db("")
	for _, q := range []string{
		"CREATE USER ops@'%' IDENTIFIED BY 'pw'",
		"CREATE USER app@'%' IDENTIFIED BY 'pw'",
	} {
		mustExec(t, root, q)
	}
	ops, app := s.as(t, "ops", "pw"), s.as(t, "app", "pw")
	victim, err := s.as(t, "app", "pw").Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	var victimID int64
	if err := victim.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&victimID); err != nil {
		t.Fatal(err)
	}
	kill := fmt.Sprint("KILL ", victimID)
	denied := map[string]uint16{
		kill:                                   1095,
		"SET GLOBAL max_connections = 200":     1227,
		"PURGE BINARY LOGS TO 'binlog.000001'": 1227,
	}
	for q, want := range denied {
		if _, err := ops.Exec(q); errNumber(err) != want {
			t.Fatalf("%s before the grant: %v, want %d", q, err, want)
		}
	}
	if _, err := app.Exec("GRANT CONNECTION_ADMIN ON *.* TO ops@'%'"); errNumber(err) != 1227 {
		t.Fatalf("GRANT by an account without the privilege: %v, want 1227", err)
	}
	if _, err := root.Exec("GRANT CONNECTION_ADMIN ON *.* TO nobody@'%'"); errNumber(err) != 1410 {
		t.Fatalf("GRANT to a missing account: %v, want 1410", err)
	}
	mustExec(t, root, "GRANT CONNECTION_ADMIN, SYSTEM_VARIABLES_ADMIN, BINLOG_ADMIN ON *.* TO ops@'%'")
	rows, err := root.Query("SHOW GRANTS FOR ops@'%'")
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for rows.Next() {
		var g string
		rows.Scan(&g)
		all = append(all, g)
	}
	rows.Close()
	if text := strings.ToUpper(strings.Join(all, "\n")); !strings.Contains(text, "CONNECTION_ADMIN") || !strings.Contains(text, "BINLOG_ADMIN") {
		t.Errorf("SHOW GRANTS after the grant:\n%s", strings.Join(all, "\n"))
	}
	for q := range denied {
		if _, err := ops.Exec(q); err != nil {
			t.Fatalf("%s after the grant: %v", q, err)
		}
	}
	// Without GRANT OPTION, ops cannot pass them on.
	if _, err := ops.Exec("GRANT CONNECTION_ADMIN ON *.* TO app@'%'"); errNumber(err) != 1227 {
		t.Fatalf("GRANT without GRANT OPTION: %v, want 1227", err)
	}
	mustExec(t, root, "REVOKE SYSTEM_VARIABLES_ADMIN ON *.* FROM ops@'%'")
	if _, err := ops.Exec("SET GLOBAL max_connections = 151"); errNumber(err) != 1227 {
		t.Fatalf("SET GLOBAL after REVOKE: %v, want 1227", err)
	}
	// The grants are saved with the accounts.
	s.stop()
	s.start()
	if _, err := s.as(t, "ops", "pw").Exec("PURGE BINARY LOGS TO 'binlog.000001'"); err != nil {
		t.Fatalf("BINLOG_ADMIN after a restart: %v", err)
	}
}
