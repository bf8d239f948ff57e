package integration

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/lockstepdb/lockstep/internal/launch"
)

// mariadbServer is a real MariaDB server (Debian's mariadbd) on a loopback
// port, with its own data directory.
type mariadbServer struct {
	t    *testing.T
	dir  string
	port int
	proc *launch.Process
}

func startMariaDB(t *testing.T, serverID int, extra ...string) *mariadbServer {
	t.Helper()
	mariadbd := needTool(t, "mariadbd")
	install := needTool(t, "mariadb-install-db")
	m := &mariadbServer{t: t, dir: t.TempDir(), port: fixedPort(t)}
	data := filepath.Join(m.dir, "data")
	if out, err := tool(t, 3*time.Minute, install, "--no-defaults", "--user=root", "--datadir="+data,
		"--auth-root-authentication-method=normal", "--skip-test-db").CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	args := append([]string{"--no-defaults", "--user=root", "--datadir=" + data, "--socket=" + m.sock(),
		"--pid-file=" + filepath.Join(m.dir, "mariadbd.pid"), "--log-error=" + filepath.Join(m.dir, "error.log"),
		"--port=" + strconv.Itoa(m.port), "--bind-address=127.0.0.1", "--skip-name-resolve",
		"--server-id=" + strconv.Itoa(serverID), "--innodb-buffer-pool-size=64M", "--innodb-log-file-size=48M",
		"--performance-schema=OFF"}, extra...)
	p, err := launch.Start(exec.Command(mariadbd, args...), filepath.Join(m.dir, "stdout.log"))
	if err != nil {
		t.Fatal(err)
	}
	m.proc = p
	t.Cleanup(m.stop)
	if err := p.WaitAnswers("root@unix("+m.sock()+")/", 60*time.Second); err != nil {
		log, _ := os.ReadFile(filepath.Join(m.dir, "error.log"))
		t.Fatalf("mariadbd did not start: %v\n%s", err, log)
	}
	return m
}

func (m *mariadbServer) sock() string { return filepath.Join(m.dir, "mysqld.sock") }

func (m *mariadbServer) db() *sql.DB {
	db, err := sql.Open("mysql", "root@unix("+m.sock()+")/")
	if err != nil {
		m.t.Fatal(err)
	}
	db.SetMaxOpenConns(4)
	m.t.Cleanup(func() { db.Close() })
	return db
}

func (m *mariadbServer) stop() {
	if m.proc == nil {
		return
	}
	m.proc.Stop(60 * time.Second)
	m.proc = nil
}

// followLockstep makes MariaDB server mdb a replica, by MariaDB GTID, of
// the Lockstep server whose MariaDB port is mport, and starts it.
func followLockstep(t *testing.T, mdb *sql.DB, mport int) {
	t.Helper()
	mustExec(t, mdb, fmt.Sprintf("CHANGE MASTER TO master_host='127.0.0.1', master_port=%d, master_user='root', master_use_gtid=slave_pos", mport))
	mustExec(t, mdb, "START SLAVE")
}

