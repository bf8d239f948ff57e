// Package integration starts the real lockstep binary on loopback ports and
// talks to it with real clients: Go's MySQL driver, the mariadb CLI and
// sysbench. The CLI tools are required when LOCKSTEP_REQUIRE_TOOLS=1 (as in
// CI); otherwise tests that need a missing tool are skipped.
package integration

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/lockstepdb/lockstep/internal/launch"
	"github.com/lockstepdb/lockstep/internal/loopback"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lockstep-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "lockstep")
	out, err := exec.Command("go", "build", "-o", binary, "github.com/lockstepdb/lockstep/cmd/lockstep").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building lockstep: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// needTool skips (or, with LOCKSTEP_REQUIRE_TOOLS=1, fails) without a tool.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("LOCKSTEP_REQUIRE_TOOLS") == "1" {
			t.Fatalf("%s is required (LOCKSTEP_REQUIRE_TOOLS=1) but not installed", name)
		}
		t.Skipf("%s not installed", name)
	}
	return p
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// fixedPort returns a free port below the system's ephemeral range, for
// a port a test names in a server's arguments (a cluster address, a
// second port) and cannot pick again if it is taken before the server
// binds it (see package loopback for why not freePort's).
func fixedPort(t *testing.T) int {
	t.Helper()
	p, err := loopback.Port()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fixedPorts is n distinct fixedPorts (fixedPort, called n times, may
// give one port twice).
func fixedPorts(t *testing.T, n int) []int {
	t.Helper()
	ps, err := loopback.Ports(n)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// server is a running lockstep process.
type server struct {
	t        *testing.T
	dir      string
	port     int
	httpPort int
	args     []string
	data     string // the data directory ("": dir/data)
	proc     *launch.Process
	cmd      *exec.Cmd       // proc's, nil once stopped
	exited   <-chan struct{} // proc's: closed when cmd has been waited for
	logPath  string
}

func startServer(t *testing.T, dir string, args ...string) *server {
	t.Helper()
	s := &server{t: t, dir: dir, args: args}
	s.start()
	t.Cleanup(s.stop)
	t.Cleanup(func() { showLogsOnFailure(t, dir, "server-") })
	return s
}

// showLogsOnFailure prints the end of each log file named prefix* in dir
// when t failed, so that a failure on a machine we cannot reach (CI)
// comes with what the processes said; the test's temporary directory,
// and the logs with it, are removed afterwards.
func showLogsOnFailure(t *testing.T, dir, prefix string) {
	if !t.Failed() {
		return
	}
	logs, _ := filepath.Glob(filepath.Join(dir, prefix+"*.log"))
	for _, p := range logs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		t.Logf("the end of %s:\n%s", filepath.Base(p), strings.Join(lines, "\n"))
	}
}

func (s *server) start() {
	s.t.Helper()
	// A port found free may be taken by another process before the server
	// binds it: on a first start, pick new ports and try again.
	for attempt := 0; s.port == 0 && attempt < 3; attempt++ {
		s.port, s.httpPort = freePort(s.t), freePort(s.t)
		if s.tryStart() {
			return
		}
		log, _ := os.ReadFile(s.logPath)
		if !strings.Contains(string(log), "address already in use") {
			s.t.Fatalf("server did not start:\n%s", log)
		}
		s.port = 0
	}
	if s.port == 0 || !s.tryStart() { // a restart keeps the ports, so replicas find it again
		log, _ := os.ReadFile(s.logPath)
		s.t.Fatalf("server did not start:\n%s", log)
	}
}

// tryStart starts the server on its ports and reports whether it answers.
func (s *server) tryStart() bool {
	s.t.Helper()
	s.logPath = filepath.Join(s.dir, fmt.Sprintf("server-%d.log", time.Now().UnixNano()))
	if !s.launch(20*time.Second, false) {
		s.proc.Kill()
		s.proc, s.cmd = nil, nil
		return false
	}
	return true
}

// launch starts the server on its ports with its log at s.logPath and
// waits up to limit until it listens (and, if logged, says it is ready);
// it reports whether it did, the process still running if not.
func (s *server) launch(limit time.Duration, logged bool) bool {
	s.t.Helper()
	data := s.data
	if data == "" {
		data = filepath.Join(s.dir, "data")
	}
	args := launch.Lockstep{DataDir: data, Port: s.port, HTTPPort: s.httpPort, Extra: s.args}.Args()
	p, err := launch.Start(exec.Command(binary, args...), s.logPath)
	if err != nil {
		s.t.Fatal(err)
	}
	s.proc, s.cmd, s.exited = p, p.Cmd, p.Exited()
	if logged {
		// Started once it says so and answers: a port found free may
		// have been taken by another test's server, which would answer
		// for one that is still starting or about to refuse.
		err = p.WaitLogged("lockstep is ready for connections", s.port, limit)
	} else {
		err = p.WaitListening(s.port, limit)
	}
	return err == nil
}

// stop shuts the server down gracefully (SIGTERM, SIGKILL after 30 s).
func (s *server) stop() {
	if s.proc == nil {
		return
	}
	s.proc.Stop(30 * time.Second)
	s.proc, s.cmd = nil, nil
}

// kill stops the server with SIGKILL, as a crash would.
func (s *server) kill() {
	s.proc.Kill()
	s.proc, s.cmd = nil, nil
}

func (s *server) db(dbname string) *sql.DB {
	s.t.Helper()
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s", s.port, dbname))
	if err != nil {
		s.t.Fatal(err)
	}
	db.SetMaxOpenConns(32)
	s.t.Cleanup(func() { db.Close() })
	return db
}

// conn is one connection to s, closed when the test ends: for statements
// that depend on their session (its sql_mode, its prepared statements).
func (s *server) conn(ctx context.Context) *sql.Conn {
	s.t.Helper()
	c, err := s.db("").Conn(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { c.Close() })
	return c
}

// oneSession opens dsn as a pool of one connection, closed when the test
// ends: for statements that share their session (user variables,
// sql_mode).
func oneSession(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func TestOptionsAreValidated(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--sync-binlog", "lots"}, "--sync-binlog"},
		{[]string{"serve", "--no-such-option=1"}, "no-such-option"},
		{[]string{"serve", "--binlog_transaction_dependency_tracking", "BOGUS"}, "binlog-transaction-dependency-tracking"},
		{[]string{"serve", "--innodb-flush-log-at-trx-commit=3"}, "innodb-flush-log-at-trx-commit"},
	} {
		out, err := tool(t, time.Minute, binary, append(tc.args, "--datadir", dir)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Fatalf("%v: err=%v, output does not name %s:\n%s", tc.args, err, tc.want, out)
		}
	}
	cnf := filepath.Join(dir, "bad.cnf")
	os.WriteFile(cnf, []byte("[mysqld]\nport=3307\nsync_binlog=0\nbogus_setting=1\n"), 0o644)
	out, err := tool(t, time.Minute, binary, "serve", "--defaults-file", cnf, "--datadir", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "bogus_setting") {
		t.Fatalf("unknown option in defaults file: err=%v\n%s", err, out)
	}
}

func TestDefaultsFileAndVariables(t *testing.T) {
	dir := t.TempDir()
	cnf := filepath.Join(dir, "my.cnf")
	os.WriteFile(cnf, []byte("[mysqld]\nsync_binlog=0\ninnodb_flush_log_at_trx_commit = 2\nbinlog-group-commit-sync-delay=100\nlog-bin\nserver_id=42\n"), 0o644)
	s := startServer(t, dir, "--defaults-file", cnf, "--binlog-parallel-flush=ON")
	db := s.db("")
	row := db.QueryRow("SELECT @@sync_binlog, @@innodb_flush_log_at_trx_commit, @@binlog_group_commit_sync_delay, @@server_id, @@binlog_parallel_flush, @@binlog_format, @@binlog_row_image")
	var sb, fl, delay, sid, pf int
	var format, image string
	if err := row.Scan(&sb, &fl, &delay, &sid, &pf, &format, &image); err != nil {
		t.Fatal(err)
	}
	if sb != 0 || fl != 2 || delay != 100 || sid != 42 || pf != 1 || format != "ROW" || image != "FULL" {
		t.Fatalf("variables: sync_binlog=%d flush=%d delay=%d server_id=%d parallel=%d format=%s image=%s", sb, fl, delay, sid, pf, format, image)
	}
	mustExec(t, db, "SET GLOBAL sync_binlog = 1")
	if err := db.QueryRow("SELECT @@global.sync_binlog").Scan(&sb); err != nil || sb != 1 {
		t.Fatalf("SET GLOBAL sync_binlog: %d %v", sb, err)
	}
	var comment string
	if err := db.QueryRow("SELECT @@version_comment").Scan(&comment); err != nil || comment != "Lockstep" {
		t.Fatalf("@@version_comment = %q (%v), want Lockstep", comment, err)
	}
}

func TestGoDriverCRUDAndRestart(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	db := s.db("")
	mustExec(t, db, "CREATE DATABASE app")
	app := s.db("app")
	mustExec(t, app, "CREATE TABLE users (id BIGINT AUTO_INCREMENT PRIMARY KEY, email VARCHAR(100) NOT NULL, name VARCHAR(50), balance DECIMAL(12,2) NOT NULL DEFAULT 0, created DATETIME(6), UNIQUE KEY email (email))")
	// Server-side prepared statements (the driver's default).
	for i := range 50 {
		if _, err := app.Exec("INSERT INTO users (email, name, balance, created) VALUES (?, ?, ?, ?)",
			fmt.Sprintf("u%d@x.io", i), fmt.Sprintf("User %d", i), float64(i)+0.5, time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := app.Exec("INSERT INTO users (email) VALUES (?)", "u3@x.io")
	if err == nil || !strings.Contains(err.Error(), "1062") {
		t.Fatalf("duplicate email: %v", err)
	}
	res, err := app.Exec("UPDATE users SET balance = balance + 1 WHERE id <= ?", 10)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 10 {
		t.Fatalf("rows affected %d", n)
	}
	tx, _ := app.Begin()
	tx.Exec("DELETE FROM users WHERE id > 40")
	tx.Rollback()
	var n int
	var sum float64
	var one string
	app.QueryRow("SELECT COUNT(*), SUM(balance) FROM users").Scan(&n, &sum)
	app.QueryRow("SELECT balance FROM users WHERE id = 3").Scan(&one)
	// 0.5 + 1.5 + ... + 49.5, plus 1 for each of ten rows.
	if n != 50 || sum != 1260 || one != "3.50" {
		t.Fatalf("count %d sum %v balance %s", n, sum, one)
	}
	mustExec(t, db, "CREATE USER app@'127.0.0.1' IDENTIFIED BY 's3cret'")
	mustExec(t, db, "GRANT SELECT ON app.* TO app@'127.0.0.1'")
	s.stop()
	s.start()
	// Accounts survive the restart; a wrong password does not get in.
	user, err := sql.Open("mysql", fmt.Sprintf("app:s3cret@tcp(127.0.0.1:%d)/app", s.port))
	if err != nil {
		t.Fatal(err)
	}
	defer user.Close()
	if err := user.QueryRow("SELECT COUNT(*) FROM users").Scan(&n); err != nil || n != 50 {
		t.Fatalf("saved account after restart: %d %v", n, err)
	}
	bad, _ := sql.Open("mysql", fmt.Sprintf("app:wrong@tcp(127.0.0.1:%d)/app", s.port))
	defer bad.Close()
	if err := bad.Ping(); err == nil || !strings.Contains(err.Error(), "1045") {
		t.Fatalf("wrong password: %v", err)
	}
	app = s.db("app")
	var created string
	if err := app.QueryRow("SELECT COUNT(*), SUM(balance), MAX(created) FROM users").Scan(&n, &sum, &created); err != nil {
		t.Fatal(err)
	}
	if n != 50 || sum != 1260 || created != "2026-01-02 03:04:05.123456" {
		t.Fatalf("after restart: count %d sum %v created %s", n, sum, created)
	}
}

func TestMariadbCLI(t *testing.T) {
	cli := needTool(t, "mariadb")
	s := startServer(t, t.TempDir())
	run := func(q string) (string, error) {
		out, err := tool(t, time.Minute, cli, "-h127.0.0.1", fmt.Sprintf("-P%d", s.port), "-uroot", "--skip-ssl", "-N", "-B", "-e", q).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	out, err := run("CREATE DATABASE c; USE c; CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10)); INSERT INTO t VALUES (1,'a'),(2,'b'); SELECT GROUP_CONCAT(v ORDER BY id) FROM t; SHOW TABLES")
	if err != nil || out != "a,b\nt" {
		t.Fatalf("mariadb CLI: %v\n%s", err, out)
	}
	out, _ = run("SELEC 1")
	if !strings.Contains(out, "ERROR 1064 (42000)") {
		t.Fatalf("syntax error: %s", out)
	}
	out, err = run("SHOW MASTER STATUS")
	if err != nil || !strings.Contains(out, "binlog.000001") {
		t.Fatalf("SHOW MASTER STATUS: %v %s", err, out)
	}
	// SQL prepared statements: PREPARE's OK packet once carried an info
	// string the client found malformed (2027).
	out, err = run("USE c; PREPARE s FROM 'SELECT v FROM t WHERE id = ?'; SET @i = 2; EXECUTE s USING @i; DEALLOCATE PREPARE s")
	if err != nil || out != "b" {
		t.Fatalf("PREPARE and EXECUTE: %v\n%s", err, out)
	}
	// Doubles and floats are written as MySQL writes them.
	out, err = run("CREATE TABLE c.f (f FLOAT, d DOUBLE); INSERT INTO c.f VALUES (1234567, 8385959); SELECT f, d, 1e15, 1e-16, 0.00001e0 FROM c.f")
	if err != nil || out != "1234570\t8385959\t1e15\t1e-16\t0.00001" {
		t.Fatalf("doubles: %v\n%s", err, out)
	}
	// mariadb-admin status (COM_STATISTICS, which vitess does not know)
	// and processlist.
	admin := needTool(t, "mariadb-admin")
	st, err := tool(t, time.Minute, admin, "-h127.0.0.1", fmt.Sprintf("-P%d", s.port), "-uroot", "status").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(st), "Uptime: ") || !strings.Contains(string(st), "Questions: ") {
		t.Fatalf("mariadb-admin status: %v\n%s", err, st)
	}
	if pl, err := tool(t, time.Minute, admin, "-h127.0.0.1", fmt.Sprintf("-P%d", s.port), "-uroot", "processlist").CombinedOutput(); err != nil || !strings.Contains(string(pl), "show processlist") {
		t.Fatalf("mariadb-admin processlist: %v\n%s", err, pl)
	}
	if fl, err := tool(t, time.Minute, admin, "-h127.0.0.1", fmt.Sprintf("-P%d", s.port), "-uroot", "flush-status").CombinedOutput(); err != nil {
		t.Fatalf("mariadb-admin flush-status: %v\n%s", err, fl)
	}
	// COM_REFRESH (refresh, flush-hosts, flush-threads...), which
	// vitess does not know, and the FLUSH statements it stands for.
	if fl, err := tool(t, time.Minute, admin, "-h127.0.0.1", fmt.Sprintf("-P%d", s.port), "-uroot",
		"refresh", "flush-hosts", "flush-threads", "flush-privileges", "flush-tables", "flush-logs").CombinedOutput(); err != nil {
		t.Fatalf("mariadb-admin refresh and flushes: %v\n%s", err, fl)
	}
	out, err = run("SELECT 1; SELECT 2; FLUSH STATUS; SHOW SESSION STATUS LIKE 'Com_select'")
	if err != nil || out != "1\n2\nCom_select\t0" {
		t.Fatalf("FLUSH STATUS resets the session's counters: %v\n%s", err, out)
	}
	// CHECK TABLE (and mariadb-check, which sends it for every table):
	// indexes verified against rows; a missing table answered in MySQL's
	// rows.
	out, err = run("CREATE TABLE c.k (id INT PRIMARY KEY, v INT, KEY (v)); INSERT INTO c.k VALUES (1, 1), (2, 2); CHECK TABLE c.k, c.nosuch QUICK")
	if err != nil || out != "c.k\tcheck\tstatus\tOK\nc.nosuch\tcheck\tError\tTable 'c.nosuch' doesn't exist\nc.nosuch\tcheck\tstatus\tOperation failed" {
		t.Fatalf("CHECK TABLE: %v\n%s", err, out)
	}
	out, err = run("CHECKSUM TABLE c.k; OPTIMIZE TABLE c.k; ANALYZE TABLE c.k")
	if err != nil || !strings.HasPrefix(out, "c.k\t") || !strings.Contains(out, "c.k\toptimize\tstatus\tOK") ||
		!strings.Contains(out, "c.k\tanalyze\tnote\tThe storage engine for the table doesn't support analyze") {
		t.Fatalf("CHECKSUM, OPTIMIZE, ANALYZE: %v\n%s", err, out)
	}
	check := needTool(t, "mariadb-check")
	if cout, err := tool(t, time.Minute, check, "-h127.0.0.1", fmt.Sprintf("-P%d", s.port), "-uroot", "--databases", "c").CombinedOutput(); err != nil ||
		!strings.Contains(string(cout), "c.k") || !strings.Contains(string(cout), "OK") {
		t.Fatalf("mariadb-check: %v\n%s", err, cout)
	}
	// UPDATE's info reaches the client whole.
	verbose, err := tool(t, time.Minute, cli, "-h127.0.0.1", fmt.Sprintf("-P%d", s.port), "-uroot", "--skip-ssl", "-vvv", "-e", "UPDATE c.t SET v = 'z'").CombinedOutput()
	if err != nil || !strings.Contains(string(verbose), "Rows matched: 2  Changed: 2  Warnings: 0") {
		t.Fatalf("UPDATE: %v\n%s", err, verbose)
	}
}

// TestDumpAndRestore backs a database up with mariadb-dump (with routines,
// events and triggers, as backup scripts do) and restores it into another
// with the mariadb client: the tables come back with the same definitions
// and rows. information_schema.TRIGGERS used to fail on the
// performance_schema database, and the dump's first line, a MariaDB
// executable comment, did not parse.
func TestDumpAndRestore(t *testing.T) {
	cli := needTool(t, "mariadb")
	dump := needTool(t, "mariadb-dump")
	s := startServer(t, t.TempDir())
	admin := s.db("")
	mustExec(t, admin, "CREATE DATABASE src")
	mustExec(t, admin, "CREATE DATABASE dst")
	src := s.db("src")
	mustExec(t, src, `CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(20) NOT NULL, note TEXT,
		price DECIMAL(8,2), at DATETIME, big BIGINT UNSIGNED, UNIQUE KEY (name), KEY (at))`)
	mustExec(t, src, `INSERT INTO t (name, note, price, at, big) VALUES
		('a', 'it''s "quoted"', 1.50, '2024-01-02 03:04:05', 18446744073709551615),
		('b', NULL, NULL, NULL, NULL), ('c', 'back\\slash', -0.01, '1999-12-31 23:59:59', 0)`)
	mustExec(t, src, "CREATE TABLE u (a INT, b INT, PRIMARY KEY (a, b))")
	mustExec(t, src, "INSERT INTO u VALUES (1, 1), (1, 2), (2, 1)")
	// A procedure, restored as made (DO statements, quotes, a handler).
	mustExec(t, src, `CREATE PROCEDURE count_u(IN k INT, OUT n INT) COMMENT 'it''s u'
		BEGIN
		  DECLARE CONTINUE HANDLER FOR 1146 SET n = -1;
		  DO SLEEP(0);
		  SELECT COUNT(*) INTO n FROM u WHERE a = k AND 'x\'y' <> "";
		END`)

	out, err := tool(t, 2*time.Minute, dump, "-h127.0.0.1", fmt.Sprintf("-P%d", s.port), "-uroot", "--skip-ssl",
		"--single-transaction", "--routines", "--events", "--triggers", "src").Output()
	if err != nil {
		t.Fatalf("mariadb-dump: %v\n%s", err, out)
	}
	restore := tool(t, 2*time.Minute, cli, "-h127.0.0.1", fmt.Sprintf("-P%d", s.port), "-uroot", "--skip-ssl", "dst")
	restore.Stdin = bytes.NewReader(out)
	if msg, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("restoring the dump: %v\n%s", err, msg)
	}
	dst := s.db("dst")
	mustExec(t, src, "CALL count_u(1, @n)")
	mustExec(t, dst, "CALL count_u(1, @n)")
	for _, q := range []string{"SHOW CREATE TABLE t", "SELECT * FROM t ORDER BY id", "SHOW CREATE TABLE u", "SELECT * FROM u ORDER BY a, b",
		"SHOW CREATE PROCEDURE count_u", "SELECT ROUTINE_NAME, ROUTINE_COMMENT, SQL_MODE FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE()"} {
		a, b := tableText(t, src, q), tableText(t, dst, q)
		if a != b {
			t.Errorf("%s differs after dump and restore:\nsource:   %s\nrestored: %s", q, a, b)
		}
	}
}

func tableText(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	text, err := rowsText(rows)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return text
}

// queryMaps runs q and returns its rows, each a map from column name to
// value (NULL as "NULL").
func queryMaps(t *testing.T, db *sql.DB, q string) []map[string]string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out []map[string]string
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		m := make(map[string]string, len(cols))
		for i, c := range cols {
			m[c] = "NULL"
			if vals[i].Valid {
				m[c] = vals[i].String
			}
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// rowsText renders rows (and closes them): each value and "|", NULL as
// NULL, a line per row.
func rowsText(rows *sql.Rows) (string, error) {
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var b strings.Builder
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return "", err
		}
		for _, v := range vals {
			if v == nil {
				b.WriteString("NULL|")
			} else {
				b.WriteString(string(v) + "|")
			}
		}
		b.WriteString("\n")
	}
	return b.String(), rows.Err()
}

// TestBadPackets sends garbage and absurd packet lengths on raw sockets; the
// server must answer other clients afterwards.
func TestBadPackets(t *testing.T) {
	s := startServer(t, t.TempDir())
	addr := fmt.Sprintf("127.0.0.1:%d", s.port)
	for _, payload := range [][]byte{
		[]byte("GET / HTTP/1.1\r\n\r\n"),
		{0xff, 0xff, 0xff, 0x01, 0x00},                              // a 16 MB packet that never arrives
		{0x05, 0x00, 0x00, 0x01, 0xde, 0xad},                        // short handshake response
		append([]byte{0x20, 0x00, 0x00, 0x01}, make([]byte, 32)...), // zeros
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		bufio.NewReader(c).Peek(4) // the greeting
		c.Write(payload)
		c.SetReadDeadline(time.Now().Add(time.Second))
		buf := make([]byte, 512)
		c.Read(buf)
		c.Close()
	}
	db := s.db("")
	var one int
	if err := db.QueryRow("SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("server unusable after bad packets: %v", err)
	}
}

// needPyMySQL returns python3's path, skipping (or failing, with
// LOCKSTEP_REQUIRE_TOOLS=1) without PyMySQL.
func needPyMySQL(t *testing.T) string {
	t.Helper()
	py := needTool(t, "python3")
	if err := tool(t, time.Minute, py, "-c", "import pymysql").Run(); err != nil {
		if os.Getenv("LOCKSTEP_REQUIRE_TOOLS") == "1" {
			t.Fatal("PyMySQL is required (LOCKSTEP_REQUIRE_TOOLS=1) but not installed")
		}
		t.Skip("PyMySQL not installed")
	}
	return py
}

// TestPyMySQL runs a small PyMySQL program: a transaction, parameters, a
// rollback, a duplicate key.
func TestPyMySQL(t *testing.T) {
	py := needPyMySQL(t)
	s := startServer(t, t.TempDir())
	script := fmt.Sprintf(`
import pymysql
c = pymysql.connect(host="127.0.0.1", port=%d, user="root", autocommit=False)
cur = c.cursor()
cur.execute("CREATE DATABASE py")
cur.execute("USE py")
cur.execute("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20), score DOUBLE)")
cur.executemany("INSERT INTO t VALUES (%%s, %%s, %%s)", [(1, "ann", 1.5), (2, "bob", 2.5)])
c.commit()
cur.execute("INSERT INTO t VALUES (3, 'cid', 0)")
c.rollback()
try:
    cur.execute("INSERT INTO t VALUES (1, 'dup', 0)")
    raise SystemExit("duplicate accepted")
except pymysql.err.IntegrityError as e:
    assert e.args[0] == 1062, e
cur.execute("SELECT id, name, score FROM t ORDER BY id")
print(cur.fetchall())
`, s.port)
	out, err := tool(t, 2*time.Minute, py, "-c", script).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "((1, 'ann', 1.5), (2, 'bob', 2.5))" {
		t.Fatalf("PyMySQL: %v\n%s", err, out)
	}
}

// TestResetConnection: COM_RESET_CONNECTION (sent by connection pools
// such as MySqlConnector's) rolls back the open transaction, releasing
// its row locks, and leaves a session whose settings still take effect
// (here max_execution_time, which the server reads from the session).
func TestResetConnection(t *testing.T) {
	py := needPyMySQL(t)
	s := startServer(t, t.TempDir())
	script := fmt.Sprintf(`
import pymysql
c = pymysql.connect(host="127.0.0.1", port=%d, user="root", autocommit=False)
cur = c.cursor()
cur.execute("CREATE DATABASE r")
cur.execute("CREATE TABLE r.t (id INT PRIMARY KEY, v INT)")
cur.execute("INSERT INTO r.t VALUES (1, 0)")
c.commit()
cur.execute("UPDATE r.t SET v = 1 WHERE id = 1")
c._execute_command(0x1f, b"")  # COM_RESET_CONNECTION
assert c._read_packet().is_ok_packet()
other = pymysql.connect(host="127.0.0.1", port=%d, user="root", autocommit=True)
oc = other.cursor()
oc.execute("SET SESSION innodb_lock_wait_timeout = 5")
oc.execute("UPDATE r.t SET v = 2 WHERE id = 1")
cur.execute("SET SESSION max_execution_time = 100")
try:
    cur.execute("SELECT SLEEP(3)")
    raise SystemExit("max_execution_time ignored after the reset")
except pymysql.err.OperationalError as e:
    assert e.args[0] == 3024, e
cur.execute("SELECT v FROM r.t")
print(cur.fetchall())
`, s.port, s.port)
	out, err := tool(t, 2*time.Minute, py, "-c", script).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "((2,),)" {
		t.Fatalf("PyMySQL: %v\n%s", err, out)
	}
}

// TestPreparedLockingReads checks SELECT ... FOR UPDATE through server-side
// prepared statements (COM_STMT_EXECUTE, where GMS reuses the cached AST):
// a second transaction's locking read of the same row waits for the first,
// and concurrent read-modify-write loses nothing.
func TestPreparedLockingReads(t *testing.T) {
	s := startServer(t, t.TempDir())
	db := s.db("")
	mustExec(t, db, "CREATE DATABASE p")
	p := s.db("p")
	mustExec(t, p, "CREATE TABLE c (id INT PRIMARY KEY, v INT NOT NULL)")
	mustExec(t, p, "INSERT INTO c VALUES (1, 0)")

	tx1, _ := p.Begin()
	var v int
	if err := tx1.QueryRow("SELECT v FROM c WHERE id = ? FOR UPDATE", 1).Scan(&v); err != nil {
		t.Fatal(err)
	}
	got := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		tx2, _ := p.Begin()
		var w int
		if err := tx2.QueryRow("SELECT v FROM c WHERE id = ? FOR UPDATE", 1).Scan(&w); err != nil {
			t.Error(err)
		}
		tx2.Commit()
		got <- time.Since(start)
	}()
	time.Sleep(300 * time.Millisecond)
	tx1.Commit()
	if d := <-got; d < 250*time.Millisecond {
		t.Fatalf("the second prepared FOR UPDATE did not wait for the first (%v)", d)
	}

	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				tx, err := p.Begin()
				if err != nil {
					t.Error(err)
					return
				}
				var cur int
				if err := tx.QueryRow("SELECT v FROM c WHERE id = ? FOR UPDATE", 1).Scan(&cur); err != nil {
					t.Error(err)
					tx.Rollback()
					return
				}
				if _, err := tx.Exec("UPDATE c SET v = ? WHERE id = ?", cur+1, 1); err != nil {
					t.Error(err)
					tx.Rollback()
					return
				}
				if err := tx.Commit(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := p.QueryRow("SELECT v FROM c WHERE id = 1").Scan(&v); err != nil || v != 100 {
		t.Fatalf("after 4x25 prepared read-modify-writes v = %d (%v), want 100", v, err)
	}
}

// TestKillQueryEndsLockWait: KILL QUERY interrupts a statement waiting for
// a row lock at once with 1317, not after innodb_lock_wait_timeout.
func TestKillQueryEndsLockWait(t *testing.T) {
	s := startServer(t, t.TempDir())
	db := s.db("")
	mustExec(t, db, "CREATE DATABASE kq")
	k := s.db("kq")
	mustExec(t, k, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, k, "INSERT INTO t VALUES (1, 0)")
	ctx := context.Background()
	holder, _ := k.Conn(ctx)
	defer holder.Close()
	waiter, _ := k.Conn(ctx)
	defer waiter.Close()
	mustConn := func(c *sql.Conn, q string) {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	mustConn(holder, "BEGIN")
	mustConn(holder, "UPDATE t SET v = 1 WHERE id = 1")
	var id int
	waiter.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id)
	done := make(chan error, 1)
	go func() {
		_, err := waiter.ExecContext(ctx, "UPDATE t SET v = 2 WHERE id = 1")
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	mustExec(t, db, fmt.Sprintf("KILL QUERY %d", id))
	// 1317 (not 1205) says the kill ended the wait; the bound stays well
	// under the 50 s innodb_lock_wait_timeout.
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "1317") {
			t.Fatalf("killed lock wait returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("KILL QUERY did not end the lock wait within 30 s")
	}
	mustConn(holder, "COMMIT")
	// The killed session is still usable.
	if _, err := waiter.ExecContext(ctx, "UPDATE t SET v = 3 WHERE id = 1"); err != nil {
		t.Fatalf("session after KILL QUERY: %v", err)
	}
}

// TestDisconnectRollsBack: a client that goes away mid-transaction loses
// its changes and its locks at once.
func TestDisconnectRollsBack(t *testing.T) {
	s := startServer(t, t.TempDir())
	db := s.db("")
	mustExec(t, db, "CREATE DATABASE dc")
	d := s.db("dc")
	mustExec(t, d, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, d, "INSERT INTO t VALUES (1, 0)")
	ctx := context.Background()
	c, _ := d.Conn(ctx)
	if _, err := c.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, "UPDATE t SET v = 99 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	c.Raw(func(dc any) error { return dc.(interface{ Close() error }).Close() }) // drop the TCP connection
	c.Close()
	// Had the departed client's lock outlived it, this would end in 1205.
	other, _ := d.Conn(ctx)
	defer other.Close()
	if _, err := other.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 20"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.ExecContext(ctx, "UPDATE t SET v = v + 1 WHERE id = 1"); err != nil {
		t.Fatalf("row still locked after the client left: %v", err)
	}
	var v int
	d.QueryRow("SELECT v FROM t WHERE id = 1").Scan(&v)
	if v != 1 {
		t.Fatalf("v = %d: the departed client's uncommitted update survived", v)
	}
}

// TestDepartedClientsStatementIsCancelled: a statement still running (here,
// waiting for a row lock) when its client disconnects is cancelled within
// a few seconds, so it does not take effect later for nobody.
func TestDepartedClientsStatementIsCancelled(t *testing.T) {
	s := startServer(t, t.TempDir())
	db := s.db("")
	mustExec(t, db, "CREATE DATABASE gone")
	d := s.db("gone")
	mustExec(t, d, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, d, "INSERT INTO t VALUES (1, 0)")
	ctx := context.Background()
	holder, _ := d.Conn(ctx)
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, "UPDATE t SET v = 1 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	// Another client sends an UPDATE that waits for the lock, then its
	// socket is closed under it.
	var sock atomic.Pointer[net.Conn]
	mysqldrv.RegisterDialContext("departing", func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err == nil {
			sock.Store(&c)
		}
		return c, err
	})
	waiter, _ := sql.Open("mysql", fmt.Sprintf("root@departing(127.0.0.1:%d)/gone", s.port))
	defer waiter.Close()
	waiter.SetMaxOpenConns(1)
	done := make(chan error, 1)
	go func() {
		_, err := waiter.ExecContext(ctx, "UPDATE t SET v = v + 100 WHERE id = 1")
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	(*sock.Load()).Close()
	<-done
	time.Sleep(3 * time.Second) // the watchdog looks every second at statements older than a second
	if _, err := holder.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	var v int
	d.QueryRow("SELECT v FROM t WHERE id = 1").Scan(&v)
	if v != 1 {
		t.Fatalf("v = %d: the departed client's UPDATE ran after it left", v)
	}
}

// TestViews: views are kept across a restart, replicate to a Lockstep
// replica, are listed as MySQL lists them, and survive a mariadb-dump and
// restore.
func TestViews(t *testing.T) {
	p := startServer(t, t.TempDir())
	pdb := p.db("")
	mustExec(t, pdb, "CREATE DATABASE shop")
	shop := p.db("shop")
	mustExec(t, shop, "CREATE TABLE orders (id INT PRIMARY KEY, amount INT, paid BOOL)")
	mustExec(t, shop, "INSERT INTO orders VALUES (1, 10, 1), (2, 20, 0), (3, 30, 1)")
	mustExec(t, shop, "CREATE VIEW paid (id, amount) AS SELECT id, amount FROM orders WHERE paid")
	mustExec(t, shop, "CREATE VIEW total AS SELECT SUM(amount) AS s FROM paid")
	mustExec(t, shop, "CREATE OR REPLACE VIEW unpaid AS SELECT id FROM orders WHERE NOT paid")
	mustExec(t, shop, "ALTER VIEW unpaid AS SELECT id, amount FROM orders WHERE NOT paid")
	mustExec(t, shop, "CREATE VIEW scratch AS SELECT 1")
	mustExec(t, shop, "DROP VIEW scratch")
	if _, err := shop.Exec("CREATE TABLE paid (x INT PRIMARY KEY)"); errNumber(err) != 1050 {
		t.Fatalf("a table named as a view: %v, want 1050", err)
	}
	check := func(db *sql.DB, who string) {
		t.Helper()
		var s, n int
		if err := db.QueryRow("SELECT s FROM shop.total").Scan(&s); err != nil || s != 40 {
			t.Fatalf("%s: SELECT from a view of a view: %d, %v; want 40", who, s, err)
		}
		if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.VIEWS WHERE TABLE_SCHEMA = 'shop'").Scan(&n); err != nil || n != 3 {
			t.Fatalf("%s: %d views, %v; want 3", who, n, err)
		}
		var amount int
		if err := db.QueryRow("SELECT amount FROM shop.unpaid").Scan(&amount); err != nil || amount != 20 {
			t.Fatalf("%s: the altered view: %d, %v", who, amount, err)
		}
	}
	check(shop, "primary")
	// A session without a current database reads a view too, and still
	// has none afterwards.
	c := conn(t, pdb)
	var total int
	var cur sql.NullString
	if err := c.QueryRowContext(context.Background(), "SELECT s FROM shop.total").Scan(&total); err != nil || total != 40 {
		t.Fatalf("a view read without a current database: %d, %v", total, err)
	}
	if err := c.QueryRowContext(context.Background(), "SELECT DATABASE()").Scan(&cur); err != nil || cur.Valid {
		t.Fatalf("DATABASE() after reading a view: %v, %v", cur, err)
	}
	check(pdb, "primary, without a current database")
	for q, want := range map[string]uint16{"INSERT INTO shop.paid VALUES (9, 9)": 1288, "DELETE FROM shop.paid": 1288, "DROP VIEW shop.nothing": 1051, "ALTER VIEW shop.nothing AS SELECT 1": 1146} {
		if _, err := pdb.Exec(q); errNumber(err) != want {
			t.Fatalf("%s: %v, want %d", q, err, want)
		}
	}
	r := startServer(t, t.TempDir(), "--server-id=2", "--source-host=127.0.0.1", fmt.Sprintf("--source-port=%d", p.port), "--source-user=root")
	waitCaughtUp(t, pdb, r.db(""), 30*time.Second)
	check(r.db("shop"), "replica")
	p.stop()
	p.start()
	check(p.db("shop"), "primary after a restart")

	dump := needTool(t, "mariadb-dump")
	cli := needTool(t, "mariadb")
	out, err := exec.Command(dump, "-h127.0.0.1", fmt.Sprintf("-P%d", p.port), "-uroot", "--skip-ssl", "shop").Output()
	if err != nil {
		t.Fatalf("mariadb-dump: %v", err)
	}
	mustExec(t, p.db(""), "CREATE DATABASE restored")
	restore := exec.Command(cli, "-h127.0.0.1", fmt.Sprintf("-P%d", p.port), "-uroot", "--skip-ssl", "restored")
	restore.Stdin = strings.NewReader(string(out))
	if b, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("restoring the dump: %v\n%s", err, b)
	}
	var s int
	if err := p.db("restored").QueryRow("SELECT s FROM total").Scan(&s); err != nil || s != 40 {
		t.Fatalf("the restored view: %d, %v", s, err)
	}
}

