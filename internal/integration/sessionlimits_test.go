package integration

import (
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestSessionLimits: max_execution_time (the session's value, the
// optimizer hint, prepared statements) stops SELECTs with 3024;
// max_user_connections refuses an account's extra login with 1203;
// offline_mode refuses and disconnects accounts without CONNECTION_ADMIN
// (3032) and keeps administrators; the password and host-blocking
// variables Lockstep does not implement are read-only.
func TestSessionLimits(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.db("")
	mustExec(t, root, "CREATE USER app@'%' IDENTIFIED BY 'pw'")
	mustExec(t, root, "GRANT SELECT ON *.* TO app@'%'")
	ctx := context.Background()

	c := conn(t, root)
	mustConnExec(t, c, "SET SESSION max_execution_time = 200")
	start := time.Now()
	if _, err := c.ExecContext(ctx, "SELECT SLEEP(5)"); errNumber(err) != 3024 {
		t.Fatalf("a SELECT past max_execution_time: %v, want 3024", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("the SELECT was stopped after %v", d)
	}
	if _, err := c.ExecContext(ctx, "SELECT SLEEP(0.05)"); err != nil {
		t.Fatalf("a SELECT within max_execution_time: %v", err)
	}
	// The statement protocol: database/sql prepares a query with arguments.
	if _, err := c.QueryContext(ctx, "SELECT SLEEP(?)", 5); errNumber(err) != 3024 {
		t.Fatalf("a prepared SELECT past max_execution_time: %v, want 3024", err)
	}
	mustConnExec(t, c, "SET SESSION max_execution_time = 0")
	if _, err := c.ExecContext(ctx, "SELECT /*+ MAX_EXECUTION_TIME(100) */ SLEEP(5)"); errNumber(err) != 3024 {
		t.Fatalf("a SELECT past its MAX_EXECUTION_TIME hint: %v, want 3024", err)
	}
	if _, err := c.ExecContext(ctx, "SELECT SLEEP(0.3)"); err != nil {
		t.Fatalf("a SELECT with no limit: %v", err)
	}

	mustExec(t, root, "SET GLOBAL max_user_connections = 2")
	app := s.as(t, "app", "pw")
	app.SetMaxOpenConns(8)
	a1, a2 := conn(t, app), conn(t, app)
	if _, err := app.Conn(ctx); errNumber(err) != 1203 {
		t.Fatalf("a third login of app: %v, want 1203", err)
	}
	a2.Close()
	waitFor(t, "a closed connection to be uncounted", 10*time.Second, func() bool {
		c3, err := app.Conn(ctx)
		if err == nil {
			c3.Close()
		}
		return err == nil
	})
	mustExec(t, root, "SET GLOBAL max_user_connections = 0")

	mustExec(t, root, "SET GLOBAL offline_mode = ON")
	waitFor(t, "offline_mode to disconnect app", 10*time.Second, func() bool {
		return a1.PingContext(ctx) != nil
	})
	// A new handle, so that the login is new: app's pool may still hold a
	// connection that goOffline (asynchronous) has not closed yet.
	if _, err := s.as(t, "app", "pw").Conn(ctx); errNumber(err) != 3032 {
		t.Fatalf("app's login in offline mode: %v, want 3032", err)
	}
	if err := c.PingContext(ctx); err != nil {
		t.Fatalf("root's connection in offline mode: %v", err)
	}
	mustExec(t, root, "SET GLOBAL offline_mode = OFF")
	if _, err := app.Exec("SELECT 1"); err != nil {
		t.Fatalf("app after offline mode: %v", err)
	}

	for _, v := range []string{"password_history", "password_reuse_interval", "default_password_lifetime", "max_connect_errors"} {
		if _, err := root.Exec("SET GLOBAL " + v + " = 5"); errNumber(err) != 1238 || !strings.Contains(err.Error(), "read only") {
			t.Fatalf("SET GLOBAL %s: %v, want 1238", v, err)
		}
	}
}

// TestSetNamesCollate: the collation a client names in its handshake,
// SET NAMES ... COLLATE, and SET NAMES utf8mb4 (MySQL 8's
// utf8mb4_0900_ai_ci) set the connection's collation, which literals then
// compare by; a collation of another character set is refused with 1253.
func TestSetNamesCollate(t *testing.T) {
	s := startServer(t, t.TempDir())
	ctx := context.Background()
	check := func(c *sql.Conn, when, wantColl string, wantEq int) {
		t.Helper()
		var eq int
		var coll string
		if err := c.QueryRowContext(ctx, "SELECT 'a' = 'A', @@collation_connection").Scan(&eq, &coll); err != nil || eq != wantEq || coll != wantColl {
			t.Fatalf("%s: 'a' = 'A' is %d, collation %q, %v; want %d, %q", when, eq, coll, err, wantEq, wantColl)
		}
	}
	// go-sql-driver names utf8mb4_general_ci unless told otherwise.
	c := conn(t, s.db(""))
	check(c, "after the handshake", "utf8mb4_general_ci", 1)
	mustConnExec(t, c, "SET NAMES utf8mb4 COLLATE utf8mb4_bin")
	check(c, "after SET NAMES utf8mb4 COLLATE utf8mb4_bin", "utf8mb4_bin", 0)
	mustConnExec(t, c, "SET NAMES utf8mb4")
	check(c, "after SET NAMES utf8mb4", "utf8mb4_0900_ai_ci", 1)
	if _, err := c.ExecContext(ctx, "SET NAMES utf8mb4 COLLATE latin1_bin"); errNumber(err) != 1253 {
		t.Fatalf("a collation of another character set: %v, want 1253", err)
	}
	for _, coll := range []string{"utf8mb4_bin", "utf8mb4_0900_ai_ci"} {
		db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/?collation=%s", s.port, coll))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		want := 1
		if coll == "utf8mb4_bin" {
			want = 0
		}
		check(conn(t, db), "a handshake naming "+coll, coll, want)
	}
	// The mariadb client asks for utf8mb3 when told to: its utf8mb4 twin.
	out, err := exec.Command(needTool(t, "mariadb"), "-h127.0.0.1", fmt.Sprintf("-P%d", s.port), "-uroot", "--skip-ssl", "--default-character-set=utf8mb3", "-N", "-e", "SELECT @@collation_connection, 'a' = 'A'").CombinedOutput()
	if err != nil {
		t.Fatalf("mariadb: %v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "utf8mb4_general_ci\t1" {
		t.Fatalf("a handshake naming utf8mb3_general_ci: %q", got)
	}
}

// TestResultsCharacterSet: a client that names a single-byte collation
// in its handshake (or SET NAMES) gets its session's character sets and
// collation set to it, and its results in it, as from MariaDB 10.11: text
// and prepared, on the fast path and through go-mysql-server, from utf8mb4
// and latin1 columns, '?' standing for what the set cannot hold (where the
// statement failed). (No name or literal outside ASCII is compared:
// MariaDB reads the statement in the client's set, Lockstep as UTF-8.)
func TestResultsCharacterSet(t *testing.T) {
	m := startMariaDB(t, 1)
	s := startServer(t, t.TempDir())
	setup := []string{
		"CREATE DATABASE cs",
		"CREATE TABLE cs.t (id INT PRIMARY KEY, u VARCHAR(20) CHARACTER SET utf8mb4, l VARCHAR(20) CHARACTER SET latin1, b VARBINARY(20))",
		"INSERT INTO cs.t VALUES (1, 'abc', 'abc', 'abc'), (2, 'café €', 'café', X'e9ff'), (3, '日本', NULL, NULL)",
	}
	for _, q := range setup {
		mustExec(t, m.db(), q)
		mustExec(t, s.db(""), q)
	}
	queries := []string{
		"SELECT @@character_set_client, @@character_set_connection, @@character_set_results, @@collation_connection",
		"SELECT id, u, l, b FROM cs.t ORDER BY id",
		"SELECT u, l FROM cs.t WHERE id = 2",
		"SELECT CONCAT(u, '!') AS x, UPPER(l) FROM cs.t WHERE id IN (2, 3) ORDER BY id",
	}
	for _, coll := range []string{"latin1_swedish_ci", "latin1_general_ci", "cp1257_bin"} {
		for _, q := range queries {
			for _, prepared := range []bool{false, true} {
				got := func(dsn string) string {
					db, err := sql.Open("mysql", dsn+"?collation="+coll)
					if err != nil {
						t.Fatal(err)
					}
					defer db.Close()
					if prepared {
						return preparedResults(db, q)
					}
					return callResults(db, q)
				}
				want := got("root@unix(" + m.sock() + ")/")
				have := got(fmt.Sprintf("root@tcp(127.0.0.1:%d)/", s.port))
				if want != have {
					t.Errorf("%s, %s (prepared %v):\nMariaDB  %q\nLockstep %q", coll, q, prepared, want, have)
				}
			}
		}
	}
}

// TestRegexpLimits: a regular expression that backtracks exponentially is
// stopped by regexp_time_limit (3699), and with the limit off by KILL
// QUERY (1317) and max_execution_time (3024); only an administrator sets
// the limits.
func TestRegexpLimits(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.db("")
	mustExec(t, root, "CREATE USER app@'%' IDENTIFIED BY 'pw'")
	mustExec(t, root, "GRANT SELECT ON *.* TO app@'%'")
	ctx := context.Background()
	const slow = "SELECT CONCAT(REPEAT('a', 60), 'c') REGEXP '(a+)+b'"

	c := conn(t, root)
	start := time.Now()
	if _, err := c.ExecContext(ctx, slow); errNumber(err) != 3699 {
		t.Fatalf("a backtracking match under the default limit: %v, want 3699", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("the match was stopped after %v", d)
	}

	app := s.as(t, "app", "pw")
	if _, err := app.ExecContext(ctx, "SET GLOBAL regexp_time_limit = 0"); errNumber(err) != 1227 {
		t.Fatalf("SET GLOBAL regexp_time_limit without SYSTEM_VARIABLES_ADMIN: %v, want 1227", err)
	}

	mustExec(t, root, "SET GLOBAL regexp_time_limit = 0")
	defer mustExec(t, root, "SET GLOBAL regexp_time_limit = DEFAULT")
	var id int
	if err := c.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.ExecContext(ctx, slow)
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	mustExec(t, root, fmt.Sprintf("KILL QUERY %d", id))
	select {
	case err := <-done:
		if errNumber(err) != 1317 {
			t.Fatalf("a killed match: %v, want 1317", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("KILL QUERY did not stop the match within 30 s")
	}

	mustConnExec(t, c, "SET SESSION max_execution_time = 200")
	start = time.Now()
	if _, err := c.ExecContext(ctx, slow); errNumber(err) != 3024 {
		t.Fatalf("a match past max_execution_time: %v, want 3024", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the match was stopped after %v", d)
	}
	// Case sensitivity follows the connection's collation.
	for coll, want := range map[string]int{"utf8mb4_0900_ai_ci": 1, "utf8mb4_bin": 0} {
		mustConnExec(t, c, "SET NAMES utf8mb4 COLLATE "+coll)
		var m int
		if err := c.QueryRowContext(ctx, "SELECT 'abc' REGEXP 'B'").Scan(&m); err != nil || m != want {
			t.Fatalf("under %s, 'abc' REGEXP 'B' = %d, %v; want %d", coll, m, err, want)
		}
	}
}

// TestRecursiveCTELimit: a recursive CTE that does not end stops after
// the fixed 10,001 iterations with MySQL's 3636, and
// cte_max_recursion_depth says so.
func TestRecursiveCTELimit(t *testing.T) {
	s := startServer(t, t.TempDir())
	root := s.db("")
	var n int
	if err := root.QueryRow("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5000) SELECT COUNT(*) FROM r").Scan(&n); err != nil || n != 5000 {
		t.Fatalf("a recursion of 5,000: %d, %v", n, err)
	}
	if err := root.QueryRow("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT COUNT(*) FROM r").Scan(&n); errNumber(err) != 3636 {
		t.Fatalf("an endless recursion: %v, want 3636", err)
	}
	if err := root.QueryRow("SELECT @@cte_max_recursion_depth").Scan(&n); err != nil || n != 10000 {
		t.Fatalf("@@cte_max_recursion_depth = %d, %v", n, err)
	}
}