// waitMariaDBReplica waits, up to timeout, for the MariaDB replica mdb to
// have applied every transaction of its Lockstep source src (server id 1,
// MariaDB's domain 0).
func waitMariaDBReplica(t *testing.T, src, mdb *sql.DB, timeout time.Duration) {
	t.Helper()
	var executed string
	if err := src.QueryRow("SELECT @@global.gtid_executed").Scan(&executed); err != nil {
		t.Fatal(err)
	}
	want := "0-1-" + executed[strings.LastIndex(executed, "-")+1:]
	deadline := time.Now().Add(timeout)
	for {
		var pos string
		mdb.QueryRow("SELECT @@gtid_slave_pos").Scan(&pos)
		if pos == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica at %q, want %q; SHOW SLAVE STATUS errors: %s", pos, want, slaveErrors(mdb))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// tableHash hashes a table's rows in primary key order.
func tableHash(t *testing.T, db *sql.DB, table string) (string, int) {
	t.Helper()
	rows, err := db.Query("SELECT id, k, c, pad FROM " + table + " ORDER BY id")
	if err != nil {
		t.Fatalf("%s: %v", table, err)
	}
	defer rows.Close()
	h := sha256.New()
	n := 0
	for rows.Next() {
		var id, k int64
		var c, pad string
		if err := rows.Scan(&id, &k, &c, &pad); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%d\x00%d\x00%s\x00%s\n", id, k, c, pad)
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil)), n
}

// TestMariaDBReplica: a real MariaDB 10.11 replica follows a Lockstep
// primary by MariaDB GTID (through --mariadb-port) during a sysbench
// oltp_write_only run, with conservative parallel replication, and ends
// with identical tables.
func TestMariaDBReplica(t *testing.T) {
	sb := needTool(t, "sysbench")
	mport := fixedPort(t)
	s := startServer(t, t.TempDir(), "--mariadb-port", strconv.Itoa(mport))
	mustExec(t, s.db(""), "CREATE DATABASE sbtest")
	// Both ports number their connections, in one process list: their ids
	// must not meet (they did, and the replica's session was refused with
	// "pid N is already in use").
	mp, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", mport))
	if err != nil {
		t.Fatal(err)
	}
	defer mp.Close()
	var mainID, mariaID uint64
	if err := s.db("").QueryRow("SELECT CONNECTION_ID()").Scan(&mainID); err != nil {
		t.Fatal(err)
	}
	if err := mp.QueryRow("SELECT CONNECTION_ID()").Scan(&mariaID); err != nil || mariaID == mainID {
		t.Fatalf("connection ids: main port %d, MariaDB port %d (%v)", mainID, mariaID, err)
	}
	// Each port's VERSION() agrees with its handshake: MariaDB's tools
	// check it (mariadb-binlog --read-from-remote-server refused a
	// MySQL version on the MariaDB port).
	var mv, lv string
	if err := mp.QueryRow("SELECT VERSION()").Scan(&mv); err != nil || !strings.Contains(mv, "MariaDB") {
		t.Fatalf("VERSION() on the MariaDB port: %q %v", mv, err)
	}
	if err := s.db("").QueryRow("SELECT VERSION()").Scan(&lv); err != nil || strings.Contains(lv, "MariaDB") {
		t.Fatalf("VERSION() on the main port: %q %v", lv, err)
	}
	if mb, err := exec.LookPath("mariadb-binlog"); err == nil {
		out, err := tool(t, time.Minute, mb, "--read-from-remote-server", "-h127.0.0.1", fmt.Sprintf("-P%d", mport), "-uroot", "binlog.000001").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "CREATE DATABASE") {
			t.Fatalf("mariadb-binlog --read-from-remote-server on the MariaDB port: %v\n%s", err, out)
		}
	}
	common := []string{"--db-driver=mysql", "--mysql-host=127.0.0.1", fmt.Sprintf("--mysql-port=%d", s.port),
		"--mysql-user=root", "--mysql-db=sbtest", "--tables=2", "--table-size=2000"}
	sysbench := func(args ...string) {
		t.Helper()
		out, err := tool(t, 5*time.Minute, sb, append(append(append([]string{}, common...), args[:len(args)-1]...), "oltp_write_only", args[len(args)-1])...).CombinedOutput()
		if err != nil || strings.Contains(string(out), "FATAL") {
			t.Fatalf("sysbench %v: %v\n%s", args, err, out)
		}
	}
	sysbench("prepare")

	m := startMariaDB(t, 2)
	mdb := m.db()
	for _, q := range []string{
		"SET GLOBAL slave_parallel_threads = 4",
		"SET GLOBAL slave_parallel_mode = 'conservative'",
	} {
		mustExec(t, mdb, q)
	}
	followLockstep(t, mdb, mport)
	// Column changes reach MariaDB as the statements Lockstep logs.
	for _, q := range sbtestColumnChanges {
		mustExec(t, s.db(""), q)
	}
	sysbench("--threads=8", "--time=6", "--mysql-ignore-errors=1213,1205", "run")
	// A table without a primary key: MariaDB finds its rows by image.
	mustExec(t, s.db(""), "CREATE DATABASE kl")
	mustExec(t, s.db(""), "CREATE TABLE kl.t (a INT, b VARCHAR(10), KEY a_1 (a))")
	keylessLoad(t, s.db(""), 4, 50)
	mustExec(t, s.db(""), "ALTER TABLE kl.t ADD COLUMN c INT NOT NULL DEFAULT 5")
	mustExec(t, s.db(""), "ALTER TABLE kl.t DROP COLUMN c")
	keylessLoad(t, s.db(""), 4, 50)

	// Nullable TIMESTAMP columns stay nullable on the replica (the Query
	// event says explicit_defaults_for_timestamp is on), and NULLs arrive
	// as NULLs, not as the event's time.
	mustExec(t, s.db(""), "CREATE DATABASE ts")
	mustExec(t, s.db(""), "CREATE TABLE ts.t (id INT PRIMARY KEY, a TIMESTAMP NULL, b TIMESTAMP NULL DEFAULT NULL, c TIMESTAMP(3) NULL)")
	mustExec(t, s.db(""), "INSERT INTO ts.t VALUES (1, NULL, NULL, NULL), (2, '2020-01-02 03:04:05', NULL, '2020-01-02 03:04:05.678')")
	// Views reach MariaDB as the statements that made them.
	ts := s.db("ts")
	mustExec(t, ts, "CREATE VIEW nulls AS SELECT id FROM t WHERE a IS NULL")
	mustExec(t, ts, "CREATE VIEW gone AS SELECT 1 AS one")
	mustExec(t, ts, "ALTER VIEW nulls AS SELECT id, b FROM t WHERE a IS NULL")
	mustExec(t, ts, "DROP VIEW gone")
	// Foreign keys reach MariaDB as ALTER TABLE ... ADD CONSTRAINT, their
	// cascades as rows.
	mustExec(t, ts, "CREATE TABLE par (id INT PRIMARY KEY)")
	mustExec(t, ts, "CREATE TABLE chi (id INT PRIMARY KEY, p INT, CONSTRAINT chi_par FOREIGN KEY (p) REFERENCES par (id) ON DELETE CASCADE ON UPDATE CASCADE)")
	mustExec(t, ts, "CREATE TABLE nul (id INT PRIMARY KEY, p INT, CONSTRAINT nul_par FOREIGN KEY (p) REFERENCES par (id) ON DELETE SET NULL)")
	mustExec(t, ts, "INSERT INTO par VALUES (1), (2), (3)")
	mustExec(t, ts, "INSERT INTO chi VALUES (10, 1), (11, 2), (12, 2)")
	mustExec(t, ts, "INSERT INTO nul VALUES (20, 3)")
	mustExec(t, ts, "DELETE FROM par WHERE id IN (2, 3)")
	mustExec(t, ts, "UPDATE par SET id = 5 WHERE id = 1")
	// CHECK constraints reach MariaDB as ALTER TABLE ... ADD CONSTRAINT
	// and DROP CONSTRAINT.
	mustExec(t, ts, "CREATE TABLE ck (id INT PRIMARY KEY, v INT, b BIT(12), CHECK (v > 0), CONSTRAINT gone CHECK (v < 1000))")
	mustExec(t, ts, "ALTER TABLE ck ADD CONSTRAINT small CHECK (v < 100)")
	mustExec(t, ts, "ALTER TABLE ck DROP CONSTRAINT gone")
	mustExec(t, ts, "INSERT INTO ck VALUES (1, 50, b'101010101010')")
	// Generated columns reach MariaDB in the CREATE TABLE, their values
	// in the rows.
	mustExec(t, ts, "CREATE TABLE gen (id INT PRIMARY KEY, a INT, b INT AS (a * 2) VIRTUAL, c INT AS (a + 1) STORED)")
	mustExec(t, ts, "INSERT INTO gen (id, a) VALUES (1, 5)")
	mustExec(t, ts, "UPDATE gen SET a = 6 WHERE id = 1")
	// JSON columns reach MariaDB as its JSON (LONGTEXT) holding the
	// documents' text; the other columns of their rows as they are.
	mustExec(t, ts, "CREATE TABLE js (id INT PRIMARY KEY, doc JSON, v VARCHAR(300), doc2 JSON)")
	mustExec(t, ts, `INSERT INTO js VALUES (1, '{"a": [1, 2.5, "x\\"q", null, true], "big": 1e300}', 'vv', '[]'), (2, NULL, NULL, '{"k": {"kk": 1}}'), (3, '"s"', 'x', 'null')`)
	mustExec(t, ts, `UPDATE js SET doc = JSON_SET(doc, '$.z', 'new') WHERE id = 1`)
	mustExec(t, ts, "DELETE FROM js WHERE id = 2")
	// Triggers reach MariaDB as the statements that made them (with their
	// DEFINER), their effects as rows: the replica fires none of them.
	mustExec(t, ts, "CREATE TABLE trg (id INT PRIMARY KEY, v INT)")
	mustExec(t, ts, "CREATE TABLE trg_log (seq INT AUTO_INCREMENT PRIMARY KEY, what VARCHAR(40))")
	mustExec(t, ts, "CREATE TRIGGER trg_bi BEFORE INSERT ON trg FOR EACH ROW SET NEW.v = NEW.v * 2")
	mustExec(t, ts, "CREATE TRIGGER trg_au AFTER UPDATE ON trg FOR EACH ROW INSERT INTO trg_log (what) VALUES (CONCAT(OLD.v, '->', NEW.v))")
	mustExec(t, ts, "INSERT INTO trg VALUES (1, 1), (2, 2)")
	mustExec(t, ts, "UPDATE trg SET v = v + 1")
	// Stored procedures reach MariaDB as the statements that made them
	// (with their DEFINER); a CALL's changes as its statements' rows.
	mustExec(t, ts, "CREATE TABLE pc (id INT PRIMARY KEY, v INT)")
	mustExec(t, ts, "CREATE PROCEDURE pc_fill(IN n INT) BEGIN DECLARE i INT DEFAULT 0; WHILE i < n DO INSERT INTO pc VALUES (i, i * i); SET i = i + 1; END WHILE; UPDATE pc SET v = v + 1 WHERE id % 2 = 0; END")
	mustExec(t, ts, "CALL pc_fill(5)")
	mustExec(t, ts, "ALTER PROCEDURE pc_fill COMMENT 'fills pc' SQL SECURITY INVOKER MODIFIES SQL DATA")

	// TIME columns of whole seconds, of milliseconds and of
	// microseconds, logged as declared (the row images are encoded for
	// them): a fraction given to a TIME is rounded on the primary to the
	// column's digits, and the replica gets the rounded value. (The
	// replica's TIME(6) values show six digits where Lockstep shows none
	// of a whole second.)
	mustExec(t, ts, "CREATE TABLE tm (id INT PRIMARY KEY, a TIME, b TIME(6), c TIME(3))")
	mustExec(t, ts, "INSERT INTO tm VALUES (1, '10:00:59.5', '10:00:59.123456', '10:00:59.4567'), (2, '-01:02:03', NULL, '-01:02:03.25')")

	waitMariaDBReplica(t, s.db(""), mdb, 90*time.Second)
	for _, tbl := range []string{"sbtest.sbtest1", "sbtest.sbtest2"} {
		hp, np := tableHash(t, s.db(""), tbl)
		hr, nr := tableHash(t, mdb, tbl)
		if hp != hr || np != nr {
			t.Fatalf("%s differs: primary %d rows %s, replica %d rows %s", tbl, np, hp[:12], nr, hr[:12])
		}
		t.Logf("%s: %d rows identical", tbl, np)
	}
	var create string
	if err := mdb.QueryRow("SHOW CREATE TABLE ts.t").Scan(new(string), &create); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(create, "ON UPDATE") || strings.Contains(strings.ToUpper(create), "NOT NULL DEFAULT CURRENT_TIMESTAMP") {
		t.Fatalf("the replica made a nullable TIMESTAMP automatic:\n%s", create)
	}
	var nulls int
	if err := mdb.QueryRow("SELECT COUNT(*) FROM ts.t WHERE a IS NULL AND b IS NULL").Scan(&nulls); err != nil || nulls != 1 {
		t.Fatalf("rows with NULL timestamps on the replica: %d (%v), want 1\n%s", nulls, err, create)
	}
	var viewRows, views int
	if err := mdb.QueryRow("SELECT COUNT(*) FROM ts.nulls WHERE b IS NULL").Scan(&viewRows); err != nil || viewRows != 1 {
		t.Fatalf("the view on the replica: %d rows, %v; want 1 (%s)", viewRows, err, slaveErrors(mdb))
	}
	if err := mdb.QueryRow("SELECT COUNT(*) FROM information_schema.VIEWS WHERE TABLE_SCHEMA = 'ts'").Scan(&views); err != nil || views != 1 {
		t.Fatalf("views on the replica: %d, %v; want 1", views, err)
	}
	var children, moved, nulled, fks int
	if err := mdb.QueryRow("SELECT (SELECT COUNT(*) FROM ts.chi), (SELECT COUNT(*) FROM ts.chi WHERE p = 5), (SELECT COUNT(*) FROM ts.nul WHERE p IS NULL), (SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = 'ts')").Scan(&children, &moved, &nulled, &fks); err != nil || children != 1 || moved != 1 || nulled != 1 || fks != 2 {
		t.Fatalf("on the replica: %d child rows, %d moved, %d set to NULL, %d foreign keys (%v); want 1, 1, 1, 2", children, moved, nulled, fks, err)
	}
	var checks string
	if err := mdb.QueryRow("SELECT GROUP_CONCAT(CONSTRAINT_NAME ORDER BY CONSTRAINT_NAME) FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = 'ts' AND TABLE_NAME = 'ck'").Scan(&checks); err != nil || checks != "ck_chk_1,small" {
		t.Fatalf("checks on the replica: %q (%v), want ck_chk_1,small", checks, err)
	}
	var genB, genC int
	if err := mdb.QueryRow("SELECT b, c FROM ts.gen WHERE id = 1").Scan(&genB, &genC); err != nil || genB != 12 || genC != 7 {
		t.Fatalf("generated columns on the replica: %d, %d (%v), want 12, 7; %s", genB, genC, err, slaveErrors(mdb))
	}
	var bits int
	if err := mdb.QueryRow("SELECT b + 0 FROM ts.ck WHERE id = 1").Scan(&bits); err != nil || bits != 0xaaa {
		t.Fatalf("a BIT(12) on the replica: %d (%v), want %d", bits, err, 0xaaa)
	}
	if _, err := mdb.Exec("INSERT INTO ts.ck VALUES (2, 500, 0)"); err == nil {
		t.Fatal("the replica's table took a row its check refuses")
	}
	// MariaDB's JSON columns: LONGTEXT with a json_valid check each.
	var jsonChecks int
	if err := mdb.QueryRow("SELECT COUNT(*) FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = 'ts' AND TABLE_NAME = 'js' AND CHECK_CLAUSE LIKE 'json_valid%'").Scan(&jsonChecks); err != nil || jsonChecks != 2 {
		t.Fatalf("JSON columns on the replica: %d json_valid checks (%v), want 2", jsonChecks, err)
	}
	var docs string
	if err := mdb.QueryRow("SELECT GROUP_CONCAT(id, ' ', doc, ' ', v, ' ', doc2, ' ', JSON_VALID(doc) ORDER BY id SEPARATOR ' | ') FROM ts.js").Scan(&docs); err != nil ||
		docs != `1 {"a": [1, 2.5, "x\"q", null, true], "z": "new", "big": 1e300} vv [] 1 | 3 "s" x null 1` {
		t.Fatalf("JSON documents on the replica: %s (%v); %s", docs, err, slaveErrors(mdb))
	}
	var trgRows, trgLog string
	var trgs int
	if err := mdb.QueryRow("SELECT (SELECT GROUP_CONCAT(id, ':', v ORDER BY id) FROM ts.trg), (SELECT GROUP_CONCAT(what ORDER BY seq) FROM ts.trg_log), (SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'ts')").Scan(&trgRows, &trgLog, &trgs); err != nil ||
		trgRows != "1:3,2:5" || trgLog != "2->3,4->5" || trgs != 2 {
		t.Fatalf("triggers on the replica: rows %s, log %s, %d triggers (%v); want 1:3,2:5, 2->3,4->5, 2; %s", trgRows, trgLog, trgs, err, slaveErrors(mdb))
	}
	var pcRows string
	var procs int
	if err := mdb.QueryRow("SELECT (SELECT GROUP_CONCAT(id, ':', v ORDER BY id) FROM ts.pc), (SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = 'ts' AND ROUTINE_TYPE = 'PROCEDURE')").Scan(&pcRows, &procs); err != nil ||
		pcRows != "0:1,1:1,2:5,3:9,4:17" || procs != 1 {
		t.Fatalf("a procedure on the replica: rows %s, %d procedures (%v); want 0:1,1:1,2:5,3:9,4:17, 1; %s", pcRows, procs, err, slaveErrors(mdb))
	}
	// ALTER PROCEDURE reached it, and says the same on both.
	chars := func(db *sql.DB) string {
		var c, sec, access string
		if err := db.QueryRow("SELECT ROUTINE_COMMENT, SECURITY_TYPE, SQL_DATA_ACCESS FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = 'ts' AND ROUTINE_NAME = 'pc_fill'").Scan(&c, &sec, &access); err != nil {
			t.Fatal(err)
		}
		return c + "|" + sec + "|" + access
	}
	if p, r := chars(s.db("")), chars(mdb); p != "fills pc|INVOKER|MODIFIES SQL DATA" || r != p {
		t.Fatalf("ALTER PROCEDURE: primary %q, replica %q", p, r)
	}
	times := func(db *sql.DB) string {
		rows, err := db.Query("SELECT id, a, b, c FROM ts.tm ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var id int
			var a, b, c sql.NullString
			if err := rows.Scan(&id, &a, &b, &c); err != nil {
				t.Fatal(err)
			}
			out = append(out, strings.ReplaceAll(fmt.Sprintf("%d %v %v %v", id, a, b, c), ".000000", ""))
		}
		return strings.Join(out, " | ")
	}
	var rcreate string
	ptm, rtm := times(s.db("")), times(mdb)
	mdb.QueryRow("SHOW CREATE TABLE ts.tm").Scan(new(string), &rcreate)
	if want := "1 {10:01:00 true} {10:00:59.123456 true} {10:00:59.457 true} | 2 {-01:02:03 true} { false} {-01:02:03.250 true}"; ptm != want || rtm != want {
		t.Fatalf("TIME columns: primary %q, replica %q, want %q\n%s", ptm, rtm, want, rcreate)
	}
	if !strings.Contains(rcreate, "`a` time DEFAULT NULL") || !strings.Contains(rcreate, "`b` time(6) DEFAULT NULL") || !strings.Contains(rcreate, "`c` time(3) DEFAULT NULL") {
		t.Fatalf("the replica's TIME columns are not as declared:\n%s", rcreate)
	}
	if p, r := keylessRows(t, s.db("")), keylessRows(t, mdb); p != r {
		t.Fatalf("keyless table differs: primary %d rows, replica %d", strings.Count(p, ";")+1, strings.Count(r, ";")+1)
	}

	// The stream the replica read groups independent transactions under
	// one commit_id, which is what conservative mode applies in parallel.
	cfg := replication.BinlogSyncerConfig{ServerID: 99, Flavor: mysql.MariaDBFlavor, Host: "127.0.0.1", Port: uint16(mport), User: "root"}
	b := replication.NewBinlogSyncer(cfg)
	defer b.Close()
	set, _ := mysql.ParseMariadbGTIDSet("")
	st, err := b.StartSyncGTID(set)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	groups, trx := map[uint64]int{}, 0
	for {
		e, err := st.GetEvent(ctx)
		if err != nil {
			break
		}
		if g, ok := e.Event.(*replication.MariadbGTIDEvent); ok && g.IsGroupCommit() {
			groups[g.CommitID]++
			trx++
		}
	}
	shared := 0
	for _, n := range groups {
		if n > 1 {
			shared += n
		}
	}
	t.Logf("%d transactions in %d commit groups; %d share their group with another", trx, len(groups), shared)
	if trx == 0 || shared*5 < trx {
		t.Fatalf("too little parallelism in the MariaDB stream: %d of %d transactions share a commit_id", shared, trx)
	}
}

// slaveErrors returns the replica's Last_IO_Error and Last_SQL_Error.
func slaveErrors(db *sql.DB) string {
	rows, err := db.Query("SHOW SLAVE STATUS")
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out []string
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err.Error()
		}
		for i, c := range cols {
			if c == "Last_IO_Error" || c == "Last_SQL_Error" {
				out = append(out, fmt.Sprintf("%s=%q", c, vals[i]))
			}
		}
	}
	return strings.Join(out, " ")
}