// TestFailedAutocommitReleasesLocks: a statement that fails in autocommit
// mode ends its transaction, so the rows and tables it locked before
// failing are free at once (they were held until the connection's next
// statement: an idle connection blocked other writers and LOCK TABLES).
// Both paths: the fast path's statement shape, and go-mysql-server's.
func TestFailedAutocommitReleasesLocks(t *testing.T) {
	s := startServer(t, t.TempDir())
	mustExec(t, s.db(""), "CREATE DATABASE fl")
	db := s.db("fl")
	mustExec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, db, "INSERT INTO t VALUES (1, 0), (2, 0)")
	for _, fast := range []string{"ON", "OFF"} {
		failing, other := conn(t, db), conn(t, db)
		mustConnExec(t, failing, "SET lockstep_fast_path = "+fast)
		if _, err := failing.ExecContext(context.Background(), "UPDATE t SET id = 2 WHERE id = 1"); errNumber(err) != 1062 {
			t.Fatalf("fast path %s: the failing UPDATE: %v, want 1062", fast, err)
		}
		mustConnExec(t, other, "SET SESSION innodb_lock_wait_timeout = 1")
		if _, err := other.ExecContext(context.Background(), "UPDATE t SET v = v + 1 WHERE id = 1"); err != nil {
			t.Fatalf("fast path %s: a row the failed statement had locked: %v", fast, err)
		}
		mustConnExec(t, other, "LOCK TABLES t READ")
		mustConnExec(t, other, "UNLOCK TABLES")
	}
}

