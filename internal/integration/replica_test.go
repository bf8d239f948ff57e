package integration

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstepdb/lockstep/internal/binlog"
)

// sysbench runs one sysbench command against a server on port.
func sysbench(t *testing.T, port int, args ...string) string {
	t.Helper()
	sb := needTool(t, "sysbench")
	all := append([]string{"--db-driver=mysql", "--mysql-host=127.0.0.1", fmt.Sprintf("--mysql-port=%d", port),
		"--mysql-user=root", "--mysql-db=sbtest"}, args...)
	out, err := tool(t, 5*time.Minute, sb, all...).CombinedOutput()
	if err != nil || strings.Contains(string(out), "FATAL") {
		t.Fatalf("sysbench %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// replicaStatus returns SHOW REPLICA STATUS as a map (nil if empty).
func replicaStatus(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	rows := queryMaps(t, db, "SHOW REPLICA STATUS")
	if len(rows) == 0 {
		return nil
	}
	return rows[0]
}

func gtidExecuted(t *testing.T, db *sql.DB) string {
	t.Helper()
	var g string
	if err := db.QueryRow("SELECT @@global.gtid_executed").Scan(&g); err != nil {
		t.Fatal(err)
	}
	return g
}

// waitCaughtUp waits until the replica has executed every GTID of the
// source, failing with the replica's status if it does not in time.
func waitCaughtUp(t *testing.T, src, rep *sql.DB, timeout time.Duration) {
	t.Helper()
	want, err := binlog.ParseGTIDSet(gtidExecuted(t, src))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(timeout)
	for {
		got, err := binlog.ParseGTIDSet(gtidExecuted(t, rep))
		if err != nil {
			t.Fatal(err)
		}
		if want.Subtract(got).IsEmpty() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica did not catch up in %v: source %q, replica %q\nstatus: %v", timeout, want, got, replicaStatus(t, rep))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sbtestColumnChanges change columns of the sysbench tables and leave
// them usable by sysbench: replicas must end with the same tables.
var sbtestColumnChanges = []string{
	"ALTER TABLE sbtest.sbtest1 ADD COLUMN note VARCHAR(20) NOT NULL DEFAULT 'n' AFTER k",
	"ALTER TABLE sbtest.sbtest1 MODIFY COLUMN k BIGINT NOT NULL DEFAULT 0",
	"ALTER TABLE sbtest.sbtest2 ADD COLUMN extra INT FIRST",
	"ALTER TABLE sbtest.sbtest2 RENAME COLUMN extra TO extra2",
	"ALTER TABLE sbtest.sbtest2 DROP COLUMN extra2",
}

func sameTables(t *testing.T, src, rep *sql.DB, tables ...string) {
	t.Helper()
	for _, tab := range tables {
		h1, n1 := tableHash(t, src, tab)
		h2, n2 := tableHash(t, rep, tab)
		if h1 != h2 || n1 != n2 {
			t.Fatalf("%s differs: source %d rows %s, replica %d rows %s", tab, n1, h1, n2, h2)
		}
	}
}

// TestLockstepReplica: a Lockstep replica started with --source-* options
// follows a Lockstep primary under concurrent sysbench load, in each
// parallel mode, and ends with identical tables and GTIDs.
func TestLockstepReplica(t *testing.T) {
	needTool(t, "sysbench")
	p := startServer(t, t.TempDir())
	pdb := p.db("")
	mustExec(t, pdb, "CREATE DATABASE sbtest")
	sysbench(t, p.port, "--tables=2", "--table-size=1000", "oltp_write_only", "prepare")

	r := startServer(t, t.TempDir(), "--server-id=2", "--source-host=127.0.0.1", fmt.Sprintf("--source-port=%d", p.port),
		"--source-user=root", "--replica-parallel-workers=4")
	rdb := r.db("")
	waitCaughtUp(t, pdb, rdb, 30*time.Second)
	st := replicaStatus(t, rdb)
	if st["Replica_IO_Running"] != "Yes" || st["Replica_SQL_Running"] != "Yes" || st["Seconds_Behind_Source"] != "0" {
		t.Fatalf("status after catching up: %v", st)
	}
	for _, mode := range []string{"LOGICAL_CLOCK", "WRITESET", "DATABASE"} {
		mustExec(t, rdb, "STOP REPLICA")
		mustExec(t, rdb, "SET GLOBAL replica_parallel_type = '"+mode+"'")
		mustExec(t, rdb, "START REPLICA")
		sysbench(t, p.port, "--tables=2", "--table-size=1000", "--threads=8", "--time=3", "oltp_write_only", "run")
		waitCaughtUp(t, pdb, rdb, 60*time.Second)
		sameTables(t, p.db("sbtest"), r.db("sbtest"), "sbtest1", "sbtest2")
		var applied string
		rdb.QueryRow("SHOW GLOBAL STATUS LIKE 'Replica_transactions_applied'").Scan(new(string), &applied)
		t.Logf("%s: in sync, %s transactions applied so far", mode, applied)
	}
	// Column changes replicate as statements; rows written after them
	// apply under the new definitions.
	for _, q := range sbtestColumnChanges {
		mustExec(t, pdb, q)
	}
	sysbench(t, p.port, "--tables=2", "--table-size=1000", "--threads=8", "--time=2", "oltp_write_only", "run")
	waitCaughtUp(t, pdb, rdb, 60*time.Second)
	sameTables(t, p.db("sbtest"), r.db("sbtest"), "sbtest1", "sbtest2")
	for _, tbl := range []string{"sbtest1", "sbtest2"} {
		var pc, rc string
		p.db("sbtest").QueryRow("SHOW CREATE TABLE "+tbl).Scan(new(string), &pc)
		r.db("sbtest").QueryRow("SHOW CREATE TABLE "+tbl).Scan(new(string), &rc)
		if pc != rc || (tbl == "sbtest1" && !strings.Contains(pc, "`note` varchar(20)")) {
			t.Fatalf("%s after column changes:\nprimary %s\nreplica %s", tbl, pc, rc)
		}
	}
	// JSON documents replicate as the binary JSON in the rows.
	mustExec(t, pdb, "CREATE TABLE sbtest.docs (id INT PRIMARY KEY, doc JSON)")
	mustExec(t, pdb, `INSERT INTO sbtest.docs VALUES (1, '{"a": [1, "x", null], "b": {"c": 2.5}}'), (2, NULL), (3, '"s"')`)
	mustExec(t, pdb, `UPDATE sbtest.docs SET doc = JSON_SET(doc, '$.d', 'new') WHERE id = 1`)
	waitCaughtUp(t, pdb, rdb, 60*time.Second)
	docs := func(db *sql.DB) string {
		return tableText(t, db, "SELECT id, doc FROM sbtest.docs ORDER BY id")
	}
	if pd, rd := docs(pdb), docs(rdb); pd != rd || !strings.Contains(rd, `"d": "new"`) {
		t.Fatalf("JSON documents: primary %s, replica %s", pd, rd)
	}
	// A stored procedure reaches the replica as the statement that made
	// it; a CALL's changes as its statements' rows.
	mustExec(t, pdb, "CREATE PROCEDURE sbtest.fill(IN n INT) BEGIN DECLARE i INT DEFAULT 0; WHILE i < n DO INSERT INTO sbtest.docs VALUES (10 + i, JSON_ARRAY(i)); SET i = i + 1; END WHILE; DELETE FROM sbtest.docs WHERE id = 11; END")
	mustExec(t, pdb, "CALL sbtest.fill(3)")
	mustExec(t, pdb, "ALTER PROCEDURE sbtest.fill COMMENT 'ten and up' MODIFIES SQL DATA")
	waitCaughtUp(t, pdb, rdb, 60*time.Second)
	if pd, rd := docs(pdb), docs(rdb); pd != rd || !strings.Contains(rd, "12|[2]|") || strings.Contains(rd, "11|[1]|") {
		t.Fatalf("after a CALL: primary %s, replica %s", pd, rd)
	}
	var pcreate, rcreate string
	pdb.QueryRow("SHOW CREATE PROCEDURE sbtest.fill").Scan(new(string), new(string), &pcreate, new(string), new(string), new(string))
	if err := rdb.QueryRow("SHOW CREATE PROCEDURE sbtest.fill").Scan(new(string), new(string), &rcreate, new(string), new(string), new(string)); err != nil || rcreate != pcreate ||
		!strings.Contains(pcreate, "MODIFIES SQL DATA\n    COMMENT 'ten and up'") {
		t.Fatalf("the procedure on the replica: %q (%v), primary's %q", rcreate, err, pcreate)
	}
	// The replica's binlog carries the source's GTIDs.
	if g := gtidExecuted(t, rdb); g != gtidExecuted(t, pdb) {
		t.Fatalf("gtid_executed differs: %s", g)
	}
	// The replica's metrics parse and show what it did: it applied every
	// transaction of the source (it started empty, and nothing was skipped).
	executed, err := binlog.ParseGTIDSet(gtidExecuted(t, pdb))
	if err != nil {
		t.Fatal(err)
	}
	var total uint64
	for _, u := range executed.UUIDs() {
		total += executed.MaxGNO(u)
	}
	fams := scrape(t, r)
	applied := value(fams, "lockstep_applier_transactions_total", "applied")
	t.Logf("the replica applied %v transactions (apply rates: bench/replica.sh)", applied)
	if applied != float64(total) || value(fams, "lockstep_replication_thread_running", "sql") != 1 ||
		value(fams, "lockstep_applier_parallelism", "") <= 0 || value(fams, "lockstep_applier_worker_transactions_total", "1") <= 0 {
		t.Fatalf("replica metrics: applied %v of %d, sql running %v, parallelism samples %v", applied, total,
			value(fams, "lockstep_replication_thread_running", "sql"), value(fams, "lockstep_applier_parallelism", ""))
	}
	var res int
	if err := rdb.QueryRow("SELECT WAIT_FOR_EXECUTED_GTID_SET(?, 5)", gtidExecuted(t, pdb)).Scan(&res); err != nil || res != 0 {
		t.Fatalf("WAIT_FOR_EXECUTED_GTID_SET of executed GTIDs: %d %v", res, err)
	}
	var uuid string
	pdb.QueryRow("SELECT @@server_uuid").Scan(&uuid)
	// performance_schema shows each worker's last applied transaction.
	var workers, maxID int
	if err := rdb.QueryRow(`SELECT COUNT(*), MAX(WORKER_ID) FROM performance_schema.replication_applier_status_by_worker
		WHERE SERVICE_STATE = 'ON' AND LAST_APPLIED_TRANSACTION LIKE ? AND LAST_ERROR_NUMBER = 0
		AND LAST_APPLIED_TRANSACTION_END_APPLY_TIMESTAMP >= LAST_APPLIED_TRANSACTION_START_APPLY_TIMESTAMP`, uuid+":%").Scan(&workers, &maxID); err != nil || workers < 2 || maxID > 4 {
		t.Fatalf("replication_applier_status_by_worker: %d workers with applied transactions, max id %d, %v", workers, maxID, err)
	}
	if err := rdb.QueryRow("SELECT WAIT_FOR_EXECUTED_GTID_SET(?, 0.2)", uuid+":1000000").Scan(&res); err != nil || res != 1 {
		t.Fatalf("WAIT_FOR_EXECUTED_GTID_SET of a future GTID: %d %v", res, err)
	}
}

// TestReplicaKilledUnderLoad kills the replica with SIGKILL at random
// moments while the primary runs sysbench, restarts it each time, and
// checks that it ends identical to the primary: no transaction lost (a
// GTID recorded without its rows) and none applied twice (a second
// Delete_rows or Write_rows would stop the SQL thread with 1032 or 1062).
func TestReplicaKilledUnderLoad(t *testing.T) {
	sb := needTool(t, "sysbench")
	p := startServer(t, t.TempDir())
	pdb := p.db("")
	mustExec(t, pdb, "CREATE DATABASE sbtest")
	sysbench(t, p.port, "--tables=2", "--table-size=1000", "oltp_write_only", "prepare")
	r := startServer(t, t.TempDir(), "--server-id=2", "--source-host=127.0.0.1", fmt.Sprintf("--source-port=%d", p.port),
		"--source-user=root", "--replica-parallel-workers=4", "--replica-parallel-type=WRITESET")
	load := tool(t, 2*time.Minute, sb, "--db-driver=mysql", "--mysql-host=127.0.0.1", fmt.Sprintf("--mysql-port=%d", p.port),
		"--mysql-user=root", "--mysql-db=sbtest", "--tables=2", "--table-size=1000", "--threads=8", "--time=16",
		"oltp_write_only", "run")
	out := &strings.Builder{}
	load.Stdout, load.Stderr = out, out
	if err := load.Start(); err != nil {
		t.Fatal(err)
	}
	rounds := 0
	start := time.Now()
	for time.Since(start) < 13*time.Second {
		time.Sleep(time.Duration(300+rand.IntN(1500)) * time.Millisecond)
		r.kill()
		r.start()
		rounds++
	}
	if err := load.Wait(); err != nil {
		t.Fatalf("sysbench: %v\n%s", err, out)
	}
	rdb := r.db("")
	waitCaughtUp(t, pdb, rdb, 60*time.Second)
	sameTables(t, p.db("sbtest"), r.db("sbtest"), "sbtest1", "sbtest2")
	st := replicaStatus(t, rdb)
	if st["Last_SQL_Errno"] != "0" {
		t.Fatalf("SQL thread error: %v", st)
	}
	t.Logf("%d kills; replica identical at %s", rounds, gtidExecuted(t, rdb))
}

func waitSQLStopped(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := replicaStatus(t, db)
		if st["Replica_SQL_Running"] == "No" {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("SQL thread did not stop: %v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReplicaApplyErrors: a row missing on the replica stops the SQL
// thread with 1032 and a message naming the GTID, table and key; skipping
// that GTID with an empty transaction (SET gtid_next) lets it go on; a
// duplicate key stops it with 1062, and replica_skip_errors skips it.
func TestReplicaApplyErrors(t *testing.T) {
	p := startServer(t, t.TempDir())
	pdb := p.db("")
	mustExec(t, pdb, "CREATE DATABASE app")
	mustExec(t, pdb, "CREATE TABLE app.t (id INT PRIMARY KEY, v INT)")
	mustExec(t, pdb, "INSERT INTO app.t VALUES (1, 1), (2, 2)")
	r := startServer(t, t.TempDir(), "--server-id=2", "--replica-parallel-workers=2")
	rdb := r.db("")
	rdb.SetMaxOpenConns(1) // gtid_next is per connection
	mustExec(t, rdb, fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=%d, SOURCE_USER='root', SOURCE_AUTO_POSITION=1, SOURCE_CONNECT_RETRY=1", p.port))
	if st := replicaStatus(t, rdb); st["Replica_IO_Running"] != "No" || st["Source_Port"] != fmt.Sprint(p.port) {
		t.Fatalf("status before START REPLICA: %v", st)
	}
	mustExec(t, rdb, "START REPLICA")
	waitCaughtUp(t, pdb, rdb, 30*time.Second)

	mustExec(t, rdb, "DELETE FROM app.t WHERE id = 1")
	mustExec(t, pdb, "UPDATE app.t SET v = 10 WHERE id = 1")
	var uuid string
	pdb.QueryRow("SELECT @@server_uuid").Scan(&uuid)
	gtid := strings.TrimPrefix(gtidExecuted(t, pdb), uuid+":1-")
	st := waitSQLStopped(t, rdb)
	want := []string{uuid + ":" + gtid, "Update_rows", "app.t", "id=1", "1032"}
	for _, w := range want {
		if !strings.Contains(st["Last_SQL_Error"], w) {
			t.Fatalf("Last_SQL_Error %q lacks %q", st["Last_SQL_Error"], w)
		}
	}
	t.Logf("Last_SQL_Error: %s", st["Last_SQL_Error"])
	if st["Last_SQL_Errno"] != "1032" || st["Replica_IO_Running"] != "Yes" {
		t.Fatalf("status: %v", st)
	}
	// The worker that hit it shows the error in performance_schema.
	var failed int
	if err := rdb.QueryRow(`SELECT COUNT(*) FROM performance_schema.replication_applier_status_by_worker
		WHERE SERVICE_STATE = 'OFF' AND LAST_ERROR_NUMBER = 1032 AND LAST_ERROR_MESSAGE LIKE '%Update_rows%'`).Scan(&failed); err != nil || failed != 1 {
		t.Fatalf("replication_applier_status_by_worker: %d workers show the error (%v)", failed, err)
	}
	mustExec(t, rdb, "STOP REPLICA")
	mustExec(t, rdb, fmt.Sprintf("SET gtid_next = '%s:%s'", uuid, gtid))
	mustExec(t, rdb, "BEGIN")
	mustExec(t, rdb, "COMMIT")
	mustExec(t, rdb, "SET gtid_next = 'AUTOMATIC'")
	mustExec(t, rdb, "START REPLICA")
	mustExec(t, pdb, "INSERT INTO app.t VALUES (3, 3)")
	waitCaughtUp(t, pdb, rdb, 30*time.Second)
	if st := replicaStatus(t, rdb); st["Last_SQL_Errno"] != "0" || st["Replica_SQL_Running"] != "Yes" {
		t.Fatalf("after skipping: %v", st)
	}
	if err := rdb.QueryRow(`SELECT COUNT(*) FROM performance_schema.replication_applier_status_by_worker
		WHERE SERVICE_STATE = 'ON' AND LAST_ERROR_NUMBER = 0`).Scan(&failed); err != nil || failed == 0 {
		t.Fatalf("replication_applier_status_by_worker after START REPLICA: %d clean workers (%v)", failed, err)
	}
	if err := rdb.QueryRow(`SELECT COUNT(*) FROM performance_schema.replication_applier_status_by_worker
		WHERE LAST_ERROR_NUMBER <> 0`).Scan(&failed); err != nil || failed != 0 {
		t.Fatalf("replication_applier_status_by_worker after START REPLICA: %d workers still show an error (%v)", failed, err)
	}

	mustExec(t, rdb, "INSERT INTO app.t VALUES (4, 4)")
	mustExec(t, pdb, "INSERT INTO app.t VALUES (4, 40)")
	st = waitSQLStopped(t, rdb)
	if st["Last_SQL_Errno"] != "1062" || !strings.Contains(st["Last_SQL_Error"], "Duplicate entry '4' for key 't.PRIMARY'") {
		t.Fatalf("duplicate: %v", st)
	}
	mustExec(t, rdb, "SET GLOBAL replica_skip_errors = '1062'")
	mustExec(t, rdb, "START REPLICA SQL_THREAD")
	waitCaughtUp(t, pdb, rdb, 30*time.Second)
	var got string
	if err := rdb.QueryRow("SELECT GROUP_CONCAT(CONCAT(id, ':', v) ORDER BY id) FROM app.t").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "2:2,3:3,4:4" {
		t.Fatalf("replica rows %q", got)
	}
	mustExec(t, rdb, "STOP REPLICA")
	mustExec(t, rdb, "RESET REPLICA ALL")
	if st := replicaStatus(t, rdb); st != nil {
		t.Fatalf("status after RESET REPLICA ALL: %v", st)
	}
}

// TestReplicaOfMariaDB: a Lockstep replica follows a real MariaDB 10.11
// primary by MariaDB GTID through sysbench's DDL and an oltp_write_only
// run, in parallel (LOGICAL_CLOCK from MariaDB's commit ids), and ends with
// identical tables; a restart resumes from the GTID position.
func TestReplicaOfMariaDB(t *testing.T) {
	sb := needTool(t, "sysbench")
	m := startMariaDB(t, 1, "--log-bin=mysql-bin", "--binlog-format=ROW")
	mdb := m.db()
	mustExec(t, mdb, "SET sql_log_bin = 0")
	mustExec(t, mdb, "CREATE USER repl@'%' IDENTIFIED BY 'replpw'")
	mustExec(t, mdb, "GRANT ALL ON *.* TO repl@'%'")
	mustExec(t, mdb, "SET sql_log_bin = 1")
	mustExec(t, mdb, "CREATE DATABASE sbtest")
	bench := func(args ...string) {
		t.Helper()
		all := append([]string{"--db-driver=mysql", "--mysql-socket=" + m.sock(), "--mysql-user=root", "--mysql-db=sbtest",
			"--tables=2", "--table-size=1000"}, args...)
		if out, err := tool(t, 5*time.Minute, sb, all...).CombinedOutput(); err != nil {
			t.Fatalf("sysbench %v: %v\n%s", args, err, out)
		}
	}
	bench("oltp_write_only", "prepare")
	r := startServer(t, t.TempDir(), "--server-id=2", "--source-host=127.0.0.1", fmt.Sprintf("--source-port=%d", m.port),
		"--source-user=repl", "--source-password=replpw", "--replica-parallel-workers=4")
	bench("--threads=4", "--time=4", "oltp_write_only", "run")
	waitSame := func() {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		msb, rsb := m.db(), r.db("")
		for {
			same := true
			for _, tab := range []string{"sbtest.sbtest1", "sbtest.sbtest2"} {
				var n int
				if rsb.QueryRow("SELECT COUNT(*) FROM "+tab).Scan(&n) != nil {
					same = false
					break
				}
				h1, n1 := tableHash(t, msb, tab)
				h2, n2 := tableHash(t, rsb, tab)
				same = same && h1 == h2 && n1 == n2
			}
			if same {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica of MariaDB did not converge: %v", replicaStatus(t, rsb))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitSame()
	var pos string
	mdb.QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos)
	var res int
	if err := r.db("").QueryRow("SELECT MASTER_GTID_WAIT(?, 5)", pos).Scan(&res); err != nil || res != 0 {
		t.Fatalf("MASTER_GTID_WAIT(%s): %d %v", pos, res, err)
	}
	st := replicaStatus(t, r.db(""))
	t.Logf("MariaDB at %s; replica executed %s", pos, strings.ReplaceAll(st["Executed_Gtid_Set"], "\n", ""))
	r.stop()
	r.start()
	bench("--threads=4", "--time=2", "oltp_write_only", "run")
	waitSame()

	// MariaDB does not log the rows its foreign keys' actions change (its
	// replicas make them): a Lockstep replica, which applies rows, stops
	// with a clear error at a change of a parent whose children such an
	// action would change, rather than leave the children behind.
	mustExec(t, mdb, "CREATE TABLE sbtest.par (id INT PRIMARY KEY)")
	mustExec(t, mdb, "CREATE TABLE sbtest.chi (id INT PRIMARY KEY, p INT)")
	mustExec(t, mdb, "INSERT INTO sbtest.par VALUES (1), (2)")
	// BIT values arrive as MariaDB logs them.
	mustExec(t, mdb, "CREATE TABLE sbtest.bits (id INT PRIMARY KEY, b BIT(12))")
	mustExec(t, mdb, "INSERT INTO sbtest.bits VALUES (1, b'101010101010'), (2, NULL)")
	waitSame()
	waitFor(t, "the tables to reach the replica", 30*time.Second, func() bool {
		var n int
		return r.db("").QueryRow("SELECT COUNT(*) FROM sbtest.par").Scan(&n) == nil && n == 2 &&
			r.db("").QueryRow("SELECT COUNT(*) FROM sbtest.bits").Scan(&n) == nil && n == 2
	})
	var bits int
	if err := r.db("").QueryRow("SELECT b + 0 FROM sbtest.bits WHERE id = 1").Scan(&bits); err != nil || bits != 0xaaa {
		t.Fatalf("a BIT(12) from MariaDB: %d (%v), want %d", bits, err, 0xaaa)
	}
	mustExec(t, r.db(""), "ALTER TABLE sbtest.chi ADD CONSTRAINT chi_par FOREIGN KEY (p) REFERENCES sbtest.par (id) ON DELETE CASCADE")
	mustExec(t, mdb, "INSERT INTO sbtest.chi VALUES (10, 2)")
	mustExec(t, mdb, "DELETE FROM sbtest.par WHERE id = 2")
	// Stopped, not only failed: the transactions before the refused one,
	// applied in parallel, are committed by then.
	waitFor(t, "the replica to refuse the parent's delete", 30*time.Second, func() bool {
		st := replicaStatus(t, r.db(""))
		return st["Last_SQL_Errno"] == "1235" && st["Replica_SQL_Running"] == "No"
	})
	var children int
	if err := r.db("").QueryRow("SELECT COUNT(*) FROM sbtest.chi").Scan(&children); err != nil || children != 1 {
		t.Fatalf("child rows on the replica: %d, %v; want 1 (nothing applied)", children, err)
	}
}

// TestReplicaSemiSyncReadOnlyReconnect: a semi-sync Lockstep source waits
// for a Lockstep replica's ACKs; the replica started with
// --super-read-only refuses clients' writes but applies the source's; when
// the source restarts, the replica reconnects and resumes by GTID.
func TestReplicaSemiSyncReadOnlyReconnect(t *testing.T) {
	p := startServer(t, t.TempDir(), "--rpl-semi-sync-source-enabled", "--rpl-semi-sync-source-timeout=600000")
	pdb := p.db("")
	r := startServer(t, t.TempDir(), "--server-id=2", "--source-host=127.0.0.1", fmt.Sprintf("--source-port=%d", p.port),
		"--source-user=root", "--source-connect-retry=1", "--rpl-semi-sync-replica-enabled", "--super-read-only")
	rdb := r.db("")
	// Commits wait for an ACK from here on (wait_no_replica is ON).
	waitStatus(t, pdb, "Rpl_semi_sync_source_clients", "1", "the replica never registered as semi-sync")
	mustExec(t, pdb, "CREATE DATABASE app")
	mustExec(t, pdb, "CREATE TABLE app.t (id INT PRIMARY KEY, v INT)")
	for i := range 20 {
		mustExec(t, pdb, "INSERT INTO app.t VALUES (?, ?)", i, i)
	}
	if yes := atoi(t, statusOf(t, pdb, "Rpl_semi_sync_source_yes_tx")); yes < 20 {
		t.Fatalf("Rpl_semi_sync_source_yes_tx = %d after 20 commits", yes)
	}
	waitCaughtUp(t, pdb, rdb, 20*time.Second)

	_, err := rdb.Exec("INSERT INTO app.t VALUES (100, 100)")
	if err == nil || !strings.Contains(err.Error(), "1290") || !strings.Contains(err.Error(), "super-read-only") {
		t.Fatalf("write under super_read_only: %v", err)
	}
	mustExec(t, rdb, "SET GLOBAL super_read_only = OFF")
	var ro, sro int
	rdb.QueryRow("SELECT @@global.read_only, @@global.super_read_only").Scan(&ro, &sro)
	if ro != 1 || sro != 0 {
		t.Fatalf("read_only %d super_read_only %d after turning super_read_only off", ro, sro)
	}
	mustExec(t, rdb, "CREATE USER app@'%' IDENTIFIED BY 'pw'")
	mustExec(t, rdb, "GRANT INSERT, SELECT ON *.* TO app@'%'")
	app, err := sql.Open("mysql", fmt.Sprintf("app:pw@tcp(127.0.0.1:%d)/app", r.port))
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if _, err := app.Exec("INSERT INTO t VALUES (101, 101)"); err == nil || !strings.Contains(err.Error(), "--read-only") {
		t.Fatalf("write without SUPER under read_only: %v", err)
	}

	p.stop()
	p.start() // same port
	waitStatus(t, p.db(""), "Rpl_semi_sync_source_clients", "1", "the replica did not reconnect")
	mustExec(t, p.db(""), "INSERT INTO app.t VALUES (20, 20)")
	waitCaughtUp(t, p.db(""), rdb, 20*time.Second)
	var n int
	rdb.QueryRow("SELECT COUNT(*) FROM app.t").Scan(&n)
	if n != 21 {
		t.Fatalf("replica has %d rows, want 21", n)
	}
}

// TestReplicaFilePosition: with SOURCE_AUTO_POSITION=0 the replica starts
// at the given file and position, and after SIGKILL resumes from its saved
// position; transactions fetched again are skipped by GTID, not applied
// twice.
func TestReplicaFilePosition(t *testing.T) {
	p := startServer(t, t.TempDir())
	pdb := p.db("")
	mustExec(t, pdb, "CREATE DATABASE app")
	mustExec(t, pdb, "CREATE TABLE app.t (id INT PRIMARY KEY)")
	var file string
	var pos int64
	var rest1, rest2, rest3 any
	if err := pdb.QueryRow("SHOW BINARY LOG STATUS").Scan(&file, &pos, &rest1, &rest2, &rest3); err != nil {
		t.Fatal(err)
	}
	mustExec(t, pdb, "INSERT INTO app.t VALUES (1)")
	r := startServer(t, t.TempDir(), "--server-id=2")
	rdb := r.db("")
	// The replica needs the table: create it there (its own GTIDs), then
	// replicate from the position after the source's DDL.
	mustExec(t, rdb, "CREATE DATABASE app")
	mustExec(t, rdb, "CREATE TABLE app.t (id INT PRIMARY KEY)")
	mustExec(t, rdb, fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='root', MASTER_LOG_FILE='%s', MASTER_LOG_POS=%d, MASTER_CONNECT_RETRY=1", p.port, file, pos))
	mustExec(t, rdb, "START SLAVE")
	for i := 2; i <= 50; i++ {
		mustExec(t, pdb, "INSERT INTO app.t VALUES (?)", i)
	}
	waitCount(t, rdb, "SELECT COUNT(*) FROM app.t", 50)
	time.Sleep(1200 * time.Millisecond) // the position file is saved once a second
	r.kill()
	for i := 51; i <= 60; i++ {
		mustExec(t, pdb, "INSERT INTO app.t VALUES (?)", i)
	}
	r.start()
	rdb = r.db("")
	waitCount(t, rdb, "SELECT COUNT(*) FROM app.t", 60)
	if st := replicaStatus(t, rdb); st["Last_SQL_Errno"] != "0" || st["Auto_Position"] != "0" {
		t.Fatalf("status %v", st)
	}
}

func waitCount(t *testing.T, db *sql.DB, q string, want int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var n int
		err := db.QueryRow(q).Scan(&n)
		if err == nil && n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %d (%v), want %d; status %v", q, n, err, want, replicaStatus(t, db))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReplicaOfAReplicaAppliesInOrder: a chain A -> B -> C, each replica
// applying in parallel (LOGICAL_CLOCK, 4 workers). B applies a backlog
// of dependent transactions at once (each inserts a row and updates the
// one the previous inserted), and C applies B's binlog in parallel by
// the dependencies B wrote there: they must say that each transaction
// follows the one before, or C runs an update before the insert of its
// row and stops (1032).
func TestReplicaOfAReplicaAppliesInOrder(t *testing.T) {
	a := startServer(t, t.TempDir(), "--server-id=1")
	b := startServer(t, t.TempDir(), "--server-id=2")
	c := startServer(t, t.TempDir(), "--server-id=3")
	adb, bdb, cdb := a.db(""), b.db(""), c.db("")
	follow := func(db *sql.DB, src *server) {
		mustExec(t, db, fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT=%d, SOURCE_USER='root', SOURCE_AUTO_POSITION=1, SOURCE_CONNECT_RETRY=1", src.port))
		mustExec(t, db, "START REPLICA")
	}
	follow(bdb, a)
	follow(cdb, b)
	mustExec(t, adb, "CREATE DATABASE ch")
	mustExec(t, adb, "CREATE TABLE ch.t (id INT PRIMARY KEY, v INT)")
	mustExec(t, adb, "INSERT INTO ch.t VALUES (0, 0)")
	waitCaughtUp(t, adb, cdb, 20*time.Second)

	// B receives a backlog it does not apply yet.
	mustExec(t, bdb, "STOP REPLICA SQL_THREAD")
	const n = 2000
	for i := 1; i <= n; i++ {
		tx, err := adb.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec("INSERT INTO ch.t VALUES (?, 0)", i); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec("UPDATE ch.t SET v = v + 1 WHERE id = ?", i-1); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "B to receive the backlog", 20*time.Second, func() bool {
		got, err := binlog.ParseGTIDSet(replicaStatus(t, bdb)["Retrieved_Gtid_Set"])
		want, _ := binlog.ParseGTIDSet(gtidExecuted(t, adb))
		return err == nil && want.Subtract(got).IsEmpty()
	})
	mustExec(t, bdb, "START REPLICA SQL_THREAD")
	waitCaughtUp(t, adb, bdb, time.Minute)
	deadline := time.Now().Add(time.Minute)
	for {
		want, _ := binlog.ParseGTIDSet(gtidExecuted(t, adb))
		got, _ := binlog.ParseGTIDSet(gtidExecuted(t, cdb))
		if want.Subtract(got).IsEmpty() {
			break
		}
		if st := replicaStatus(t, cdb); st["Last_SQL_Errno"] != "0" || time.Now().After(deadline) {
			t.Fatalf("C, replicating B's binlog: %s %s", st["Last_SQL_Errno"], st["Last_SQL_Error"])
		}
		time.Sleep(100 * time.Millisecond)
	}
	var sum, rows int
	if err := cdb.QueryRow("SELECT COALESCE(SUM(v), 0), COUNT(*) FROM ch.t").Scan(&sum, &rows); err != nil || sum != n || rows != n+1 {
		t.Fatalf("C has %d rows summing to %d (%v), want %d and %d", rows, sum, err, n+1, n)
	}
}

// TestPrimaryShowsReplicaApplyLag: a Lockstep replica reports to its
// Lockstep source how far behind it applies, every second on the dump
// connection, and the source shows it per replica in its metrics and on
// its dashboard; with the replica's SQL thread stopped the source says
// so, and has no lag to show.
func TestPrimaryShowsReplicaApplyLag(t *testing.T) {
	p := startServer(t, t.TempDir())
	r := startServer(t, t.TempDir(), "--server-id=2", "--source-host=127.0.0.1", fmt.Sprintf("--source-port=%d", p.port),
		"--source-user=root")
	pdb, rdb := p.db(""), r.db("")
	mustExec(t, pdb, "CREATE DATABASE applylag")
	mustExec(t, pdb, "CREATE TABLE applylag.t (id INT PRIMARY KEY)")
	waitCaughtUp(t, pdb, rdb, 30*time.Second)

	// replica2 is the replica as the primary's dashboard shows it.
	replica2 := func() map[string]any {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/dashboard/state.json", p.httpPort))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st struct {
			Topology struct {
				Replicas []map[string]any `json:"replicas"`
			} `json:"topology"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
		for _, rep := range st.Topology.Replicas {
			if rep["server_id"] == float64(2) {
				return rep
			}
		}
		return nil
	}
	// within waits, up to 10 s (reports come every second), until ok.
	within := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("after 10 s: %s; the primary shows %v", what, replica2())
			}
		}
	}
	within("the replica's apply lag is shown", func() bool {
		rep := replica2()
		return rep != nil && rep["applying"] == "yes" && rep["apply_lag_seconds"] == float64(0) &&
			value(scrape(t, p), "lockstep_replica_apply_lag_seconds", "2") == 0
	})

	mustExec(t, rdb, "STOP REPLICA SQL_THREAD")
	for i := range 20 {
		mustExec(t, pdb, "INSERT INTO applylag.t VALUES (?)", i)
	}
	within("the stopped SQL thread is shown", func() bool {
		rep := replica2()
		m := scrape(t, p)
		return rep != nil && rep["applying"] == "no" && value(m, "lockstep_replica_apply_lag_seconds", "2") == -1 &&
			value(m, "lockstep_replica_applied_transactions", "2") >= 0
	})
	mustExec(t, rdb, "START REPLICA SQL_THREAD")
	waitCaughtUp(t, pdb, rdb, 30*time.Second)
	within("the replica applies again, caught up", func() bool {
		rep := replica2()
		return rep != nil && rep["applying"] == "yes" && rep["apply_lag_seconds"] == float64(0)
	})
}

// TestReplicationStatusTables: performance_schema's
// replication_connection_status and replication_applier_status on a
// replica show its threads' state, the source's heartbeats, the GTIDs
// received and the transaction queued last, which is the source's last.
func TestReplicationStatusTables(t *testing.T) {
	p := startServer(t, t.TempDir())
	r := startServer(t, t.TempDir(), "--server-id=2", "--source-host=127.0.0.1", fmt.Sprintf("--source-port=%d", p.port),
		"--source-user=root")
	pdb, rdb := p.db(""), r.db("")
	for _, q := range []string{"STOP REPLICA", "CHANGE REPLICATION SOURCE TO SOURCE_HEARTBEAT_PERIOD = 0.1", "START REPLICA"} {
		mustExec(t, rdb, q)
	}
	mustExec(t, pdb, "CREATE DATABASE rs")
	mustExec(t, pdb, "CREATE TABLE rs.t (id INT PRIMARY KEY)")
	mustExec(t, pdb, "INSERT INTO rs.t VALUES (1)")
	waitCaughtUp(t, pdb, rdb, 30*time.Second)
	var last string
	if err := pdb.QueryRow("SELECT @@server_uuid").Scan(&last); err != nil {
		t.Fatal(err)
	}
	last += ":" + strconv.FormatUint(lastGNO(t, gtidExecuted(t, pdb)), 10)
	waitFor(t, "heartbeats", 10*time.Second, func() bool {
		var n int
		return rdb.QueryRow("SELECT COUNT_RECEIVED_HEARTBEATS FROM performance_schema.replication_connection_status").Scan(&n) == nil && n > 0
	})
	var state, source, received, queued, queueing, start, end string
	if err := rdb.QueryRow(`SELECT SERVICE_STATE, SOURCE_UUID, RECEIVED_TRANSACTION_SET, LAST_QUEUED_TRANSACTION,
		LAST_QUEUED_TRANSACTION_START_QUEUE_TIMESTAMP, LAST_QUEUED_TRANSACTION_END_QUEUE_TIMESTAMP, QUEUEING_TRANSACTION
		FROM performance_schema.replication_connection_status`).Scan(&state, &source, &received, &queued, &start, &end, &queueing); err != nil {
		t.Fatal(err)
	}
	if state != "ON" || !strings.HasPrefix(last, source+":") || !strings.Contains(received, source) || queued != last || queueing != "" ||
		strings.HasPrefix(start, "0000") || end < start {
		t.Errorf("replication_connection_status: %s, source %s, received %s, last queued %s (%v to %v), queueing %q; the source's last is %s",
			state, source, received, queued, start, end, queueing, last)
	}
	var applier string
	if err := rdb.QueryRow("SELECT SERVICE_STATE FROM performance_schema.replication_applier_status").Scan(&applier); err != nil || applier != "ON" {
		t.Errorf("replication_applier_status: %q %v", applier, err)
	}
	mustExec(t, rdb, "STOP REPLICA")
	if err := rdb.QueryRow("SELECT s.SERVICE_STATE FROM performance_schema.replication_connection_status c, performance_schema.replication_applier_status s").Scan(&applier); err != nil || applier != "OFF" {
		t.Errorf("after STOP REPLICA: %q %v", applier, err)
	}
}