// TestSkipLockedAndNowait: a job queue's workers take different rows with
// FOR UPDATE SKIP LOCKED, and NOWAIT fails at once with 3572, over the
// wire (text and prepared), where the fast path hands both to
// go-mysql-server.
func TestSkipLockedAndNowait(t *testing.T) {
	s := startServer(t, t.TempDir())
	mustExec(t, s.db(""), "CREATE DATABASE q")
	db := s.db("q")
	mustExec(t, db, "CREATE TABLE jobs (id INT PRIMARY KEY, state VARCHAR(10))")
	mustExec(t, db, "INSERT INTO jobs VALUES (1, 'new'), (2, 'new'), (3, 'new')")
	ctx := context.Background()
	a, b := conn(t, db), conn(t, db)
	mustConnExec(t, a, "BEGIN")
	var id int
	if err := a.QueryRowContext(ctx, "SELECT id FROM jobs WHERE state = 'new' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED").Scan(&id); err != nil || id != 1 {
		t.Fatalf("worker a: %d, %v; want 1", id, err)
	}
	mustConnExec(t, b, "BEGIN")
	if err := b.QueryRowContext(ctx, "SELECT id FROM jobs WHERE state = ? ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED", "new").Scan(&id); err != nil || id != 2 {
		t.Fatalf("worker b (prepared): %d, %v; want 2", id, err)
	}
	start := time.Now()
	if _, err := db.Exec("SELECT id FROM jobs WHERE id = 1 FOR UPDATE NOWAIT"); errNumber(err) != 3572 || time.Since(start) > 5*time.Second {
		t.Fatalf("NOWAIT on a locked row: %v after %v, want 3572 at once", err, time.Since(start))
	}
	mustConnExec(t, a, "COMMIT")
	mustConnExec(t, b, "COMMIT")
}

// TestShutdownUnderLoad stops a server (SIGTERM) while eight clients
// read and write: as mysqld does, it ends the clients' connections and
// waits for their handlers before it stops the commit pipeline and the
// store. Before, statements still running read a closed store (panics
// caught by the connection handler, "pebble: closed") and the store
// reported leaked iterators. Every insert acknowledged before the stop
// is there after a restart.
func TestShutdownUnderLoad(t *testing.T) {
	for round := range 3 {
		dir := t.TempDir()
		s := startServer(t, dir)
		db := s.db("")
		mustExec(t, db, "CREATE DATABASE d")
		mustExec(t, db, "CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(300), KEY (v))")
		var mu sync.Mutex
		acked := map[int]bool{}
		var stopping atomic.Bool
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; !stopping.Load(); i += 8 {
					if w%2 == 0 {
						if _, err := db.Exec("INSERT INTO d.t VALUES (?, REPEAT('v', 200))", i); err != nil {
							if stopping.Load() {
								return
							}
							continue
						}
						mu.Lock()
						acked[i] = true
						mu.Unlock()
					} else if rows, err := db.Query("SELECT id, v FROM d.t WHERE v > '' ORDER BY v LIMIT 500"); err == nil {
						for rows.Next() {
						}
						rows.Close()
					} else if stopping.Load() {
						return
					}
				}
			}()
		}
		time.Sleep(time.Duration(300+200*round) * time.Millisecond)
		stopping.Store(true)
		s.stop()
		wg.Wait()
		log, err := os.ReadFile(s.logPath)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"panic", "leaked iterators", "pebble: closed"} {
			if strings.Contains(string(log), bad) {
				t.Fatalf("round %d: the server's log says %q at shutdown:\n%s", round, bad, log)
			}
		}
		s2 := startServer(t, dir)
		got := idSet(t, s2.db(""), "SELECT id FROM d.t")
		for i := range acked {
			if !got[i] {
				t.Fatalf("round %d: insert %d was acknowledged before the stop and is gone", round, i)
			}
		}
		t.Logf("round %d: %d inserts acknowledged, all there after the restart", round, len(acked))
		s2.stop()
	}
}

// TestShutdownStatement: SHUTDOWN and mariadb-admin shutdown
// (COM_SHUTDOWN) need SHUTDOWN and RELOAD is needed by refresh; with
// them the client gets its OK and the server stops cleanly, as on
// SIGTERM, and starts again with everything committed.
func TestShutdownStatement(t *testing.T) {
	admin := needTool(t, "mariadb-admin")
	s := startServer(t, t.TempDir())
	root := s.db("")
	mustExec(t, root, "CREATE DATABASE d")
	mustExec(t, root, "CREATE TABLE d.t (id INT PRIMARY KEY)")
	mustExec(t, root, "INSERT INTO d.t VALUES (1), (2)")
	mustExec(t, root, "CREATE USER weak@'%' IDENTIFIED BY 'pw'")
	adminAs := func(user string, args ...string) ([]byte, error) {
		return tool(t, time.Minute, admin, append([]string{"-h127.0.0.1", fmt.Sprintf("-P%d", s.port), "-u" + user, "-ppw"}, args...)...).CombinedOutput()
	}
	for _, c := range []struct{ cmd, need string }{{"shutdown", "SHUTDOWN"}, {"refresh", "RELOAD"}} {
		if out, err := adminAs("weak", c.cmd); err == nil || !strings.Contains(string(out), c.need) {
			t.Errorf("mariadb-admin %s without %s: %v\n%s", c.cmd, c.need, err, out)
		}
	}
	if _, err := s.as(t, "weak", "pw").Exec("SHUTDOWN"); errNumber(err) != 1227 {
		t.Errorf("SHUTDOWN without the privilege: %v, want 1227", err)
	}
	for _, how := range []string{"COM_SHUTDOWN", "SHUTDOWN"} {
		if how == "SHUTDOWN" {
			if _, err := s.db("").Exec("SHUTDOWN"); err != nil {
				t.Fatalf("SHUTDOWN: %v", err)
			}
		} else if out, err := tool(t, time.Minute, admin, "-h127.0.0.1", fmt.Sprintf("-P%d", s.port), "-uroot", "shutdown").CombinedOutput(); err != nil {
			t.Fatalf("mariadb-admin shutdown: %v\n%s", err, out)
		}
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			t.Fatalf("the server still runs 30 s after %s", how)
		}
		if code := s.cmd.ProcessState.ExitCode(); code != 0 {
			t.Fatalf("after %s the server exited with %d", how, code)
		}
		s.proc, s.cmd = nil, nil
		s.start()
		var n int
		if err := s.db("").QueryRow("SELECT COUNT(*) FROM d.t").Scan(&n); err != nil || n != 2 {
			t.Fatalf("after %s and a restart: %d rows, %v", how, n, err)
		}
	}
}
